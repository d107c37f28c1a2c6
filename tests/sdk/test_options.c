/*
 * The host enforcing ABI 1.1 option specs, through the real loader and
 * config: the template driver and specs_driver.c (good and buggy specs).
 * Errors name the config file and line; defaults reach the getters; old
 * names and deprecated options warn once; a secret value is never printed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/log.h"
#include "host/host.h"
#include "host/loader.h"

#if !defined(OPTIONS_CFG) || !defined(DRIVERS_DIR) || !defined(SPECS_DIR)
#error OPTIONS_CFG, DRIVERS_DIR and SPECS_DIR must be defined
#endif

static relay_config *cfg;
static loaded_driver *drv;
static char err[1024];

static const cfg_output *output(const char *name)
{
    for (size_t i = 0; i < cfg->output_count; i++)
        if (strcmp(cfg->outputs[i].name, name) == 0)
            return &cfg->outputs[i];
    fail_msg("no output %s in %s", name, OPTIONS_CFG);
    return NULL;
}

/* "PATH:LINE:" of output NAME in the config. */
static const char *where(const char *name)
{
    static char buf[4200];
    char needle[128], line[1024];
    snprintf(needle, sizeof needle, "name = \"%s\";", name);
    FILE *f = fopen(OPTIONS_CFG, "r");
    assert_non_null(f);
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        n++;
        if (strstr(line, needle))
            break;
    }
    fclose(f);
    snprintf(buf, sizeof buf, "%s:%d:", OPTIONS_CFG, n);
    return buf;
}

/* Loads the driver of output NAME and checks its options; returns 0 or -1 (err). */
static int load(const char *name)
{
    const cfg_output *out = output(name);
    if (drv)
        loader_close(drv);
    err[0] = '\0';
    drv = loader_open(strcmp(out->driver, "specs") == 0 ? SPECS_DIR : DRIVERS_DIR, out->driver, err,
                      sizeof err);
    if (!drv)
        fail_msg("cannot load %s: %s", out->driver, err);
    return host_validate_options(cfg, out, drv, err, sizeof err);
}

static void expect_error(const char *name, const char *const *want)
{
    if (load(name) == 0)
        fail_msg("output %s was accepted", name);
    if (!strstr(err, where(name)))
        fail_msg("error \"%s\" does not start at %s", err, where(name));
    for (; *want; want++)
        if (!strstr(err, *want))
            fail_msg("error \"%s\" does not mention \"%s\"", err, *want);
}

/* stderr of a call, where the host's warnings go. */
static char captured[8192];
static int saved_fd = -1;
static FILE *capture_file;

static void capture_start(void)
{
    fflush(stderr);
    capture_file = tmpfile();
    saved_fd = dup(2);
    dup2(fileno(capture_file), 2);
}

static void capture_stop(void)
{
    fflush(stderr);
    dup2(saved_fd, 2);
    close(saved_fd);
    rewind(capture_file);
    size_t n = fread(captured, 1, sizeof captured - 1, capture_file);
    captured[n] = '\0';
    fclose(capture_file);
}

static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

static void no_completion(void *arg, uint64_t token, obx_status status, int code, const char *d)
{
    (void)arg, (void)token, (void)status, (void)code, (void)d;
}

static host_ctx ctx;

static const obx_host *host_for(const char *name)
{
    host_init(&ctx, drv, output(name), no_completion, NULL);
    return &ctx.host;
}

static void test_defaults_reach_getters(void **state)
{
    (void)state;
    assert_int_equal(load("plain"), 0);
    const obx_host *h = host_for("plain");
    int64_t i = -1;
    const char *s = NULL;
    int b = -1;
    assert_int_equal(h->get_int(h->host_ctx, "max_message_bytes", &i), 1);
    assert_int_equal(i, 1048576);
    assert_int_equal(h->get_string(h->host_ctx, "compression", &s), 1);
    assert_string_equal(s, "none");
    assert_int_equal(h->get_string(h->host_ctx, "url", &s), 1);
    assert_string_equal(s, "nowhere://");
    assert_int_equal(h->get_int(h->host_ctx, "connect_timeout_ms", &i), 1);
    assert_int_equal(i, 5000);
    assert_int_equal(h->get_bool(h->host_ctx, "fail_create", &b), 1);
    assert_int_equal(b, 0);
    i = -1; /* no default declared: unset, as in 1.0 */
    assert_int_equal(h->get_int(h->host_ctx, "connect_timeout_s", &i), 0);
    assert_int_equal(i, -1);
    assert_int_equal(h->get_int(h->host_ctx, "compression", &i), 0); /* wrong type */
    assert_int_equal(h->get_int(h->host_ctx, "no_such_option", &i), 0);
    obx_instance *inst = drv->def.create(h, err, sizeof err);
    assert_non_null(inst);
    drv->def.destroy(inst);
}

static void test_set_values_win(void **state)
{
    (void)state;
    assert_int_equal(load("set"), 0);
    const obx_host *h = host_for("set");
    int64_t i;
    const char *s;
    assert_int_equal(h->get_int(h->host_ctx, "max_message_bytes", &i), 1);
    assert_int_equal(i, 10);
    assert_int_equal(h->get_string(h->host_ctx, "compression", &s), 1);
    assert_string_equal(s, "lz4");
}

static void test_out_of_range(void **state)
{
    (void)state;
    expect_error("range",
                 (const char *const[]){"\"max_message_bytes\"", "1 .. 1073741824", "got 0", NULL});
}

static void test_not_among_choices(void **state)
{
    (void)state;
    expect_error("choice",
                 (const char *const[]){"\"compression\"", "one of \"none\", \"gzip\", \"lz4\"",
                                       "got \"zstd\"", NULL});
}

static void test_wrong_type(void **state)
{
    (void)state;
    expect_error("type", (const char *const[]){"\"compression\" must be a string", NULL});
}

static void test_old_name_is_mapped_with_one_warning(void **state)
{
    (void)state;
    capture_start();
    int rc = load("old_name");
    capture_stop();
    assert_int_equal(rc, 0);
    char want[4400];
    snprintf(want, sizeof want,
             "%s output \"old_name\": option \"connect_timeout\" is now called "
             "\"connect_timeout_ms\"",
             where("old_name"));
    if (count_of(captured, want) != 1)
        fail_msg("wanted one warning \"%s\", stderr was:\n%s", want, captured);
    const obx_host *h = host_for("old_name");
    int64_t i;
    assert_int_equal(h->get_int(h->host_ctx, "connect_timeout_ms", &i), 1);
    assert_int_equal(i, 1234);
}

static void test_old_and_new_name_both_set(void **state)
{
    (void)state;
    expect_error("both", (const char *const[]){"\"connect_timeout\" is the old name of "
                                               "\"connect_timeout_ms\"",
                                               "set only \"connect_timeout_ms\"", NULL});
}

static void test_deprecated_warns(void **state)
{
    (void)state;
    capture_start();
    int rc = load("deprecated");
    capture_stop();
    assert_int_equal(rc, 0);
    char want[4400];
    snprintf(want, sizeof want,
             "%s output \"deprecated\": option \"connect_timeout_s\" is deprecated: use "
             "connect_timeout_ms (this one is in seconds)",
             where("deprecated"));
    if (count_of(captured, want) != 1)
        fail_msg("wanted one warning \"%s\", stderr was:\n%s", want, captured);
    const obx_host *h = host_for("deprecated");
    int64_t i;
    assert_int_equal(h->get_int(h->host_ctx, "connect_timeout_s", &i), 1);
    assert_int_equal(i, 3);
}

static void test_double_range_and_defaults(void **state)
{
    (void)state;
    assert_int_equal(load("spec_plain"), 0);
    const obx_host *h = host_for("spec_plain");
    double d;
    int64_t i;
    const char *s;
    assert_int_equal(h->get_double(h->host_ctx, "ratio", &d), 1);
    assert_true(d == 0.25);
    assert_int_equal(h->get_int(h->host_ctx, "level", &i), 1);
    assert_int_equal(i, 3);
    assert_int_equal(h->get_string(h->host_ctx, "token", &s), 1);
    assert_string_equal(s, "abc");
    assert_int_equal(load("spec_ratio_int"), 0); /* an integer literal for a number */
    h = host_for("spec_ratio_int");
    assert_int_equal(h->get_double(h->host_ctx, "ratio", &d), 1);
    assert_true(d == 1.0);
    expect_error("spec_ratio_high", (const char *const[]){"\"ratio\"", "0 .. 1", "got 2.5", NULL});
}

static void test_secret_value_never_printed(void **state)
{
    (void)state;
    expect_error("spec_secret", (const char *const[]){"\"token\"", "one of", NULL});
    if (strstr(err, "hunter2"))
        fail_msg("the secret value is in the error: %s", err);
}

/* A driver whose own specs are wrong is refused at load, as a driver bug. */
static void test_driver_spec_bugs(void **state)
{
    (void)state;
    static const struct {
        const char *variant, *want;
    } bugs[] = {
        {"default_range", "option \"level\": default must be in -5 .. 5 (got 9)"},
        {"default_type", "option \"level\": default \"three\" is not an integer"},
        {"default_choice", "option \"token\": default must be one of"},
        {"bad_range", "option \"ratio\": min 2 and max 1 are no range"},
        {"renamed_clash", "option \"level\": renamed_from \"ratio\""},
        {"choices_on_int", "option \"level\": choices are for string options"},
    };
    for (size_t k = 0; k < sizeof bugs / sizeof bugs[0]; k++) {
        char name[64];
        snprintf(name, sizeof name, "specs_%s", bugs[k].variant);
        loaded_driver *bad = loader_open(SPECS_DIR, name, err, sizeof err);
        if (!bad)
            fail_msg("the loader refused %s: %s", name, err);
        int rc = host_validate_options(cfg, output("spec_plain"), bad, err, sizeof err);
        loader_close(bad);
        if (rc == 0)
            fail_msg("%s was accepted", name);
        if (!strstr(err, "a bug in the driver") || !strstr(err, bugs[k].want) || !strstr(err, name))
            fail_msg("%s: error \"%s\" does not say \"%s\" as a driver bug", name, err,
                     bugs[k].want);
        if (strstr(err, "xyz"))
            fail_msg("%s: a secret option's default is printed: %s", name, err);
    }
}

static int refusals;
static void on_refuse(void *arg, uint64_t token, int code, const char *detail)
{
    assert_ptr_equal(arg, &refusals);
    assert_int_equal(token, 7);
    assert_int_equal(code, 22);
    assert_string_equal(detail, "why");
    refusals++;
}

/* refuse is in the table; it does nothing until the engine sets on_refuse. */
static void test_refuse_forwards(void **state)
{
    (void)state;
    assert_int_equal(load("plain"), 0);
    host_init(&ctx, drv, output("plain"), no_completion, &refusals);
    assert_true(OBX_HOST_HAS(&ctx.host, refuse));
    ctx.host.refuse(ctx.host.host_ctx, 7, 22, "why");
    assert_int_equal(refusals, 0);
    ctx.on_refuse = on_refuse;
    ctx.host.refuse(ctx.host.host_ctx, 7, 22, "why");
    assert_int_equal(refusals, 1);
    ctx.host.log(ctx.host.host_ctx, (obx_log_level)99, "a level past DEBUG is clamped");
}

static int setup(void **state)
{
    (void)state;
    log_setup(OBX_LOG_INFO, LOG_FORMAT_TEXT);
    cfg = config_load(OPTIONS_CFG, err, sizeof err);
    if (!cfg) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    loader_close(drv);
    config_free(cfg);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_reach_getters),
        cmocka_unit_test(test_set_values_win),
        cmocka_unit_test(test_out_of_range),
        cmocka_unit_test(test_not_among_choices),
        cmocka_unit_test(test_wrong_type),
        cmocka_unit_test(test_old_name_is_mapped_with_one_warning),
        cmocka_unit_test(test_old_and_new_name_both_set),
        cmocka_unit_test(test_deprecated_warns),
        cmocka_unit_test(test_double_range_and_defaults),
        cmocka_unit_test(test_secret_value_never_printed),
        cmocka_unit_test(test_driver_spec_bugs),
        cmocka_unit_test(test_refuse_forwards),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
