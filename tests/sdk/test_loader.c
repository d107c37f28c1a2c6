/*
 * Loader ABI checks against tiny test drivers (abi_driver.c built with one
 * ABI_* macro each). A refusal must name the file and say why, so the
 * operator knows which .so to rebuild.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "host.h"
#include "loader.h"

#ifndef ABI_DIR
#error ABI_DIR must name the directory of the test drivers
#endif

static char path_buf[4096];

static const char *abi_path(const char *name)
{
    snprintf(path_buf, sizeof path_buf, "%s/%s.so", ABI_DIR, name);
    return path_buf;
}

/* Asserts that loading NAME is refused with an error naming the file and each of want[]. */
static void expect_refused(const char *name, const char *const *want)
{
    char err[1024] = "";
    const char *path = abi_path(name);
    loaded_driver *drv = loader_open(NULL, path, err, sizeof err);
    if (drv)
        fail_msg("%s was loaded, expected a refusal", path);
    if (!strstr(err, path))
        fail_msg("error does not name the file %s: \"%s\"", path, err);
    for (; *want; want++)
        if (!strstr(err, *want))
            fail_msg("error \"%s\" does not mention \"%s\"", err, *want);
}

static int completions;

static void on_complete(void *arg, uint64_t token, obx_status status, int native_code,
                        const char *detail)
{
    (void)arg;
    (void)native_code;
    (void)detail;
    assert_int_equal(token, 42);
    assert_int_equal(status, OBX_OK);
    completions++;
}

/* Loads NAME and publishes one message through it. */
static void expect_works(const char *name)
{
    char err[1024] = "";
    loaded_driver *drv = loader_open(NULL, abi_path(name), err, sizeof err);
    if (!drv)
        fail_msg("refused: %s", err);
    assert_non_null(drv->def.destroy);
    host_ctx ctx;
    host_init(&ctx, drv, NULL, on_complete, NULL);
    obx_instance *inst = drv->def.create(&ctx.host, err, sizeof err);
    assert_non_null(inst);
    obx_message m = {.token = 42,
                     .event_id = "0b6f1c9e-1d2f-4e55-9c1b-2f6d3a1c8e01",
                     .event_type = "order.created",
                     .aggregate_type = "Order",
                     .aggregate_id = "order-1",
                     .destination = "orders",
                     .payload = "{}",
                     .payload_len = 2,
                     .content_type = "application/json",
                     .attempt = 1};
    obx_status accept = OBX_FATAL;
    completions = 0;
    assert_int_equal(drv->def.publish_batch(inst, &m, 1, &accept), OBX_OK);
    assert_int_equal(accept, OBX_OK);
    assert_int_equal(completions, 1);
    drv->def.close(inst);
    drv->def.destroy(inst);
    loader_close(drv);
}

static void older_minor_loads(void **state)
{
    (void)state;
    expect_works("abi_old");
}

static void newer_minor_loads(void **state)
{
    (void)state;
    expect_works("abi_newer");
}

static void other_major_refused(void **state)
{
    (void)state;
    char driver_v[32], relay_v[32];
    snprintf(driver_v, sizeof driver_v, "%d.%d", OBX_ABI_MAJOR + 1, OBX_ABI_MINOR);
    snprintf(relay_v, sizeof relay_v, "%d.%d", OBX_ABI_MAJOR, OBX_ABI_MINOR);
    const char *want[] = {driver_v, relay_v, "major", NULL};
    expect_refused("abi_major", want);
}

static void missing_callback_refused(void **state)
{
    (void)state;
    const char *want[] = {"flush", "abi_test", NULL};
    expect_refused("abi_no_flush", want);
}

static void missing_entry_refused(void **state)
{
    (void)state;
    const char *want[] = {"obx_driver_entry", NULL};
    expect_refused("abi_no_entry", want);
}

static void wrong_magic_refused(void **state)
{
    (void)state;
    const char *want[] = {"magic", NULL};
    expect_refused("abi_magic", want);
}

static void small_definition_refused(void **state)
{
    (void)state;
    const char *want[] = {"too small", NULL};
    expect_refused("abi_small", want);
}

static void not_elf_refused(void **state)
{
    (void)state;
    const char *want[] = {"cannot load", NULL};
    expect_refused("not_elf", want);
}

static void missing_file_refused(void **state)
{
    (void)state;
    const char *want[] = {"not found", NULL};
    expect_refused("no_such_driver", want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(older_minor_loads),        cmocka_unit_test(newer_minor_loads),
        cmocka_unit_test(other_major_refused),      cmocka_unit_test(missing_callback_refused),
        cmocka_unit_test(missing_entry_refused),    cmocka_unit_test(wrong_magic_refused),
        cmocka_unit_test(small_definition_refused), cmocka_unit_test(not_elf_refused),
        cmocka_unit_test(missing_file_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
