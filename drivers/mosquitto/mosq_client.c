/*
 * mosquitto driver: one libmosquitto client (MQTT 5, clean start, the
 * driver's options) and its callbacks, which libmosquitto runs on the
 * instance's loop thread. A callback of a client that is no longer the
 * instance's (or after close) changes nothing.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mosq_loop.h"
#include "mosq_track.h"
#include "mqc_host.h"
#include "mqc_verdict.h"

static pthread_once_t mosq_once = PTHREAD_ONCE_INIT;

static void mosq_lib_init_once(void)
{
    mosquitto_lib_init(); /* never cleaned up: other instances may still live */
}

void mosq_lib_init(void)
{
    pthread_once(&mosq_once, mosq_lib_init_once);
}

/* ------------------------------------------------------------ callbacks */

static void mosq_on_connect(struct mosquitto *m, void *obj, int rc, int flags,
                            const mosquitto_property *props)
{
    mosq_inst *inst = obj;
    (void)flags, (void)props; /* libmosquitto applies Receive Maximum and Maximum Packet Size */
    pthread_mutex_lock(&inst->mu);
    if (!inst->closed && m == inst->mosq) {
        if (rc == 0) {
            inst->connected = 1;
            inst->connecting = 0;
            inst->backoff_ms = inst->reconnect_min_ms;
            inst->last_connect_err[0] = 0;
            mqc_log_connected(inst->host, inst->url_shown, inst->client_id, inst->connect_attempts,
                              inst->ever_connected);
            inst->connect_attempts = 0;
            inst->ever_connected = 1;
        } else {
            inst->last_connect_code = rc;
            snprintf(inst->last_connect_err, sizeof inst->last_connect_err, "CONNACK 0x%02x %s",
                     (unsigned)rc, mosquitto_reason_string(rc));
        }
        pthread_cond_broadcast(&inst->cond);
    }
    pthread_mutex_unlock(&inst->mu);
}

static void mosq_on_disconnect(struct mosquitto *m, void *obj, int rc,
                               const mosquitto_property *props)
{
    mosq_inst *inst = obj;
    (void)props;
    pthread_mutex_lock(&inst->mu);
    if (m == inst->mosq && !inst->lost_why[0]) {
        /* a DISCONNECT from the server carries its reason code (>= 0x80);
         * anything else is libmosquitto's own error number */
        if (rc >= 0x80)
            snprintf(inst->lost_why, sizeof inst->lost_why, "server sent DISCONNECT 0x%02x %s",
                     (unsigned)rc, mosquitto_reason_string(rc));
        else if (rc != 0)
            snprintf(inst->lost_why, sizeof inst->lost_why, "connection lost: %s",
                     mosquitto_strerror(rc));
    }
    pthread_mutex_unlock(&inst->mu);
}

static void mosq_on_publish(struct mosquitto *m, void *obj, int mid, int reason,
                            const mosquitto_property *props)
{
    mosq_inst *inst = obj;
    char detail[MOSQ_DETAIL_MAX];
    pthread_mutex_lock(&inst->mu);
    mosq_entry *e = !inst->closed && m == inst->mosq ? mosq_track_find(inst, mid) : NULL;
    if (!e) {
        /* completed already: timed out, or given back with a lost connection */
    } else if (reason < 0x80) {
        if (reason == 0x10 && inst->n_no_subscribers++ == 0)
            inst->host->log(inst->host->host_ctx, OBX_LOG_DEBUG,
                            "broker reports no matching subscribers (0x10); counted as delivered");
        mosq_track_complete(inst, e, OBX_OK, reason, NULL);
    } else {
        char *rs = NULL;
        const char *pkt = inst->qos == 2 ? "PUBREC" : "PUBACK";
        mosquitto_property_read_string(props, MQTT_PROP_REASON_STRING, &rs, false);
        if (rs)
            snprintf(detail, sizeof detail, "%s 0x%02x %s: %s", pkt, (unsigned)reason,
                     mosquitto_reason_string(reason), rs);
        else
            snprintf(detail, sizeof detail, "%s 0x%02x %s", pkt, (unsigned)reason,
                     mosquitto_reason_string(reason));
        free(rs);
        obx_status st = mqc_reason_status(reason);
        mosq_track_complete(inst, e, st == OBX_UNAVAILABLE ? inst->unavailable : st, reason,
                            detail);
    }
    pthread_mutex_unlock(&inst->mu);
}

/* ------------------------------------------------------------ the client */

/* The private key's pass phrase; userdata is the client (libmosquitto's choice). */
static int mosq_pw_cb(char *buf, int size, int rwflag, void *userdata)
{
    mosq_inst *inst = mosquitto_userdata(userdata);
    (void)rwflag;
    const char *pw = inst && inst->tls_key_password ? inst->tls_key_password : "";
    int n = snprintf(buf, (size_t)size, "%s", pw);
    return n < size ? n : size - 1;
}

static int mosq_client_tls(mosq_inst *inst, struct mosquitto *m)
{
    int rc;
    if (!inst->tls_ca) /* the system's trust store, as OpenSSL's default paths */
        mosquitto_int_option(m, MOSQ_OPT_TLS_USE_OS_CERTS, 1);
    rc = mosquitto_tls_set(m, inst->tls_ca, inst->tls_ca ? NULL : "/etc/ssl/certs", inst->tls_cert,
                           inst->tls_key, mosq_pw_cb);
    if (rc == MOSQ_ERR_SUCCESS)
        rc = mosquitto_tls_opts_set(m, inst->tls_verify ? 1 : 0, NULL, NULL);
    if (rc == MOSQ_ERR_SUCCESS)
        rc = mosquitto_tls_insecure_set(m, !inst->tls_verify);
    return rc;
}

struct mosquitto *mosq_client_new(mosq_inst *inst, char *errstr, size_t errstr_size)
{
    struct mosquitto *m = mosquitto_new(inst->client_id, true, inst);
    if (!m) {
        snprintf(errstr, errstr_size, "cannot create a libmosquitto client: out of memory");
        return NULL;
    }
    int rc = mosquitto_int_option(m, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5);
    if (rc == MOSQ_ERR_SUCCESS)
        rc = mosquitto_int_option(m, MOSQ_OPT_SEND_MAXIMUM, inst->max_in_flight);
    if (rc == MOSQ_ERR_SUCCESS)
        rc = mosquitto_int_option(m, MOSQ_OPT_TCP_NODELAY, 1);
    if (rc == MOSQ_ERR_SUCCESS)
        rc = mosquitto_threaded_set(m, true); /* publishes come from the host's thread */
    if (rc == MOSQ_ERR_SUCCESS && inst->username)
        rc = mosquitto_username_pw_set(m, inst->username, inst->password);
    if (rc != MOSQ_ERR_SUCCESS) {
        snprintf(errstr, errstr_size, "cannot set up the libmosquitto client: %s",
                 mosquitto_strerror(rc));
        mosquitto_destroy(m);
        return NULL;
    }
    if (inst->url.tls && (rc = mosq_client_tls(inst, m)) != MOSQ_ERR_SUCCESS) {
        snprintf(errstr, errstr_size, "cannot set up TLS (check tls_ca, tls_cert, tls_key): %s",
                 mosquitto_strerror(rc));
        mosquitto_destroy(m);
        return NULL;
    }
    mosquitto_connect_v5_callback_set(m, mosq_on_connect);
    mosquitto_disconnect_v5_callback_set(m, mosq_on_disconnect);
    mosquitto_publish_v5_callback_set(m, mosq_on_publish);
    return m;
}
