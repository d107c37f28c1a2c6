/* include/obx/driver.h, driver_util.h, envelope.h and cloudevents.h must
 * compile alone as C99 -pedantic -Werror. */
#include "obx/cloudevents.h"
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

/* The CloudEvents helper as a driver uses it: its options, specs and mapping. */
static const obx_option hdr_options[] = {OBX_CE_OPTIONS, {NULL, 0, 0, NULL}};
static const obx_option_spec hdr_specs[] = {OBX_CE_OPTION_SPECS, {NULL, 0, 0, NULL, NULL}};
size_t hdr_cloudevent(const obx_host *host, const obx_message *m);

size_t hdr_cloudevent(const obx_host *host, const obx_message *m)
{
    obx_ce_config cfg;
    obx_ce_event ce;
    char err[128];
    obx_ce_config_read(host, &cfg);
    if (obx_ce_fill(&ce, &cfg, host, m, OBX_CE_HTTP, err, sizeof err) != 0)
        return 0;
    obx_ce_event_free(&ce);
    return ce.count;
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
    .options = hdr_options,
    .option_specs = hdr_specs,
    .create = hdr_create,
};

OBX_DRIVER_EXPORT const obx_driver_def *obx_driver_entry(void);

const obx_driver_def *obx_driver_entry(void)
{
    return &hdr_def;
}
