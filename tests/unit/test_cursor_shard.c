/*
 * Where a cursor shard starts when the layout changes: never past an event
 * of its own that is not finished (a place some saved row does not vouch
 * for), and as far as the saved rows allow, so that going from one reader to
 * shards sends nothing twice.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cursor/cursor_shard.h"
#include "db/sql.h"

static cursor_saved row(int shards, int shard, uint64_t xid, long long id)
{
    return (cursor_saved){shards, shard, {xid, id}};
}

static void expect_start(const cursor_saved *rows, size_t n, int shards, int shard, uint64_t xid,
                         long long id)
{
    cursor_place at = cursor_shard_start(rows, n, shards, shard);
    if (at.xid != xid || at.id != id)
        fail_msg("shard %d of %d starts at %llu/%lld, want %llu/%lld", shard, shards,
                 (unsigned long long)at.xid, at.id, (unsigned long long)xid, id);
}

static void test_nothing_saved_starts_at_the_beginning(void **state)
{
    (void)state;
    expect_start(NULL, 0, 4, 3, 0, 0);
}

/* From one reader to two shards and on to four: a shard's rows are a part
 * of its coarser shard's (hash & 3 = 1 or 3 within hash & 1 = 1). */
static void test_a_coarser_shard_vouches_for_its_parts(void **state)
{
    (void)state;
    cursor_saved one[] = {row(1, 0, 900, 50)};
    expect_start(one, 1, 2, 1, 900, 50);
    cursor_saved two[] = {row(1, 0, 900, 50), row(2, 0, 950, 7), row(2, 1, 990, 3)};
    expect_start(two, 3, 4, 1, 990, 3); /* 1 & 1 = 1: shard 1 of 2 */
    expect_start(two, 3, 4, 3, 990, 3);
    expect_start(two, 3, 4, 2, 950, 7); /* 2 & 1 = 0: shard 0 of 2 */
}

/* From shards back to fewer: only the lowest of all the parts is safe, and
 * only when every part is saved. */
static void test_finer_shards_vouch_only_all_together(void **state)
{
    (void)state;
    cursor_saved all[] = {row(4, 0, 700, 1), row(4, 1, 720, 9), row(4, 2, 710, 4),
                          row(4, 3, 705, 2)};
    expect_start(all, 4, 1, 0, 700, 1);
    expect_start(all, 4, 2, 1, 705, 2); /* parts 1 and 3 */
    expect_start(all, 4, 2, 0, 700, 1); /* parts 0 and 2 */
    expect_start(all, 3, 2, 1, 0, 0);   /* part 3 missing: part 1 does not speak for it */
    expect_start(all, 3, 1, 0, 0, 0);
}

/* A row left from a layout used long ago is behind: the furthest safe
 * place wins, whichever layout saved it. */
static void test_the_furthest_safe_place_wins(void **state)
{
    (void)state;
    cursor_saved rows[] = {row(2, 1, 100, 5), row(1, 0, 800, 2), row(4, 1, 850, 1),
                           row(4, 3, 860, 8)};
    expect_start(rows, 4, 2, 1, 850, 1);
    expect_start(rows, 4, 2, 0, 800, 2);
    cursor_saved same_xid[] = {row(1, 0, 800, 2), row(2, 1, 800, 9)};
    expect_start(same_xid, 2, 2, 1, 800, 9);
}

static void test_keys_name_one_layout_each(void **state)
{
    (void)state;
    for (int shards = 1; shards <= 1024; shards *= 2)
        for (int shard = 0; shard < shards; shard++) {
            relay_config cfg = {.cursor_shards = shards, .cursor_shard = shard};
            int n, k;
            cursor_shard_of_key(sql_cursor_shard_key(&cfg), &n, &k);
            if (n != shards || k != shard)
                fail_msg("shard %d of %d came back as %d of %d", shard, shards, k, n);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nothing_saved_starts_at_the_beginning),
        cmocka_unit_test(test_a_coarser_shard_vouches_for_its_parts),
        cmocka_unit_test(test_finer_shards_vouch_only_all_together),
        cmocka_unit_test(test_the_furthest_safe_place_wins),
        cmocka_unit_test(test_keys_name_one_layout_each),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
