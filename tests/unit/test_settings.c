/*
 * The settings table (core/config/settings.c) and what walks it: every
 * row's default is within its own range, each out-of-range or unknown
 * choice is refused naming FILE:LINE, a reload keeps the fixed rows and
 * takes the live ones, the column lookup reads the same rows, and --print
 * shows every row without the password.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config/config.h"
#include "config/settings.h"

static char dir[256];
static char path[512];
static char err[1024];

static int make_dir(void **state)
{
    (void)state;
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/obx-unit-settings-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    snprintf(path, sizeof path, "%s/relay.conf", mkdtemp(dir) ? dir : "/nonexistent");
    return 0;
}

static int remove_dir(void **state)
{
    (void)state;
    unlink(path);
    return rmdir(dir);
}

static relay_config *load(const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    err[0] = '\0';
    return config_load(path, err, sizeof err);
}

static relay_config *load_ok(const char *text)
{
    relay_config *cfg = load(text);
    if (!cfg)
        fail_msg("refused: %s", err);
    return cfg;
}

#define OUTS "outputs = ( { name = \"out\"; driver = \"memory\"; } );\n"
#define DB "database = { conninfo = \"dbname=app\"; };\n"

static size_t choice_count(const char *const *choices)
{
    size_t n = 0;
    while (choices[n])
        n++;
    return n;
}

static void test_every_default_within_its_range(void **state)
{
    (void)state;
    size_t n;
    const setting_def *t = settings_table(&n);
    assert_true(n > 0 && n <= CFG_SETTINGS_MAX);
    relay_config *cfg = load_ok(DB OUTS);
    for (size_t i = 0; i < n; i++) {
        char p[128];
        setting_path(&t[i], p, sizeof p);
        const void *slot = (const char *)cfg + t[i].offset;
        int scale = t[i].scale ? t[i].scale : 1;
        switch (t[i].type) {
        case SETTING_INT:
            if (t[i].def < t[i].min || t[i].def > t[i].max)
                fail_msg("%s: default %g outside %g..%g", p, t[i].def, t[i].min, t[i].max);
            assert_int_equal(*(const int *)slot, (int)t[i].def * scale);
            break;
        case SETTING_DOUBLE:
            if (t[i].def < t[i].min || t[i].def > t[i].max)
                fail_msg("%s: default %g outside %g..%g", p, t[i].def, t[i].min, t[i].max);
            assert_true(*(const double *)slot == t[i].def);
            break;
        case SETTING_BOOL:
            if (t[i].def != 0 && t[i].def != 1)
                fail_msg("%s: default %g is not a boolean", p, t[i].def);
            assert_int_equal(*(const int *)slot, (int)t[i].def);
            break;
        case SETTING_ENUM:
            if (t[i].def < 0 || t[i].def >= (double)choice_count(t[i].choices))
                fail_msg("%s: default choice %g is not one of its choices", p, t[i].def);
            assert_int_equal(*(const int *)slot, (int)t[i].def);
            break;
        case SETTING_STRING:
            if (t[i].text)
                assert_string_equal(*(char *const *)slot, t[i].text);
            else if (!t[i].derived && strcmp(p, "database.conninfo") != 0)
                assert_null(*(char *const *)slot);
            break;
        }
        /* only the conninfo came from the file */
        assert_int_equal(cfg->from_file[i], strcmp(p, "database.conninfo") == 0);
    }
    config_free(cfg);
}

/* The file with the row's groups opened on line 3 and "key = value;" on line 4;
 * a group's required setting (other than the row) is given on line 3. */
static void write_row(char *out, size_t cap, const setting_def *def, const char *value)
{
    char open[256] = "", close[64] = "", sec[128];
    snprintf(sec, sizeof sec, "%s", def->section);
    int database = strncmp(sec, "database", 8) == 0;
    int partitions =
        strcmp(def->section, "relay.partitions") == 0 && strcmp(def->key, "interval") != 0;
    int cursor = strcmp(def->section, "relay.cursor") == 0; /* shards: a cursor's */
    for (char *part = strtok(sec, "."); part; part = strtok(NULL, ".")) {
        const char *required = strcmp(part, "database") == 0 ? "conninfo = \"dbname=app\"; "
                               : partitions && strcmp(part, "partitions") == 0
                                   ? "interval = \"1 day\"; "
                               : cursor && strcmp(part, "relay") == 0     ? "source = \"cursor\"; "
                               : cursor && strcmp(def->key, "shard") == 0 ? "shards = 1024; "
                                                                          : "";
        snprintf(open + strlen(open), sizeof open - strlen(open), "%s = { %s", part, required);
        snprintf(close + strlen(close), sizeof close - strlen(close), "};");
    }
    snprintf(out, cap, "%s%s%s\n%s = %s;\n%s\n", database ? "\n" : DB, OUTS, open, def->key, value,
             close);
}

static void expect_refused(const char *text, int line, const char *want)
{
    relay_config *cfg = load(text);
    if (cfg) {
        config_free(cfg);
        fail_msg("loaded, expected an error at line %d about \"%s\":\n%s", line, want, text);
    }
    char prefix[600];
    snprintf(prefix, sizeof prefix, "%s:%d: ", path, line);
    if (strncmp(err, prefix, strlen(prefix)) != 0 || !strstr(err + strlen(prefix), want))
        fail_msg("error \"%s\", want \"%s...%s...\" for:\n%s", err, prefix, want, text);
}

static void test_out_of_range_refused_at_its_line(void **state)
{
    (void)state;
    size_t n, tried = 0;
    const setting_def *t = settings_table(&n);
    for (size_t i = 0; i < n; i++) {
        char text[2048], value[64], want[256];
        if (t[i].type == SETTING_INT || t[i].type == SETTING_DOUBLE) {
            const char *fmt = t[i].type == SETTING_INT ? "%.0f" : "%.2f";
            snprintf(want, sizeof want, "setting \"%s\" must be between", t[i].key);
            snprintf(value, sizeof value, fmt, t[i].max + 1);
            write_row(text, sizeof text, &t[i], value);
            expect_refused(text, 4, want);
            snprintf(value, sizeof value, fmt, t[i].min - 1);
            write_row(text, sizeof text, &t[i], value);
            expect_refused(text, 4, want);
            tried++;
        } else if (t[i].type == SETTING_BOOL) {
            snprintf(want, sizeof want, "setting \"%s\" must be true or false", t[i].key);
            write_row(text, sizeof text, &t[i], "1");
            expect_refused(text, 4, want);
            tried++;
        } else if (t[i].type == SETTING_ENUM) {
            snprintf(want, sizeof want, "setting \"%s\" is \"bogus\"; expected one of \"%s\"",
                     t[i].key, t[i].choices[0]);
            write_row(text, sizeof text, &t[i], "\"bogus\"");
            expect_refused(text, 4, want);
            tried++;
        }
    }
    assert_true(tried > 20);
}

static void test_the_row_writer_writes_a_valid_file(void **state)
{
    (void)state;
    size_t n;
    const setting_def *t = settings_table(&n);
    for (size_t i = 0; i < n; i++) {
        if (t[i].type != SETTING_INT)
            continue;
        char text[2048], value[64];
        /* initial_ms may not be above max_ms */
        snprintf(value, sizeof value, "%.0f",
                 strcmp(t[i].key, "initial_ms") == 0 ? t[i].min : t[i].max);
        write_row(text, sizeof text, &t[i], value);
        relay_config *cfg = load_ok(text);
        assert_true(cfg->from_file[i]);
        config_free(cfg);
    }
}

static const char *kept_names[CFG_SETTINGS_MAX];
static int kept_count;

static void record_kept(const char *name)
{
    assert_true(kept_count < CFG_SETTINGS_MAX);
    kept_names[kept_count++] = strdup(name);
}

static void forget_kept(void)
{
    for (int i = 0; i < kept_count; i++)
        free((char *)kept_names[i]);
    kept_count = 0;
}

static void test_reload_keeps_fixed_and_applies_live(void **state)
{
    (void)state;
    relay_config *run = load_ok("database = { conninfo = \"dbname=app password=a\";\n"
                                "  columns = { id = \"oid\"; }; };\n"
                                "relay = { workers = 2; poll_interval_ms = 1000; };\n" OUTS);
    relay_config *next = load_ok("database = { conninfo = \"dbname=app password=b\";\n"
                                 "  columns = { id = \"xid\"; }; };\n"
                                 "relay = { workers = 4; poll_interval_ms = 50;\n"
                                 "  max_attempts = 3; backoff = { jitter = 0.5; }; };\n"
                                 "log = { level = \"debug\"; };\n" OUTS);
    assert_int_equal(settings_keep_fixed(next, run, record_kept), 4);
    assert_int_equal(kept_count, 4);
    assert_string_equal(kept_names[0], "database.conninfo");
    assert_string_equal(kept_names[1], "database.columns.id");
    assert_string_equal(kept_names[2], "relay.workers");
    assert_string_equal(kept_names[3], "log.level");
    forget_kept();
    /* fixed: the running values */
    assert_string_equal(next->conninfo, "dbname=app password=a");
    assert_string_equal(next->col.id, "oid");
    assert_int_equal(next->workers, 2);
    assert_int_equal(next->log_level, OBX_LOG_INFO);
    /* live: the new ones */
    assert_int_equal(next->poll_interval_ms, 50);
    assert_int_equal(next->max_attempts, 3);
    assert_true(next->backoff_jitter == 0.5);
    /* nothing differs any more */
    assert_int_equal(settings_keep_fixed(next, run, record_kept), 0);
    config_free(next);
    config_free(run);
}

static void test_every_fixed_row_is_kept(void **state)
{
    (void)state;
    size_t n, fixed = 0;
    const setting_def *t = settings_table(&n);
    relay_config *run = load_ok(DB OUTS), *next = load_ok(DB OUTS);
    for (size_t i = 0; i < n; i++) {
        void *slot = (char *)next + t[i].offset;
        if (t[i].type == SETTING_STRING) {
            free(*(char **)slot);
            *(char **)slot = strdup("changed");
        } else if (t[i].type == SETTING_DOUBLE) {
            *(double *)slot += 0.25;
        } else {
            *(int *)slot ^= 1;
        }
        fixed += t[i].reload == SETTING_FIXED;
    }
    assert_int_equal(settings_keep_fixed(next, run, record_kept), (int)fixed);
    forget_kept();
    for (size_t i = 0; i < n; i++) {
        const char *a = (const char *)next + t[i].offset, *b = (const char *)run + t[i].offset;
        int same =
            t[i].type == SETTING_STRING
                ? (!*(char *const *)a && !*(char *const *)b) ||
                      (*(char *const *)a && *(char *const *)b &&
                       strcmp(*(char *const *)a, *(char *const *)b) == 0)
                : memcmp(a, b, t[i].type == SETTING_DOUBLE ? sizeof(double) : sizeof(int)) == 0;
        assert_int_equal(same, t[i].reload == SETTING_FIXED);
    }
    config_free(next);
    config_free(run);
}

static void test_columns_come_from_the_table(void **state)
{
    (void)state;
    relay_config *cfg = load_ok(
        "database = { conninfo = \"dbname=app\"; columns = { aggregate_id = \"agg\"; }; };\n" OUTS);
#define CHECK_COLUMN(name)                                                                         \
    assert_ptr_equal(config_column(cfg, #name, strlen(#name)), cfg->col.name);
    CFG_COLUMNS(CHECK_COLUMN)
#undef CHECK_COLUMN
    assert_string_equal(config_column(cfg, "aggregate_id", 12), "agg");
    assert_string_equal(config_column(cfg, "idx", 2), "id");
    assert_null(config_column(cfg, "nope", 4));
    config_free(cfg);
}

static char *printed(const relay_config *cfg)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    config_print_settings(out, cfg);
    fclose(out);
    return text;
}

static void test_print_shows_every_row_without_the_password(void **state)
{
    (void)state;
    size_t n;
    const setting_def *t = settings_table(&n);
    relay_config *cfg =
        load_ok("database = { conninfo = \"host=db password='hun ter2' dbname=app\"; };\n"
                "relay = { workers = 3; lease_seconds = 45; };\n" OUTS);
    char *text = printed(cfg);
    assert_null(strstr(text, "hun"));
    assert_non_null(strstr(text, "password=***"));
    assert_non_null(strstr(text, "\nrelay.workers = 3  # fixed\n"));
    assert_non_null(strstr(text, "\nrelay.lease_seconds = 45  # fixed\n"));
    assert_non_null(strstr(text, "\nrelay.batch_size = 500  # default, fixed\n"));
    assert_non_null(strstr(text, "\nrelay.backoff.jitter = 0.2  # default\n"));
    assert_non_null(strstr(text, "\nrelay.wal.slot = \"outbox_relay\"  # default, fixed (from "));
    for (size_t i = 0; i < n; i++) {
        char want[160];
        snprintf(want, sizeof want, "\n%s.%s = ", t[i].section, t[i].key);
        if (!strstr(text, want))
            fail_msg("%s missing from:\n%s", want + 1, text);
    }
    free(text);
    config_free(cfg);

    cfg = load_ok("database = { conninfo = \"postgresql://app:hunter2@db/app\"; };\n" OUTS);
    text = printed(cfg);
    assert_null(strstr(text, "hunter2"));
    assert_non_null(strstr(text, "password=***"));
    free(text);
    config_free(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_default_within_its_range),
        cmocka_unit_test(test_out_of_range_refused_at_its_line),
        cmocka_unit_test(test_the_row_writer_writes_a_valid_file),
        cmocka_unit_test(test_reload_keeps_fixed_and_applies_live),
        cmocka_unit_test(test_every_fixed_row_is_kept),
        cmocka_unit_test(test_columns_come_from_the_table),
        cmocka_unit_test(test_print_shows_every_row_without_the_password),
    };
    return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
