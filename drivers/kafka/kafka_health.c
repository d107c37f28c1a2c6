/*
 * Reachability of the cluster. librdkafka reports ALL_BROKERS_DOWN through
 * the error callback (served by rd_kafka_poll on the host's thread) and then
 * reconnects by itself, quietly. The driver logs once when every broker is
 * down and once when the cluster is back: the first acknowledged delivery or
 * a successful probe. While it is down, the per-connection transport errors
 * are logged at debug level only.
 */
#include <stdio.h>
#include <string.h>

#include "kafka_int.h"

obx_status kafka_unavailable(const obx_instance *inst)
{
    return OBX_HOST_HAS(inst->host, refuse) ? OBX_UNAVAILABLE : OBX_RETRIABLE;
}

void kafka_mark_back(obx_instance *inst, const char *how)
{
    if (!atomic_exchange(&inst->down, 0))
        return;
    inst->host->log(inst->host->host_ctx, OBX_LOG_INFO, "brokers are reachable again (%s)", how);
}

void kafka_error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    obx_instance *inst = opaque;
    (void)rk;
    if (err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN) {
        snprintf(inst->down_reason, sizeof inst->down_reason, "%s", reason);
        if (!atomic_exchange(&inst->down, 1))
            inst->host->log(inst->host->host_ctx, OBX_LOG_WARN,
                            "all brokers are down (%s); reconnecting", reason);
        return;
    }
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
        inst->host->log(inst->host->host_ctx, OBX_LOG_ERROR, "fatal error: %s", reason);
        return;
    }
    /* Transport errors are normal while brokers are away: messages retry by themselves. */
    int quiet = atomic_load(&inst->down) &&
                (err == RD_KAFKA_RESP_ERR__TRANSPORT || err == RD_KAFKA_RESP_ERR__RESOLVE);
    inst->host->log(inst->host->host_ctx, quiet ? OBX_LOG_DEBUG : OBX_LOG_WARN, "%s: %s",
                    rd_kafka_err2name(err), reason);
}

/* May run on librdkafka's own threads: reads only the atomic flag. */
void kafka_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    obx_instance *inst = rd_kafka_opaque(rk);
    /* errors that matter also reach kafka_error_cb; keep these one step lower,
     * and out of the way while the cluster is known to be down */
    obx_log_level lvl = level <= 4 ? OBX_LOG_WARN : level <= 6 ? OBX_LOG_INFO : OBX_LOG_DEBUG;
    if (atomic_load(&inst->down))
        lvl = OBX_LOG_DEBUG;
    inst->host->log(inst->host->host_ctx, lvl, "librdkafka %s: %s", fac, buf);
}

/* Can a broker answer a metadata request within timeout_ms? It asks for the
 * brokers only (no topics), so it is cheap. */
obx_status kafka_probe(obx_instance *inst, int timeout_ms)
{
    const struct rd_kafka_metadata *md = NULL;
    if (inst->closed)
        return OBX_UNAVAILABLE;
    rd_kafka_poll(inst->rk, 0); /* take ALL_BROKERS_DOWN and reports that are in */
    rd_kafka_resp_err_t err =
        rd_kafka_metadata(inst->rk, 0, NULL, &md, timeout_ms > 0 ? timeout_ms : 1);
    if (err) {
        inst->host->log(inst->host->host_ctx, OBX_LOG_DEBUG, "probe: %s", rd_kafka_err2str(err));
        return OBX_UNAVAILABLE;
    }
    rd_kafka_metadata_destroy(md);
    kafka_mark_back(inst, "probe");
    return OBX_OK;
}
