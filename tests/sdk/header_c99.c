/* include/obx/driver.h and driver_util.h must compile alone as C99 -pedantic -Werror. */
#include "obx/driver.h"
#include "obx/driver_util.h"

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
