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
#include <sys/stat.h>
#include <unistd.h>

#include "config/config_read.h"
#include "host/host.h"
#include "host/loader.h"

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
    const char *want[] = {"not an ELF shared object", NULL};
    expect_refused("not_elf", want);
}

static void missing_file_refused(void **state)
{
    (void)state;
    const char *want[] = {"not found", NULL};
    expect_refused("no_such_driver", want);
}

/* A private directory (mode 755) beside the test drivers, made afresh. */
static const char *scratch_dir(const char *name)
{
    static char dir[4096];
    snprintf(dir, sizeof dir, "%s/../loader-%s", ABI_DIR, name);
    char cmd[3 * sizeof dir + 64];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s' && chmod 755 '%s'", dir, dir, dir);
    assert_int_equal(system(cmd), 0);
    return dir;
}

/* Copies the first `size` bytes of a working driver to PATH (mode 755). */
static void copy_prefix(const char *path, long size)
{
    FILE *in = fopen(abi_path("abi_old"), "rb"), *out = fopen(path, "wb");
    assert_non_null(in);
    assert_non_null(out);
    for (long i = 0; i < size; i++) {
        int c = fgetc(in);
        if (c == EOF)
            break;
        fputc(c, out);
    }
    fclose(in);
    fclose(out);
    assert_int_equal(chmod(path, 0755), 0);
}

static long file_size(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (long)st.st_size;
}

/* Every cut of a good driver is refused before dlopen (which would SIGBUS). */
static void truncated_refused(void **state)
{
    (void)state;
    const char *dir = scratch_dir("truncated");
    long full = file_size(abi_path("abi_old"));
    char path[4200], err[1024];
    int refused = 0;
    for (long size = 0; size < full; size += size < 128 ? 1 : 61) {
        snprintf(path, sizeof path, "%s/cut.so", dir);
        copy_prefix(path, size);
        loaded_driver *drv = loader_open(NULL, path, err, sizeof err);
        if (drv)
            fail_msg("%s cut to %ld of %ld bytes was loaded", path, size, full);
        if (!strstr(err, path) || !strstr(err, "refused"))
            fail_msg("cut to %ld: unclear error \"%s\"", size, err);
        refused++;
    }
    assert_true(refused > 100);
    copy_prefix(path, full); /* the whole file loads from the same place */
    loaded_driver *drv = loader_open(NULL, path, err, sizeof err);
    if (!drv)
        fail_msg("the complete copy was refused: %s", err);
    loader_close(drv);
}

static void expect_mode_refused(const char *path, const char *want)
{
    char err[1024] = "";
    loaded_driver *drv = loader_open(NULL, path, err, sizeof err);
    if (drv)
        fail_msg("%s was loaded, expected a refusal mentioning \"%s\"", path, want);
    if (!strstr(err, want) || !strstr(err, LOADER_INSECURE_ENV))
        fail_msg("error \"%s\" does not mention \"%s\" and the opt-in", err, want);
}

/* A world-writable directory or group-writable file is refused, unless the
 * operator opts in with the environment variable. */
static void writable_refused(void **state)
{
    (void)state;
    const char *dir = scratch_dir("writable");
    char path[4200], err[1024];
    snprintf(path, sizeof path, "%s/drv.so", dir);
    copy_prefix(path, file_size(abi_path("abi_old")));
    assert_int_equal(chmod(dir, 0777), 0);
    expect_mode_refused(path, "writable by others");
    assert_int_equal(chmod(dir, 01777), 0); /* sticky does not help: the file's owner can swap it */
    expect_mode_refused(path, "writable by others");
    setenv(LOADER_INSECURE_ENV, "1", 1);
    loaded_driver *drv = loader_open(NULL, path, err, sizeof err);
    if (!drv)
        fail_msg("refused despite %s=1: %s", LOADER_INSECURE_ENV, err);
    loader_close(drv);
    unsetenv(LOADER_INSECURE_ENV);
    assert_int_equal(chmod(dir, 0755), 0);
    assert_int_equal(chmod(path, 0775), 0);
    expect_mode_refused(path, "writable by its group");
    assert_int_equal(chmod(path, 0755), 0);
    drv = loader_open(NULL, path, err, sizeof err);
    if (!drv)
        fail_msg("a 755 file in a 755 directory was refused: %s", err);
    loader_close(drv);
    /* a symlink from a safe directory into a writable one is judged by where the file is */
    const char *safe = scratch_dir("writable-link");
    char link[4200];
    snprintf(link, sizeof link, "%s/drv.so", safe);
    assert_int_equal(symlink(path, link), 0);
    assert_int_equal(chmod(dir, 0777), 0);
    expect_mode_refused(link, "writable by others");
    assert_int_equal(chmod(dir, 0755), 0);
}

static void relative_paths_follow_the_config(void **state)
{
    (void)state;
    char out[256];
    assert_int_equal(config_resolve_path("/etc/relay/relay.conf", "drivers", out, sizeof out), 0);
    assert_string_equal(out, "/etc/relay/drivers");
    assert_int_equal(config_resolve_path("conf/relay.conf", "../lib/x.so", out, sizeof out), 0);
    assert_string_equal(out, "conf/../lib/x.so");
    assert_int_equal(config_resolve_path("/etc/relay.conf", "/opt/drivers", out, sizeof out), 0);
    assert_string_equal(out, "/opt/drivers");
    assert_int_equal(config_resolve_path("relay.conf", "drivers", out, sizeof out), 0);
    assert_string_equal(out, "drivers");
    assert_int_equal(config_resolve_path("/a/b.conf", "drivers", out, 5), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(older_minor_loads),
        cmocka_unit_test(newer_minor_loads),
        cmocka_unit_test(other_major_refused),
        cmocka_unit_test(missing_callback_refused),
        cmocka_unit_test(missing_entry_refused),
        cmocka_unit_test(wrong_magic_refused),
        cmocka_unit_test(small_definition_refused),
        cmocka_unit_test(not_elf_refused),
        cmocka_unit_test(missing_file_refused),
        cmocka_unit_test(truncated_refused),
        cmocka_unit_test(writable_refused),
        cmocka_unit_test(relative_paths_follow_the_config),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
