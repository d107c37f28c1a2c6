/*
 * MQTT driver internals (paho-mqtt-c asynchronous client, MQTT 5).
 *
 * Threads: the host thread (create, publish_batch, flush, close, destroy),
 * paho's send/receive threads (every MQTTAsync callback) and the driver's own
 * timer thread (publish timeouts, reconnects). All instance state below the
 * mutex is guarded by it.
 *
 * Lock order: paho calls our callbacks holding its own global mutex, and we
 * then take inst->mu, so inst->mu is never held while calling into paho.
 * host->complete is called with inst->mu held: that is what makes "no
 * completion after close returns" and "exactly once" simple to prove.
 */
#ifndef OBX_MQTT_INT_H
#define OBX_MQTT_INT_H

#include <MQTTAsync.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "obx/driver.h"

#define MQTT_DETAIL_MAX 160

typedef enum mqtt_slot_state {
    MQTT_SLOT_FREE = 0,
    MQTT_SLOT_SENDING, /* reserved; MQTTAsync_sendMessage has not returned yet */
    MQTT_SLOT_INFLIGHT /* paho token known; waiting for onSuccess5/onFailure5 */
} mqtt_slot_state;

/* A callback that arrived while the slot was still SENDING (paho raced us). */
typedef struct mqtt_early {
    int used;
    int ptoken;
    obx_status status;
    int code;
    char detail[MQTT_DETAIL_MAX];
} mqtt_early;

struct obx_instance;

/* One in-flight publish; the slot address is the paho callback context. */
typedef struct mqtt_slot {
    struct obx_instance *inst;
    mqtt_slot_state state;
    uint64_t token;      /* the host's token */
    int ptoken;          /* paho's token (the MQTT packet id) */
    int64_t deadline_ms; /* monotonic; publish_timeout_ms after send */
    mqtt_early early[2];
} mqtt_slot;

struct obx_instance {
    const obx_host *host;
    MQTTAsync client;
    char client_id[128];
    char url[512];

    /* options */
    int qos;
    int window;
    int64_t publish_timeout_ms;
    int64_t window_wait_ms;   /* how long one publish_batch may wait for window space */
    const char *content_type; /* NULL: use the message's own */
    int64_t message_expiry_s; /* 0: none */
    int64_t reconnect_min_ms, reconnect_max_ms;
    MQTTAsync_connectOptions conn_opts;
    MQTTAsync_SSLOptions ssl_opts;

    /* publish scratch, used by the host thread only */
    MQTTProperty *props;
    size_t props_cap;

    pthread_t timer;
    int timer_started;

    pthread_mutex_t mu;
    pthread_cond_t cond; /* completions, connection state changes, stop */
    mqtt_slot *slots;
    int *free_idx; /* stack of free slot indexes */
    int free_n;
    int inflight; /* slots SENDING or INFLIGHT */
    int connected;
    int connecting;
    int connect_attempts;  /* since the last success */
    int last_connect_code; /* paho or MQTT reason code of the last failure */
    char last_connect_err[MQTT_DETAIL_MAX];
    int ever_connected;
    int64_t next_connect_ms;
    int64_t backoff_ms;
    int disconnect_done;
    int stopping;  /* timer thread must exit */
    int closed;    /* close has started: callbacks are ignored from now on */
    int abandoned; /* timed-out publishes paho may still hold */

    /* counters, for the log line at close */
    uint64_t n_ok, n_no_subscribers, n_failed, n_timeout, n_lost;
};

typedef struct obx_instance mqtt_inst;

/* mqtt.c */
int64_t mqtt_now_ms(void);
void mqtt_abstime(int64_t ms_from_now, struct timespec *ts);
/* Complete a slot (inst->mu held): host->complete, free the slot, signal. */
void mqtt_complete_locked(mqtt_inst *inst, mqtt_slot *slot, obx_status status, int code,
                          const char *detail);

/* mqtt_conf.c */
extern const obx_option mqtt_options[];
/* Reads and checks the options into inst; -1 with errstr (never a secret). */
int mqtt_read_options(mqtt_inst *inst, char *errstr, size_t errstr_size);

/* mqtt_conn.c: paho callbacks (context = inst) and the timer thread */
void mqtt_on_connect_ok(void *ctx, MQTTAsync_successData5 *resp);
void mqtt_on_connect_fail(void *ctx, MQTTAsync_failureData5 *resp);
void mqtt_on_connection_lost(void *ctx, char *cause);
void mqtt_on_disconnected(void *ctx, MQTTProperties *props, enum MQTTReasonCodes reason);
void *mqtt_timer_main(void *arg);
/* Completes every INFLIGHT slot RETRIABLE with detail (mu held); returns how many. */
int mqtt_fail_all_locked(mqtt_inst *inst, const char *detail);

/* mqtt_publish.c */
obx_status mqtt_publish_batch(mqtt_inst *inst, const obx_message *msgs, size_t count,
                              obx_status *accept);
/* A reason code >= 0x80 classified: PERMANENT or RETRIABLE. */
obx_status mqtt_classify_reason(int reason);
/* NULL when the topic can be published, else why not. */
const char *mqtt_topic_problem(const char *topic);

#endif
