/*
 * One source, several test .so files (see CMakeLists.txt): each ABI_* macro
 * builds a driver the loader must accept or refuse.
 *   ABI_OLD      an older-minor driver: abi_minor 0, struct_size up to destroy
 *   ABI_NEWER    a newer-minor driver with appended fields the host does not know
 *   ABI_MAJOR    abi_major 2: refused, naming both versions
 *   ABI_NO_FLUSH the required flush callback is NULL: refused, naming it
 *   ABI_MAGIC    wrong magic
 *   ABI_SMALL    struct_size too small to hold the required callbacks
 *   ABI_NO_ENTRY no obx_driver_entry symbol at all
 */
#include <stddef.h>
#include <stdlib.h>

#include "obx/driver.h"

#if !defined(ABI_NO_ENTRY)
struct obx_instance {
    const obx_host *host;
};

static obx_instance *abi_create(const obx_host *host, char *errstr, size_t errstr_size)
{
    (void)errstr;
    (void)errstr_size;
    obx_instance *inst = calloc(1, sizeof *inst);
    inst->host = host;
    return inst;
}

static obx_status abi_publish(obx_instance *inst, const obx_message *msgs, size_t count,
                              obx_status *accept)
{
    for (size_t i = 0; i < count; i++) {
        accept[i] = OBX_OK;
        inst->host->complete(inst->host->host_ctx, msgs[i].token, OBX_OK, 0, NULL);
    }
    return OBX_OK;
}

__attribute__((unused)) static size_t abi_flush(obx_instance *inst, int timeout_ms)
{
    (void)inst;
    (void)timeout_ms;
    return 0;
}

static void abi_close(obx_instance *inst)
{
    (void)inst;
}

static void abi_destroy(obx_instance *inst)
{
    free(inst);
}

#endif

/* A definition as a newer minor version might have it: fields appended. */
typedef struct abi_newer_def {
    obx_driver_def base;
    void (*future_callback)(obx_instance *inst);
    uint64_t future_flags;
} abi_newer_def;

#if defined(ABI_NEWER)
static const abi_newer_def abi_def_newer = {
    .base = {.magic = OBX_DRIVER_MAGIC,
             .abi_major = OBX_ABI_MAJOR,
             .abi_minor = OBX_ABI_MINOR + 1,
             .struct_size = sizeof(abi_newer_def),
             .name = "abi_test",
             .version = "0",
             .description = "loader test driver",
             .create = abi_create,
             .publish_batch = abi_publish,
             .flush = abi_flush,
             .close = abi_close,
             .destroy = abi_destroy},
    .future_flags = 0xdeadbeef,
};
#define ABI_DEF (&abi_def_newer.base)
#elif !defined(ABI_NO_ENTRY)
#define ABI_V_MAGIC OBX_DRIVER_MAGIC
#define ABI_V_MAJOR OBX_ABI_MAJOR
#define ABI_V_MINOR OBX_ABI_MINOR
#define ABI_V_SIZE sizeof(obx_driver_def)
#define ABI_V_FLUSH abi_flush
#if defined(ABI_OLD)
#undef ABI_V_MINOR
#undef ABI_V_SIZE
#define ABI_V_MINOR 0
#define ABI_V_SIZE (offsetof(obx_driver_def, destroy) + sizeof(void (*)(obx_instance *)))
#elif defined(ABI_MAJOR)
#undef ABI_V_MAJOR
#define ABI_V_MAJOR (OBX_ABI_MAJOR + 1)
#elif defined(ABI_NO_FLUSH)
#undef ABI_V_FLUSH
#define ABI_V_FLUSH NULL
#elif defined(ABI_MAGIC)
#undef ABI_V_MAGIC
#define ABI_V_MAGIC 0x12345678u
#elif defined(ABI_SMALL)
#undef ABI_V_SIZE
#define ABI_V_SIZE 16
#endif
static const obx_driver_def abi_def = {
    .magic = ABI_V_MAGIC,
    .abi_major = ABI_V_MAJOR,
    .abi_minor = ABI_V_MINOR,
    .struct_size = ABI_V_SIZE,
    .name = "abi_test",
    .version = "0",
    .description = "loader test driver",
    .create = abi_create,
    .publish_batch = abi_publish,
    .flush = ABI_V_FLUSH,
    .close = abi_close,
    .destroy = abi_destroy,
};
#define ABI_DEF (&abi_def)
#endif

#if defined(ABI_NO_ENTRY)
/* Exports something, but not the entry point. */
OBX_DRIVER_EXPORT int obx_driver_entry_typo(void)
{
    return 0;
}
#else
OBX_DRIVER_EXPORT const obx_driver_def *obx_driver_entry(void)
{
    return ABI_DEF;
}
#endif
