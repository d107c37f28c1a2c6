/*
 * MQTT 5 drivers: reading the options both drivers take alike. The names
 * mean the same in both (drivers/mqtt/README.md); what a client library
 * needs of them is each driver's.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "mqc_clock.h"
#include "mqc_conf.h"
#include "obx/cloudevents.h"

/* Only used to make client ids unique within a process, across both drivers. */
static atomic_uint mqc_instance_seq;

const obx_option_spec *mqc_spec(const mqc_option_table *t, const char *name)
{
    for (size_t i = 0; t->options[i].name; i++)
        if (strcmp(t->options[i].name, name) == 0)
            return &t->specs[i];
    return NULL;
}

int mqc_opt_int(const obx_host *host, const mqc_option_table *t, const char *name, int64_t *out,
                char *errstr, size_t errstr_size)
{
    const obx_option_spec *sp = mqc_spec(t, name);
    int64_t v = 0;
    if (!host->get_int(host->host_ctx, name, &v)) {
        if (!sp || !sp->default_value)
            return 0;
        v = strtoll(sp->default_value, NULL, 10);
    }
    if (sp && sp->min < sp->max && ((double)v < sp->min || (double)v > sp->max)) {
        snprintf(errstr, errstr_size, "option %s = %lld: must be between %.0f and %.0f", name,
                 (long long)v, sp->min, sp->max);
        return -1;
    }
    *out = v;
    return 1;
}

void mqc_url_mask(const char *url, char *out, size_t size)
{
    const char *rest = strstr(url, "://");
    const char *at = rest ? strrchr(rest + 3, '@') : NULL;
    if (!at)
        snprintf(out, size, "%s", url);
    else
        snprintf(out, size, "%.*s***%s", (int)(rest + 3 - url), url, at);
}

int mqc_url_read(const obx_host *host, const char **url, char *shown, size_t shown_size,
                 char *errstr, size_t errstr_size)
{
    *url = NULL;
    if (!host->get_string(host->host_ctx, "url", url) || !*url || !**url) {
        snprintf(errstr, errstr_size,
                 "option url is required (tcp://host:port or ssl://host:port)");
        return -1;
    }
    mqc_url_mask(*url, shown, shown_size);
    return 0;
}

int mqc_qos_read(const obx_host *host, const mqc_option_table *t, int *qos, char *errstr,
                 size_t errstr_size)
{
    int64_t v;
    if (host->get_int(host->host_ctx, "qos", &v) && v == 0) {
        snprintf(errstr, errstr_size,
                 "option qos = 0 is refused: QoS 0 has no acknowledgement, so the relay could "
                 "never know a message was delivered (use 1 or 2)");
        return -1;
    }
    if (mqc_opt_int(host, t, "qos", &v, errstr, errstr_size) < 0)
        return -1;
    *qos = (int)v;
    return 0;
}

int mqc_reconnect_read(const obx_host *host, const mqc_option_table *t, int64_t *min_ms,
                       int64_t *max_ms, char *errstr, size_t errstr_size)
{
    if (mqc_opt_int(host, t, "reconnect_min_ms", min_ms, errstr, errstr_size) < 0 ||
        mqc_opt_int(host, t, "reconnect_max_ms", max_ms, errstr, errstr_size) < 0)
        return -1;
    if (*max_ms < *min_ms) {
        snprintf(errstr, errstr_size,
                 "option reconnect_max_ms = %lld: must be at least reconnect_min_ms (%lld)",
                 (long long)*max_ms, (long long)*min_ms);
        return -1;
    }
    return 0;
}

int mqc_template_read(const obx_host *host, const char *name, const char **out, char *errstr,
                      size_t errstr_size)
{
    const char *s = NULL;
    char why[256];
    if (!host->get_string(host->host_ctx, name, &s) || !s || !*s)
        return 0;
    if (obx_ce_template_check(s, why, sizeof why) < 0) {
        snprintf(errstr, errstr_size, "option %s: %s", name, why);
        return -1;
    }
    *out = s;
    return 0;
}

int mqc_client_id_make(const obx_host *host, const mqc_option_table *t, char *out, size_t size,
                       char *errstr, size_t errstr_size)
{
    const char *prefix = NULL;
    if (!host->get_string(host->host_ctx, "client_id_prefix", &prefix) || !prefix)
        prefix = mqc_spec(t, "client_id_prefix")->default_value;
    uint32_t rnd = 0;
    if (getrandom(&rnd, sizeof rnd, GRND_NONBLOCK) != (ssize_t)sizeof rnd)
        rnd = (uint32_t)mqc_now_ms() ^ (uint32_t)(uintptr_t)out;
    unsigned seq = atomic_fetch_add(&mqc_instance_seq, 1) + 1;
    int n = snprintf(out, size, "%s%ld-%u-%08x", prefix, (long)getpid(), seq, rnd);
    if (n < 0 || (size_t)n >= size) {
        snprintf(errstr, errstr_size, "option client_id_prefix is too long");
        return -1;
    }
    return 0;
}

int mqc_no_native_properties(const obx_host *host, char *errstr, size_t errstr_size)
{
    const char *pk, *pv;
    if (host->get_property(host->host_ctx, 0, &pk, &pv)) {
        snprintf(errstr, errstr_size,
                 "no native properties are taken (got \"%.100s\"); use options", pk);
        return -1;
    }
    return 0;
}
