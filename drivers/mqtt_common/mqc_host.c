/*
 * MQTT 5 drivers: refusals, the connect log line and the instance's locks,
 * alike in both (the host reads the same lines from either driver).
 */
#include <errno.h>
#include <stdio.h>
#include <time.h>

#include "mqc_clock.h"
#include "mqc_host.h"
#include "mqc_verdict.h"

obx_status mqc_refuse(const obx_host *host, int has_refuse, pthread_mutex_t *mu, uint64_t *n_failed,
                      const obx_message *m, obx_status status, const char *why)
{
    if (has_refuse) {
        host->refuse(host->host_ctx, m->token, 0, why);
        return status;
    }
    if (status != OBX_PERMANENT)
        return status;
    host->log(host->host_ctx, OBX_LOG_WARN, "event %s: %s (destination \"%.200s\")", m->event_id,
              why, m->destination);
    pthread_mutex_lock(mu);
    (*n_failed)++;
    host->complete(host->host_ctx, m->token, OBX_PERMANENT, 0, why);
    pthread_mutex_unlock(mu);
    return OBX_OK;
}

void mqc_log_connected(const obx_host *host, const char *url_shown, const char *client_id,
                       int attempts, int ever_connected)
{
    if (attempts > 1 || ever_connected)
        host->log(host->host_ctx, OBX_LOG_INFO, "connected to %s as %s after %d attempt(s)",
                  url_shown, client_id, attempts);
    else
        host->log(host->host_ctx, OBX_LOG_INFO, "connected to %s as %s", url_shown, client_id);
}

void mqc_wait_connected_locked(pthread_mutex_t *mu, pthread_cond_t *cond, const int *connected,
                               const int *closed, int64_t timeout_ms)
{
    if (timeout_ms <= 0)
        return;
    struct timespec ts;
    mqc_abstime(timeout_ms, &ts);
    while (!*connected && !*closed)
        if (pthread_cond_timedwait(cond, mu, &ts) == ETIMEDOUT)
            break;
}

int mqc_first_connect_refused(pthread_mutex_t *mu, pthread_cond_t *cond, const int *connected,
                              const char *last_err, const int *last_code, const char *url_shown,
                              char *errstr, size_t errstr_size)
{
    struct timespec ts;
    mqc_abstime(MQC_FIRST_CONNECT_WAIT_MS, &ts);
    pthread_mutex_lock(mu);
    while (!*connected && !last_err[0])
        if (pthread_cond_timedwait(cond, mu, &ts) == ETIMEDOUT)
            break;
    int refused = !*connected && mqc_connack_fatal(*last_code);
    if (refused)
        snprintf(errstr, errstr_size, "broker %s refused the connection: %s", url_shown, last_err);
    pthread_mutex_unlock(mu);
    return refused;
}

void mqc_sync_init(pthread_mutex_t *mu, pthread_cond_t *cond, pthread_cond_t *idle)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(cond, &ca);
    pthread_cond_init(idle, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(mu, NULL);
}

void mqc_sync_destroy(pthread_mutex_t *mu, pthread_cond_t *cond, pthread_cond_t *idle)
{
    pthread_cond_destroy(cond);
    pthread_cond_destroy(idle);
    pthread_mutex_destroy(mu);
}
