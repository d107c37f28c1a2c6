/* include/obx/driver.h, driver_util.h and envelope.h must compile alone as
 * C99 -pedantic -Werror. */
#include "obx/driver.h"
#include "obx/driver_util.h"
#include "obx/envelope.h"

/* The envelope helper used as a driver would, so its inline bodies are compiled. */
size_t hdr_envelope(const obx_message *m);

size_t hdr_envelope(const obx_message *m)
{
    obx_envelope env;
    return obx_envelope_fill(&env, m, OBX_ENVELOPE_HTTP, OBX_ENVELOPE_ALL);
}

static obx_instance *hdr_create(const obx_host *host, char *errstr, size_t errstr_size)
{
    (void)host;
    (void)errstr;
    (void)errstr_size;
    return NULL;
}

static const obx_driver_def hdr_def = {
    OBX_DRIVER_DEF_HEAD,
    .name = "header-check",
    .create = hdr_create,
};

OBX_DRIVER_EXPORT const obx_driver_def *obx_driver_entry(void);

const obx_driver_def *obx_driver_entry(void)
{
    return &hdr_def;
}
