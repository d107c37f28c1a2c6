/*
 * The fake host catches what check-driver catches: each defect of the
 * deliberately broken driver (tests/sdk/broken_driver.c, path in argv[1])
 * shows as a violation through fh_violations, and the two correct modes
 * (none, refusing) show none. Both go through the relay's token ledger.
 * shared_state is check-driver's alone: the driver's shared list is global
 * and never freed, which the leak checker would report here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fake_host.h"
#include "messages.h"

#define COUNT 20 /* two groups of ten: the broken driver acts on every tenth */

static const char *broken_path;

typedef struct run {
    loaded_driver *drv;
    fake_host *fh;
    obx_instance *inst;
    obx_status accept[COUNT];
} run;

static void start(run *r, const char *defect)
{
    char err[512];
    r->drv = fh_load(broken_path, err, sizeof err);
    assert_non_null(r->drv);
    r->fh = fh_new(r->drv, 100);
    assert_int_equal(fh_set(r->fh, "defect", defect), 0);
    r->inst = fh_create(r->fh, err, sizeof err);
    assert_non_null(r->inst);
}

/* Tokens first .. first + COUNT - 1, published in one batch. */
static void publish(run *r, uint64_t first)
{
    msg_shape shape = {.run = 1, .destination = "d"};
    msg_text text[COUNT];
    obx_message msgs[COUNT];
    for (size_t i = 0; i < COUNT; i++)
        msg_make(&shape, first + i, &text[i], &msgs[i]);
    assert_int_equal(fh_publish(r->fh, r->inst, msgs, COUNT, r->accept), OBX_OK);
}

static size_t finish(run *r)
{
    char why[768];
    r->drv->def.destroy(r->inst); /* joins the after_close defect's late thread */
    size_t n = fh_violations(r->fh, why, sizeof why);
    printf("violations: %zu: %s\n", n, why);
    fh_free(r->fh);
    loader_close(r->drv);
    return n;
}

typedef struct seen {
    size_t ok, completions, refusals;
} seen;

/* Publishes, drives until settled (unless the defect needs messages in
 * flight at close), closes; returns the violations. */
static size_t one_batch(const char *defect, seen *out)
{
    run r;
    start(&r, defect);
    publish(&r, 0);
    if (strcmp(defect, "after_close") != 0)
        assert_true(fh_wait_settled(r.fh, r.inst, 10000));
    fh_close(r.fh, r.inst);
    if (out) {
        pthread_mutex_lock(&r.fh->lock);
        *out = (seen){r.fh->by_status[OBX_OK], r.fh->completions, r.fh->refusals};
        pthread_mutex_unlock(&r.fh->lock);
    }
    return finish(&r);
}

static void test_correct_modes_pass(void **state)
{
    (void)state;
    seen s;
    assert_int_equal(one_batch("none", &s), 0);
    assert_int_equal(s.ok, COUNT);
    assert_int_equal(one_batch("refusing", &s), 0);
    assert_int_equal(s.refusals, 2); /* two refused with a reason, two UNAVAILABLE without */
    assert_int_equal(s.completions, COUNT - 4);
}

static void test_each_defect_is_a_violation(void **state)
{
    (void)state;
    static const char *const defects[] = {"double_completion", "after_close",  "refuse_outside",
                                          "refuse_accepted",   "refuse_twice", "bad_status"};
    for (size_t i = 0; i < sizeof defects / sizeof *defects; i++) {
        printf("defect %s\n", defects[i]);
        assert_true(one_batch(defects[i], NULL) > 0);
    }
}

/* drop_on_close: close leaves messages without a completion. */
static void test_drop_on_close_leaves_messages_in_flight(void **state)
{
    (void)state;
    run r;
    start(&r, "drop_on_close");
    publish(&r, 0);
    fh_close(r.fh, r.inst);
    assert_int_equal(fh_in_flight(r.fh), COUNT);
    assert_int_equal(finish(&r), 0);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: unit-fake-host BROKEN_DRIVER.so\n");
        return 2;
    }
    broken_path = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_correct_modes_pass),
        cmocka_unit_test(test_each_defect_is_a_violation),
        cmocka_unit_test(test_drop_on_close_leaves_messages_in_flight),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
