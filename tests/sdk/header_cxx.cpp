// include/obx/driver.h (and driver_util.h, envelope.h) must compile alone as C++ (no designated initializers here:
// OBX_DRIVER_DEF_HEAD is a C99 convenience).
#include "obx/cloudevents.h"
#include "obx/driver.h"
#include "obx/driver_util.h"
#include "obx/envelope.h"

static_assert(sizeof(obx_status) == sizeof(int), "obx_status is an int-sized enum");
static_assert(offsetof(obx_driver_def, magic) == 0, "magic comes first");

static obx_driver_def make_def()
{
    obx_driver_def def = obx_driver_def();
    def.magic = OBX_DRIVER_MAGIC;
    def.abi_major = OBX_ABI_MAJOR;
    def.abi_minor = OBX_ABI_MINOR;
    def.struct_size = sizeof(obx_driver_def);
    def.name = "header-check";
    return def;
}

static const obx_driver_def hdr_def = make_def();

// The envelope helper used as a driver would, so its inline bodies are compiled as C++.
size_t hdr_envelope(const obx_message *m)
{
    obx_envelope env;
    return obx_envelope_fill(&env, m, OBX_ENVELOPE_SNAKE, OBX_ENVELOPE_STANDARD);
}

// And the CloudEvents mapping (its option macros are for C drivers).
size_t hdr_cloudevent(const obx_host *host, const obx_message *m)
{
    obx_ce_config cfg;
    obx_ce_event ce;
    char err[128];
    obx_ce_config_read(host, &cfg);
    if (obx_ce_fill(&ce, &cfg, host, m, OBX_CE_MQTT, err, sizeof err) != 0)
        return 0;
    obx_ce_event_free(&ce);
    return ce.count;
}

extern "C" OBX_DRIVER_EXPORT const obx_driver_def *obx_driver_entry(void)
{
    return &hdr_def;
}
