/* RabbitMQ driver internals (rabbitmq-c 0.11), shared by its files. */
#ifndef OBX_RMQ_H
#define OBX_RMQ_H

#include <amqp.h>
#include <stdint.h>

#include "obx/driver.h"
#include "obx/driver_util.h"

#define RMQ_CHANNEL 1       /* publishing channel, in confirm mode */
#define RMQ_CHECK_CHANNEL 2 /* passive exchange checks: a failure closes only this one */

/* One unconfirmed publish, found by delivery tag. */
typedef struct rmq_entry {
    uint64_t token;
    uint64_t aggregate;    /* hash of aggregate type and id: later ones fail with it */
    uint8_t done;          /* completed (acked, nacked or failed) */
    uint8_t acked;         /* acked while an earlier one of its aggregate was open */
    uint16_t return_code;  /* non-zero: a basic.return came for it */
    char event_id[40];     /* matches a basic.return to its publish */
    char return_text[128]; /* the broker's reply text, e.g. "NO_ROUTE ..." */
} rmq_entry;

/* Exchanges known to exist (or, with missing set, known not to). */
typedef struct rmq_exchange {
    char *name;
    int missing;
    int64_t checked_ms;
} rmq_exchange;

struct obx_instance {
    const obx_host *host;

    /* options */
    char *host_name, *user, *password, *vhost;
    int port, ssl;
    char *tls_ca, *tls_cert, *tls_key;
    int tls_verify;
    int heartbeat_ms, connect_timeout_ms;
    int mandatory, persistent;
    obx_status unroutable; /* OBX_PERMANENT or OBX_RETRIABLE */
    const char *content_type_default;
    const char *declare_exchange, *declare_exchange_type, *declare_queue, *bind_routing_key;
    int check_exchanges;

    /* connection */
    amqp_connection_state_t conn; /* NULL while disconnected */
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
    size_t pending; /* entries not done */
    size_t waiting; /* of those, acked behind an open earlier one of their aggregate */

    rmq_exchange *exchanges;
    size_t exchange_count;

    amqp_table_entry_t *hdr; /* scratch headers table, grown as needed */
    size_t hdr_cap;
    obx_held held; /* scratch: aggregates refused in the current batch */
};

int64_t rmq_now_ms(void);

/* rmq_options.c */
extern const obx_option rmq_options[];
extern const obx_option_spec rmq_specs[];
int rmq_read_options(obx_instance *inst, char *errstr, size_t errstr_size);
void rmq_free_options(obx_instance *inst);

/* The status for "the broker cannot be reached": UNAVAILABLE for a host that
 * knows it (ABI 1.1, recognised by its refuse service), else RETRIABLE. */
obx_status rmq_unavailable(const obx_instance *inst);

/* rmq_conn.c */
int rmq_connect(obx_instance *inst);          /* 0 or -1 with inst->last_error */
int rmq_ensure_connected(obx_instance *inst); /* respects backoff; 0 when connected */
void rmq_disconnect(obx_instance *inst, const char *why, int graceful);
/* 1 exists, 0 missing (text in why), -1 connection failed */
int rmq_exchange_exists(obx_instance *inst, const char *exchange, size_t len, char *why,
                        size_t why_size);
void rmq_reply_text(amqp_rpc_reply_t r, const char *what, char *buf, size_t size);

/* rmq_publish.c */
obx_status rmq_publish_batch(obx_instance *inst, const obx_message *msgs, size_t count,
                             obx_status *accept);
int rmq_pump(obx_instance *inst, int timeout_ms); /* completions made, -1 on connection loss */
void rmq_fail_pending(obx_instance *inst, obx_status status, const char *detail);

#endif
