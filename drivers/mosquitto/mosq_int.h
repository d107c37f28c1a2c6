/*
 * mosquitto driver internals (libmosquitto 2.0, MQTT 5).
 *
 * Threads: the host thread (create, publish_batch, flush, probe, close,
 * destroy) and the instance's own loop thread (mosq_loop.c), which owns the
 * network: it connects, runs mosquitto_loop, takes every libmosquitto
 * callback, times out publishes and, after a lost connection, replaces the
 * client by a fresh one (libmosquitto would send again, after a reconnect,
 * what the driver has already given back: a later event of an aggregate
 * could then overtake an earlier one).
 *
 * Locking: inst->mu guards everything below it, and the client pointer:
 * the host thread hands publishes to libmosquitto with mu held, so a PUBACK
 * (whose callback takes mu) always finds its message tracked, and the loop
 * thread swaps clients only with mu held. libmosquitto calls no callback of
 * ours from inside mosquitto_publish_v5 at QoS 1/2, and holds none of the
 * locks publish takes while calling one, so this order cannot deadlock.
 * host->complete is called with mu held: "exactly once" and "none after
 * close" are proved in one place (mosq_track.c).
 */
#ifndef OBX_MOSQ_INT_H
#define OBX_MOSQ_INT_H

#include <mosquitto.h>
#include <mqtt_protocol.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "mqc_shape.h"
#include "obx/cloudevents.h"
#include "obx/driver.h"

#define MOSQ_DETAIL_MAX 160

/* One accepted message the broker has not acknowledged yet, in send order. */
typedef struct mosq_entry {
    uint64_t token;
    uint64_t agg;        /* the aggregate's hash: the ordering scope */
    int64_t deadline_ms; /* monotonic: publish_timeout_ms after the hand-over */
    int mid;             /* libmosquitto's message id (the MQTT packet id) */
    int done;            /* completed; popped once it reaches the head */
    obx_status doomed;   /* OK, or what an earlier failure of its aggregate makes it */
} mosq_entry;

/* The entries in flight: a ring in send order (PUBACKs come in that order). */
typedef struct mosq_track {
    mosq_entry *e;
    size_t cap, head, n; /* n counts done ones not yet popped too */
    size_t live;         /* not done */
} mosq_track;

typedef struct mosq_url {
    char host[256];
    int port;
    int tls;
    char user[128], pass[128]; /* from user:password@, when given */
} mosq_url;

struct obx_instance {
    const obx_host *host;
    obx_status unavailable; /* OBX_UNAVAILABLE, or RETRIABLE for a 1.0 host */
    int has_refuse;

    /* options (mosq_conf.c) */
    mosq_url url;
    char url_shown[512]; /* the url with any user:password@ masked */
    char client_id[128];
    const char *username, *password;
    const char *tls_ca, *tls_cert, *tls_key, *tls_key_password;
    int tls_verify;
    int qos;
    int max_in_flight;
    int keepalive_s;
    int64_t publish_timeout_ms, window_wait_ms, connect_timeout_ms;
    int64_t reconnect_min_ms, reconnect_max_ms;
    int64_t message_expiry_s; /* 0: none */
    mqc_templates tpl;        /* content_type; NULL: the row's own */
    obx_ce_config ce;

    pthread_t loop;
    int loop_started;

    pthread_mutex_t mu;
    pthread_cond_t cond;    /* connection state changes, stop */
    pthread_cond_t idle;    /* nothing left in flight (flush) */
    struct mosquitto *mosq; /* the current client; swapped by the loop thread with mu held */
    struct mosquitto *dead; /* a dropped client, destroyed by the loop thread without mu */
    mosq_track track;
    int connected;  /* CONNACK 0 seen, connection not lost since */
    int connecting; /* a connect is under way (loop thread) */
    int kick;       /* probe: connect now, skip the backoff */
    int stopping;   /* the loop thread must exit */
    int closed;     /* close has started: callbacks complete nothing */
    int ever_connected;
    int connect_attempts;
    int last_connect_code; /* CONNACK reason or libmosquitto error of the last failure */
    char last_connect_err[MOSQ_DETAIL_MAX];
    char lost_why[MOSQ_DETAIL_MAX]; /* the current client's disconnect reason, if told */
    int64_t backoff_ms;

    /* counters, logged at close */
    uint64_t n_ok, n_no_subscribers, n_failed, n_timeout, n_lost, n_batches, n_clients;
};

typedef struct obx_instance mosq_inst;

#endif
