/*
 * mosquitto driver: the loop thread, one per instance. It owns the network:
 * connects (mosquitto_connect_async) with exponential backoff, also after a
 * failed first attempt, runs mosquitto_loop (which libmosquitto wakes when
 * the host thread queues a publish), completes publishes never acknowledged
 * within publish_timeout_ms, and after a lost connection gives back what was
 * in flight UNAVAILABLE and replaces the client by a fresh one, so nothing
 * the driver gave back is ever sent again by libmosquitto.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "mosq_loop.h"
#include "mosq_track.h"
#include "mqc_host.h"

#define MOSQ_TICK_MS 100

/* Ends the current client (mu held; the host thread publishes only with mu
 * held, so nobody else is inside it): what was in flight goes back
 * UNAVAILABLE, the next connect waits out the backoff. */
static void mosq_drop_locked(mosq_inst *inst, const char *why)
{
    char detail[MOSQ_DETAIL_MAX];
    if (inst->connected) {
        snprintf(detail, sizeof detail, "%s before the acknowledgement", why);
        int n = mosq_track_fail_all(inst, inst->unavailable, detail);
        inst->n_lost += (uint64_t)n;
        inst->host->log(inst->host->host_ctx, OBX_LOG_WARN,
                        "%s (%s); %d publish(es) in flight given back, reconnecting", why,
                        inst->url_shown, n);
    } else {
        inst->last_connect_code = inst->last_connect_err[0] ? inst->last_connect_code : -1;
        if (!inst->last_connect_err[0])
            snprintf(inst->last_connect_err, sizeof inst->last_connect_err, "%s", why);
        /* the first failure and then every 10th: an outage should not flood the log */
        if (inst->connect_attempts % 10 == 1 && !inst->stopping)
            inst->host->log(inst->host->host_ctx, OBX_LOG_WARN,
                            "connect to %s failed (attempt %d): %s; retrying in %lld ms",
                            inst->url_shown, inst->connect_attempts, inst->last_connect_err,
                            (long long)inst->backoff_ms);
    }
    inst->connected = inst->connecting = 0;
    if (inst->mosq) { /* destroyed without mu (it takes libmosquitto's callback lock) */
        inst->dead = inst->mosq;
        inst->mosq = NULL;
    }
    pthread_cond_broadcast(&inst->cond);
}

/* Destroys a dropped client (mu held on entry and exit, released around:
 * the callbacks take libmosquitto's callback lock, then mu). */
static void mosq_bury_locked(mosq_inst *inst)
{
    struct mosquitto *m = inst->dead;
    if (!m)
        return;
    inst->dead = NULL;
    pthread_mutex_unlock(&inst->mu);
    mosquitto_destroy(m);
    pthread_mutex_lock(&inst->mu);
}

/* Starts a connect with a fresh client (mu held on entry and exit). */
static void mosq_start_connect_locked(mosq_inst *inst)
{
    char err[MOSQ_DETAIL_MAX];
    inst->connect_attempts++;
    inst->last_connect_err[0] = inst->lost_why[0] = 0;
    pthread_mutex_unlock(&inst->mu); /* made without mu, as it is destroyed */
    struct mosquitto *fresh = mosq_client_new(inst, err, sizeof err);
    pthread_mutex_lock(&inst->mu);
    if (!fresh || inst->stopping) {
        if (fresh)
            mosquitto_destroy(fresh); /* never used: no callback can hold its locks */
        mosq_drop_locked(inst, fresh ? "closing" : err);
        return;
    }
    inst->mosq = fresh;
    inst->n_clients++;
    inst->connecting = 1;
    struct mosquitto *m = inst->mosq;
    pthread_mutex_unlock(&inst->mu);
    /* resolves the name and starts a non-blocking TCP connect; the CONNECT
     * packet goes out from mosquitto_loop */
    int rc = mosquitto_connect_async(m, inst->url.host, inst->url.port, inst->keepalive_s);
    pthread_mutex_lock(&inst->mu);
    if (rc != MOSQ_ERR_SUCCESS && rc != MOSQ_ERR_CONN_PENDING) {
        snprintf(err, sizeof err, "%s",
                 rc == MOSQ_ERR_ERRNO ? strerror(errno) : mosquitto_strerror(rc));
        mosq_drop_locked(inst, err);
    }
}

/* After a failure, the backoff: when the next connect may start. */
static int64_t mosq_backoff_locked(mosq_inst *inst)
{
    int64_t at = mqc_now_ms() + inst->backoff_ms;
    inst->backoff_ms *= 2;
    if (inst->backoff_ms > inst->reconnect_max_ms)
        inst->backoff_ms = inst->reconnect_max_ms;
    return at;
}

/* A publish never acknowledged: the broker is hung or overloaded (pushback).
 * Everything in flight goes back and the connection is made again, so
 * libmosquitto holds nothing the relay will send once more. */
static int mosq_timed_out_locked(mosq_inst *inst, int64_t now)
{
    mosq_entry *e = mosq_track_oldest(inst);
    if (!e || e->deadline_ms > now)
        return 0;
    char why[MOSQ_DETAIL_MAX];
    snprintf(why, sizeof why, "no acknowledgement within %lld ms",
             (long long)inst->publish_timeout_ms);
    inst->n_timeout += inst->track.live;
    mosq_drop_locked(inst, why);
    return 1;
}

/* Sends DISCONNECT and ends the client at close (mu held). */
static void mosq_goodbye_locked(mosq_inst *inst)
{
    mosq_bury_locked(inst);
    struct mosquitto *m = inst->mosq;
    if (!m)
        return;
    if (inst->connected) {
        pthread_mutex_unlock(&inst->mu);
        if (mosquitto_disconnect_v5(m, 0, NULL) == MOSQ_ERR_SUCCESS)
            for (int i = 0; i < 5 && mosquitto_loop(m, 20, 1) == MOSQ_ERR_SUCCESS; i++)
                ;
        pthread_mutex_lock(&inst->mu);
    }
    inst->connected = inst->connecting = 0;
    inst->mosq = NULL;
    pthread_mutex_unlock(&inst->mu);
    mosquitto_destroy(m);
    pthread_mutex_lock(&inst->mu);
}

void *mosq_loop_main(void *arg)
{
    mosq_inst *inst = arg;
    int64_t next_connect_ms = 0, connect_deadline_ms = 0;
    pthread_mutex_lock(&inst->mu);
    while (!inst->stopping) {
        mosq_bury_locked(inst);
        int64_t now = mqc_now_ms();
        if (!inst->mosq) {
            if (now < next_connect_ms && !inst->kick) {
                struct timespec ts;
                mqc_abstime(next_connect_ms - now, &ts);
                pthread_cond_timedwait(&inst->cond, &inst->mu, &ts);
                continue;
            }
            inst->kick = 0;
            mosq_start_connect_locked(inst);
            if (!inst->mosq)
                next_connect_ms = mosq_backoff_locked(inst);
            connect_deadline_ms = mqc_now_ms() + inst->connect_timeout_ms;
            continue;
        }
        struct mosquitto *m = inst->mosq;
        pthread_mutex_unlock(&inst->mu);
        int rc = mosquitto_loop(m, MOSQ_TICK_MS, 1);
        pthread_mutex_lock(&inst->mu);
        if (inst->stopping)
            break;
        now = mqc_now_ms();
        if (rc != MOSQ_ERR_SUCCESS || (inst->connecting && inst->last_connect_err[0])) {
            char why[MOSQ_DETAIL_MAX];
            if (inst->lost_why[0])
                snprintf(why, sizeof why, "%s", inst->lost_why);
            else if (rc == MOSQ_ERR_ERRNO)
                snprintf(why, sizeof why, "connection lost: %s", strerror(errno));
            else
                snprintf(why, sizeof why, "connection lost: %s", mosquitto_strerror(rc));
            mosq_drop_locked(inst, why);
            next_connect_ms = mosq_backoff_locked(inst);
        } else if (inst->connecting && now >= connect_deadline_ms) {
            char why[MOSQ_DETAIL_MAX];
            snprintf(why, sizeof why, "no CONNACK within %lld ms",
                     (long long)inst->connect_timeout_ms);
            mosq_drop_locked(inst, why);
            next_connect_ms = mosq_backoff_locked(inst);
        } else if (inst->connected && mosq_timed_out_locked(inst, now)) {
            next_connect_ms = mosq_backoff_locked(inst);
        }
    }
    mosq_goodbye_locked(inst);
    pthread_mutex_unlock(&inst->mu);
    return NULL;
}

obx_status mosq_probe(mosq_inst *inst, int timeout_ms)
{
    pthread_mutex_lock(&inst->mu);
    if (!inst->connected && !inst->mosq && !inst->closed) {
        inst->kick = 1; /* the host is asking now: no need to sit out the backoff */
        pthread_cond_broadcast(&inst->cond);
    }
    mqc_wait_connected_locked(&inst->mu, &inst->cond, &inst->connected, &inst->closed, timeout_ms);
    obx_status st = inst->connected && !inst->closed ? OBX_OK : OBX_UNAVAILABLE;
    pthread_mutex_unlock(&inst->mu);
    return st;
}
