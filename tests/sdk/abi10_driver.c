/*
 * A driver as it was written for ABI 1.0: built against the 1.0 header kept
 * in tests/sdk/abi10/obx/driver.h (include/obx/driver.h before 1.1), it must
 * keep loading and passing check-driver with the current relay.
 *
 * create checks what a 1.0 driver relies on: a getter returns 0 and leaves
 * *out alone when the option is unset (there are no declared defaults), and
 * returns the configured value when it is set. Option `expect` says which:
 * "unset" (the default when expect itself is unset) or "set".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "obx/driver.h"

#if OBX_ABI_MAJOR != 1 || OBX_ABI_MINOR != 0
#error built against the wrong header: this driver must see ABI 1.0
#endif

static const obx_option v10_options[] = {
    {"greeting", OBX_OPT_STRING, 0, "a string option"},
    {"repeat", OBX_OPT_INT, 0, "an integer option"},
    {"loud", OBX_OPT_BOOL, 0, "a boolean option"},
    {"ratio", OBX_OPT_DOUBLE, 0, "a number option"},
    {"expect", OBX_OPT_STRING, 0, "\"unset\" (default) or \"set\": what create expects"},
    {NULL, 0, 0, NULL},
};

struct obx_instance {
    const obx_host *host;
};

static obx_instance *v10_create(const obx_host *host, char *errstr, size_t errstr_size)
{
    void *ctx = host->host_ctx;
    const char *expect = "unset", *greeting = "keep";
    int64_t repeat = -7;
    int loud = -7;
    double ratio = -7;
    host->get_string(ctx, "expect", &expect);
    int want = strcmp(expect, "set") == 0;
    int got[4] = {host->get_string(ctx, "greeting", &greeting),
                  host->get_int(ctx, "repeat", &repeat), host->get_bool(ctx, "loud", &loud),
                  host->get_double(ctx, "ratio", &ratio)};
    int kept = !strcmp(greeting, "keep") && repeat == -7 && loud == -7 && ratio == -7;
    for (int i = 0; i < 4; i++)
        if (got[i] != want) {
            snprintf(errstr, errstr_size, "getter %d returned %d for an option %s", i, got[i],
                     want ? "set in the config" : "not set");
            return NULL;
        }
    if (!want && !kept) {
        snprintf(errstr, errstr_size, "a getter changed *out for an unset option");
        return NULL;
    }
    obx_instance *inst = calloc(1, sizeof *inst);
    if (!inst) {
        snprintf(errstr, errstr_size, "out of memory");
        return NULL;
    }
    inst->host = host;
    return inst;
}

static obx_status v10_publish(obx_instance *inst, const obx_message *msgs, size_t count,
                              obx_status *accept)
{
    for (size_t i = 0; i < count; i++) {
        accept[i] = OBX_OK;
        inst->host->complete(inst->host->host_ctx, msgs[i].token, OBX_OK, 0, NULL);
    }
    return OBX_OK;
}

static size_t v10_flush(obx_instance *inst, int timeout_ms)
{
    (void)inst;
    (void)timeout_ms;
    return 0;
}

static void v10_close(obx_instance *inst)
{
    (void)inst;
}

static void v10_destroy(obx_instance *inst)
{
    free(inst);
}

static const obx_driver_def v10_def = {
    OBX_DRIVER_DEF_HEAD,
    .name = "abi10",
    .version = "1.0.0",
    .description = "a driver built against the ABI 1.0 header (tests only)",
    .options = v10_options,
    .create = v10_create,
    .publish_batch = v10_publish,
    .flush = v10_flush,
    .close = v10_close,
    .destroy = v10_destroy,
};

OBX_DRIVER_EXPORT const obx_driver_def *obx_driver_entry(void)
{
    return &v10_def;
}
