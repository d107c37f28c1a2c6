/*
 * MQTT driver internals (paho-mqtt-c asynchronous client, MQTT 5).
 *
 * Threads: the host thread (create, publish_batch, flush, probe, close,
 * destroy), paho's send/receive threads (every MQTTAsync callback) and the
 * driver's own timer thread (publish timeouts, reconnects). All instance state
 * below the mutex is guarded by it.
 *
 * Flow: publish_batch copies every accepted message into the driver's queue
 * and returns; the pump (mqtt_pump, run by whichever thread freed room: the
 * host thread, paho's receive thread after an acknowledgement, the timer
 * thread after a reconnect) hands queued messages to paho while fewer than
 * send_limit are unacknowledged. send_limit is max_in_flight capped by the
 * broker's Receive Maximum: paho holds a publish beyond that limit in its
 * command queue and its send thread only looks again after a 1 s timed wait,
 * which made every round of more than Receive Maximum messages cost seconds.
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

#include "mqc_shape.h"
#include "obx/cloudevents.h"
#include "obx/driver.h"

#define MQTT_DETAIL_MAX 160

/* An accepted message waiting for room in the window: an owned copy (the
 * host's message memory is valid only during publish_batch), in one block. */
typedef struct mqtt_item {
    struct mqtt_item *next;
    uint64_t token;
    uint64_t agg;      /* hash of aggregate type and id: the ordering scope */
    uint64_t seq;      /* acceptance order within the instance */
    obx_status doomed; /* OK, or what an earlier failed event of its aggregate makes it */
    char *topic;
    void *payload;
    int payload_len;
    int nprops;
    MQTTProperty *props;
} mqtt_item;

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

/* A paho client's connection callback context: a client of a lost
 * connection is retired and its late callbacks are told by gen. */
typedef struct mqtt_cctx {
    struct obx_instance *inst;
    int gen;
} mqtt_cctx;

struct mqtt_slot;
/* A publish's callback context: its slot and the client generation it went out on. */
typedef struct mqtt_pctx {
    struct mqtt_slot *slot;
    int gen;
} mqtt_pctx;

/* One in-flight publish. */
typedef struct mqtt_slot {
    struct obx_instance *inst;
    mqtt_slot_state state;
    uint64_t token;      /* the host's token */
    uint64_t agg, seq;   /* as in mqtt_item */
    obx_status doomed;   /* as in mqtt_item: never OK once set */
    int ptoken;          /* paho's token (the MQTT packet id) */
    int64_t deadline_ms; /* monotonic; publish_timeout_ms after send */
    mqtt_early early[2];
} mqtt_slot;

struct obx_instance {
    const obx_host *host;
    MQTTAsync client;  /* the current connection's (see mqtt_client.c) */
    MQTTAsync retired; /* the lost connection's: never connects again */
    int gen;           /* the current client's generation, 0 or 1 */
    mqtt_cctx cctx[2]; /* connection callback contexts, by generation */
    mqtt_pctx *pctx;   /* publish callback contexts: [gen * window + slot] */
    /* a client's connection callbacks (mqtt_conn.c's, set at create) */
    MQTTAsync_connectionLost *on_lost;
    MQTTAsync_disconnected *on_disconnected;
    char client_id[128];
    char url[512];
    char url_shown[512]; /* url with any user:password@ masked: the one logged */

    /* options */
    int qos;
    int window; /* max_in_flight: slots allocated */
    int64_t publish_timeout_ms;
    int64_t window_wait_ms;   /* how long one publish_batch may wait for the connection */
    int64_t nudge_ms;         /* a stalled tail's nudge (mqtt_conn.c); 0: none */
    mqc_templates tpl;        /* content_type, response_topic, correlation_data */
    obx_ce_config ce;         /* format = "cloudevents": how messages are shaped */
    int64_t message_expiry_s; /* 0: none */
    int64_t reconnect_min_ms, reconnect_max_ms;
    MQTTAsync_connectOptions conn_opts;
    MQTTAsync_SSLOptions ssl_opts;

    obx_status unavailable; /* OBX_UNAVAILABLE, or RETRIABLE for a 1.0 host */
    int has_refuse;         /* the host takes a refusal's reason */

    pthread_t timer;
    int timer_started;

    pthread_mutex_t mu;
    pthread_cond_t cond; /* connection state changes, pump finished while closing, stop */
    pthread_cond_t idle; /* nothing left in flight or queued (flush waits for it) */
    mqtt_slot *slots;
    int *free_idx; /* stack of free slot indexes */
    int free_n;
    int inflight;        /* slots SENDING or INFLIGHT */
    int send_limit;      /* max_in_flight capped by the broker's Receive Maximum */
    unsigned max_packet; /* the broker's Maximum Packet Size, 0: none given */
    mqtt_item *queue_head, *queue_tail;
    size_t queued;    /* items in the queue */
    int pumping;      /* one thread at a time hands the queue to paho, in order */
    int pump_waiters; /* threads waiting on cond for the pump to stop */
    int fresh_needed; /* the connection was lost: the next connect uses a fresh client */
    uint64_t next_seq;
    int connected;
    int connecting;
    int connect_attempts;  /* since the last success */
    int last_connect_code; /* paho or MQTT reason code of the last failure */
    char last_connect_err[MQTT_DETAIL_MAX];
    int ever_connected;
    int64_t next_connect_ms;
    int64_t backoff_ms;
    int disconnect_done;
    int stopping;    /* timer thread must exit */
    int closed;      /* close has started: callbacks are ignored from now on */
    int abandoned;   /* timed-out publishes paho may still hold */
    int wedged;      /* paho refuses sends because of abandoned ones: re-create */
    uint64_t n_acks; /* acknowledgements of the current client seen (the tail watch) */
    int nudges_out;  /* nudges (mqtt_conn.c) not yet answered, this client's */

    /* counters, for the log line at close (tests read them there) */
    uint64_t n_ok, n_no_subscribers, n_failed, n_timeout, n_lost;
    uint64_t n_batches;      /* publish_batch calls */
    uint64_t n_window_waits; /* a publish_batch blocked for window space: never, by design */
    uint64_t n_conn_waits;   /* a publish_batch waited for a (re)connection */
    uint64_t n_queued;       /* messages that waited in the queue for room */
    uint64_t n_window_full;  /* the pump stopped with messages left, window full */
    size_t queue_max;        /* deepest queue */
    uint64_t n_out_of_order; /* acknowledged after an earlier one of the aggregate failed */
    uint64_t n_clients;      /* fresh clients made after lost connections */
    uint64_t n_nudges;       /* nudges sent */
};

typedef struct obx_instance mqtt_inst;

#endif
