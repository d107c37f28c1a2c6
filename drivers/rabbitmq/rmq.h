/* RabbitMQ driver internals (rabbitmq-c 0.11): the instance every file works on.
 * Each file declares its functions in its own header; they depend one way:
 * rmq_driver -> rmq_options, rmq_publish -> rmq_channel -> rmq_conn -> rmq_confirm -> rmq.h. */
#ifndef OBX_RMQ_H
#define OBX_RMQ_H

#include <amqp.h>
#include <stdint.h>
#include <time.h>

#include "obx/cloudevents.h"
#include "obx/driver.h"
#include "obx/driver_util.h"

#define RMQ_CHANNEL 1       /* publishing channel, in confirm mode */
#define RMQ_CHECK_CHANNEL 2 /* passive exchange checks: a failure closes only this one */
/* (with a broker's channel_max of 1 the checks share RMQ_CHANNEL) */

/* One unconfirmed publish, found by delivery tag. */
typedef struct rmq_entry {
    uint64_t token;
    uint64_t aggregate;    /* hash of aggregate type and id: later ones fail with it */
    uint8_t done;          /* completed (acked, nacked or failed) */
    uint8_t acked;         /* acked while an earlier one of its aggregate was open */
    uint16_t return_code;  /* non-zero: a basic.return came for it */
    char event_id[40];     /* with id_hash, matches a basic.return to its publish */
    uint64_t id_hash;      /* of the message_id sent */
    char return_text[128]; /* the broker's reply text, e.g. "NO_ROUTE ..." */
} rmq_entry;

/* Events the broker may have closed the publishing channel for (rmq_channel.c):
 * each is sent alone when offered again. A ring: the oldest is forgotten first. */
#define RMQ_SUSPECTS_MAX 1024

/* Property templates (options type, message_id, content_type, priority,
 * expiration; type and message_id always set, the others NULL when unset:
 * not sent, or the message's content type) and their expansions for the
 * message being published. AMQP short strings: 255 bytes at most. */
enum {
    RMQ_P_TYPE,
    RMQ_P_MESSAGE_ID,
    RMQ_P_CONTENT_TYPE,
    RMQ_P_PRIORITY,
    RMQ_P_EXPIRATION,
    RMQ_P_COUNT
};
typedef struct rmq_props {
    const char *tpl[RMQ_P_COUNT];
    char text[RMQ_P_COUNT][256];
    uint8_t priority;
} rmq_props;

/* Exchanges known to exist (missing 0); -1 unknown, 1 missing when last asked. */
typedef struct rmq_exchange {
    char *name;
    int missing;
} rmq_exchange;

struct obx_instance {
    const obx_host *host;

    /* options */
    char *host_name, *user, *password, *vhost;
    int port, ssl;
    char *tls_ca, *tls_cert, *tls_key;
    int tls_verify;
    int heartbeat_ms, connect_timeout_ms, write_timeout_ms;
    int mandatory, persistent;
    obx_status unroutable; /* OBX_PERMANENT or OBX_RETRIABLE */
    const char *content_type_default;
    obx_ce_config ce;      /* format = "cloudevents": how messages are shaped */
    obx_ce_event ce_event; /* the message being published (rmq_publish.c) */
    rmq_props props;       /* rmq_props.c */
    const char *declare_exchange, *declare_exchange_type, *declare_queue, *bind_routing_key;
    int check_exchanges;

    /* connection */
    amqp_connection_state_t conn; /* NULL while disconnected */
    amqp_channel_t check_channel; /* RMQ_CHECK_CHANNEL, or RMQ_CHANNEL with channel_max 1 */
    int check_channel_open;
    int blocked;
    char blocked_reason[96];
    char last_error[256]; /* why we are disconnected; no secrets */
    int64_t next_connect_ms;
    int backoff_ms;
    int closed;

    /* confirms: entries for tags base_tag .. next_tag-1, ring of cap */
    rmq_entry *ring;
    size_t cap, head;
    uint64_t base_tag, next_tag;
    uint64_t answered_tag;  /* highest tag the broker acked, nacked or returned */
    size_t pending;         /* entries not done */
    size_t waiting;         /* of those, acked behind an open earlier one of their aggregate */
    int warned_refused_run; /* rmq_confirm.c: said once */

    uint64_t suspects[RMQ_SUSPECTS_MAX]; /* event id hashes */
    size_t suspect_count, suspect_next;

    rmq_exchange *exchanges;
    size_t exchange_count;

    amqp_table_entry_t *hdr; /* scratch headers table, grown as needed */
    size_t hdr_cap;
    /* scratch: aggregates refused or failed since the current batch began (held:
     * for a reason of theirs; held_out: for the output's state), so that
     * nothing later of theirs in the batch overtakes them */
    obx_held held, held_out;
};

/* The monotonic clock, in milliseconds. */
static inline int64_t rmq_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The status for "the broker cannot be reached": UNAVAILABLE for a host that
 * knows it (ABI 1.1, recognised by its refuse service), else RETRIABLE. */
static inline obx_status rmq_unavailable(const obx_instance *inst)
{
    return OBX_HOST_HAS(inst->host, refuse) ? OBX_UNAVAILABLE : OBX_RETRIABLE;
}

#endif
