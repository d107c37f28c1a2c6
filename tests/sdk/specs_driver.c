/*
 * One source, several test .so files (see CMakeLists.txt): option specs the
 * host must accept (SPECS_OK, loaded as "specs") or refuse as a driver bug
 * at load, naming the option:
 *   SPECS_DEFAULT_RANGE  a default outside its range
 *   SPECS_DEFAULT_TYPE   a default that is not an integer
 *   SPECS_DEFAULT_CHOICE a default not among the choices
 *   SPECS_BAD_RANGE      min above max
 *   SPECS_RENAMED_CLASH  renamed_from names a declared option
 *   SPECS_CHOICES_ON_INT choices on an integer option
 */
#include <stdlib.h>

#include "obx/driver.h"

static const obx_option sp_options[] = {
    {"ratio", OBX_OPT_DOUBLE, 0, "a number between 0 and 1"},
    {"level", OBX_OPT_INT, 0, "an integer between -5 and 5"},
    {"token", OBX_OPT_STRING, OBX_OPT_SECRET, "a secret among two values"},
    {NULL, 0, 0, NULL},
};

static const char *const sp_tokens[] = {"abc", "def", NULL};

#define SP_RATIO_MIN 0
#define SP_RATIO_MAX 1
#define SP_LEVEL_DEFAULT "3"
#define SP_LEVEL_CHOICES NULL
#define SP_LEVEL_RENAMED "lvl"
#define SP_TOKEN_DEFAULT "abc"
#if defined(SPECS_DEFAULT_RANGE)
#undef SP_LEVEL_DEFAULT
#define SP_LEVEL_DEFAULT "9"
#elif defined(SPECS_DEFAULT_TYPE)
#undef SP_LEVEL_DEFAULT
#define SP_LEVEL_DEFAULT "three"
#elif defined(SPECS_DEFAULT_CHOICE)
#undef SP_TOKEN_DEFAULT
#define SP_TOKEN_DEFAULT "xyz"
#elif defined(SPECS_BAD_RANGE)
#undef SP_RATIO_MIN
#define SP_RATIO_MIN 2
#elif defined(SPECS_RENAMED_CLASH)
#undef SP_LEVEL_RENAMED
#define SP_LEVEL_RENAMED "ratio"
#elif defined(SPECS_CHOICES_ON_INT)
#undef SP_LEVEL_CHOICES
#define SP_LEVEL_CHOICES sp_tokens
#endif

static const obx_option_spec sp_specs[] = {
    {.default_value = "0.25", .min = SP_RATIO_MIN, .max = SP_RATIO_MAX},
    {.default_value = SP_LEVEL_DEFAULT,
     .min = -5,
     .max = 5,
     .choices = SP_LEVEL_CHOICES,
     .renamed_from = SP_LEVEL_RENAMED},
    {.default_value = SP_TOKEN_DEFAULT, .choices = sp_tokens},
};

struct obx_instance {
    const obx_host *host;
};

static obx_instance *sp_create(const obx_host *host, char *errstr, size_t errstr_size)
{
    (void)errstr;
    (void)errstr_size;
    obx_instance *inst = calloc(1, sizeof *inst);
    if (inst)
        inst->host = host;
    return inst;
}

static obx_status sp_publish(obx_instance *inst, const obx_message *msgs, size_t count,
                             obx_status *accept)
{
    for (size_t i = 0; i < count; i++) {
        accept[i] = OBX_OK;
        inst->host->complete(inst->host->host_ctx, msgs[i].token, OBX_OK, 0, NULL);
    }
    return OBX_OK;
}

static size_t sp_flush(obx_instance *inst, int timeout_ms)
{
    (void)inst;
    (void)timeout_ms;
    return 0;
}

static void sp_close(obx_instance *inst)
{
    (void)inst;
}

static void sp_destroy(obx_instance *inst)
{
    free(inst);
}

static const obx_driver_def sp_def = {
    OBX_DRIVER_DEF_HEAD,
    .name = "specs",
    .version = "0",
    .description = "option specs test driver",
    .options = sp_options,
    .create = sp_create,
    .publish_batch = sp_publish,
    .flush = sp_flush,
    .close = sp_close,
    .destroy = sp_destroy,
    .option_specs = sp_specs,
};

OBX_DRIVER_EXPORT const obx_driver_def *obx_driver_entry(void)
{
    return &sp_def;
}
