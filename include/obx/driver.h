/*
 * outbox-relay driver ABI.
 *
 * A driver is a shared object that exports exactly one function,
 * obx_driver_entry(), returning a pointer to a static obx_driver_def. The
 * relay (the "host") loads it with dlopen, checks magic, ABI major version,
 * struct size and required callbacks, then creates one instance per worker
 * and output.
 *
 * Versioning: structs that cross the boundary begin with a size or version
 * field. Fields are only ever appended; the host copies min(struct_size,
 * sizeof) and zero-fills the rest, so a driver built against an older minor
 * version loads and a newer optional callback simply reads as NULL. A
 * different ABI major is refused.
 *
 * Ownership:
 *  - Everything the host passes in (messages, strings, the host table) is
 *    owned by the host. Message memory is valid only during the
 *    publish_batch call: a driver copies what it keeps.
 *  - Strings a driver returns through config getters are owned by the host
 *    and live as long as the instance.
 *  - The definition returned by obx_driver_entry is static and never freed.
 *
 * Threading:
 *  - One instance is driven by one host thread at a time: create, publish,
 *    poll, flush, close and destroy are never called concurrently on the same
 *    instance. Different instances may be used from different threads at
 *    once, so drivers keep no mutable global state.
 *  - host->complete may be called from any thread, including from inside
 *    publish_batch or poll, and from the driver's own threads.
 *
 * The completion contract (what the conformance runner, `outbox-relay
 * check-driver`, checks):
 *  - Every message whose accept status is OBX_OK gets exactly one
 *    completion, eventually; messages refused at publish time get none.
 *    A refusal's reason goes through host->refuse, inside publish_batch.
 *  - Every status written or reported is an obx_status (at most
 *    OBX_STATUS_MAX).
 *  - No completion after close returns.
 *  - OBX_OK in a completion means the broker acknowledged the message
 *    durably (Kafka delivery report PERSISTED with acks=all, RabbitMQ
 *    publisher confirm without a basic.return, MQTT PUBACK/PUBCOMP with a
 *    success reason code). "Handed to the client library" is not OK.
 *
 * This header is C99, includes only standard headers, and compiles as C++.
 */
#ifndef OBX_DRIVER_H
#define OBX_DRIVER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OBX_DRIVER_MAGIC 0x4F425844u /* "OBXD" */
#define OBX_ABI_MAJOR 1
#define OBX_ABI_MINOR 2

/**
 * The outcome of a message, at accept time or in its completion.
 *
 * Who pays for a failure: RETRIABLE and PERMANENT are this message's fault
 * and count an attempt (a message failing max_attempts times is dead);
 * UNAVAILABLE and FATAL are the output's state and count nothing.
 */
typedef enum obx_status {
    OBX_OK = 0,        /**< accepted (publish) or durably acknowledged (completion) */
    OBX_RETRIABLE = 1, /**< this message failed, may succeed later: retried with backoff */
    OBX_PERMANENT = 2, /**< this message can never succeed: dead-lettered */
    /**
     * The instance is unusable (fatal client error, bad credentials): the
     * host closes and re-creates it. It is about the instance, never a
     * verdict on a message: returned by publish_batch, written to accept[i]
     * or given in a completion, the message counts no attempt.
     */
    OBX_FATAL = 3,
    /**
     * Since 1.1. The output cannot be reached (connection refused, every
     * broker down, the connection lost before the acknowledgement): not the
     * message's fault. The host pauses the output, probes it with backoff,
     * offers the message again later and counts no attempt.
     */
    OBX_UNAVAILABLE = 4
} obx_status;

/* Larger values break the contract; the host treats them as RETRIABLE. */
#define OBX_STATUS_MAX OBX_UNAVAILABLE

typedef enum obx_log_level {
    OBX_LOG_ERROR = 0,
    OBX_LOG_WARN = 1,
    OBX_LOG_INFO = 2,
    OBX_LOG_DEBUG = 3
} obx_log_level;

/** The type of a driver option; the host validates values before create. */
typedef enum obx_option_type {
    OBX_OPT_STRING = 0,
    OBX_OPT_INT = 1,
    OBX_OPT_BOOL = 2,
    OBX_OPT_DOUBLE = 3
} obx_option_type;

#define OBX_OPT_REQUIRED 0x1u /* create is refused by the host when missing */
#define OBX_OPT_SECRET 0x2u   /* the host never prints the value */
/* since 1.1: an old name kept working (its description says "deprecated: use
 * NEW"); the host warns "FILE:LINE: ... option X is deprecated: ..." when set */
#define OBX_OPT_DEPRECATED 0x4u

/**
 * One option a driver accepts; arrays end with an entry whose name is NULL.
 * Frozen: its size and layout never change (arrays have no stride).
 */
typedef struct obx_option {
    const char *name;
    obx_option_type type;
    unsigned flags;          /* OBX_OPT_* */
    const char *description; /* one line, shown by `outbox-relay drivers -v` */
} obx_option;

/**
 * Since 1.1: what the host enforces for an option, in an array parallel to
 * obx_driver_def.options (same index, same length; no terminator needed).
 * The host refuses a value out of range or not among the choices with the
 * config file and line, and hands the default to the getters when the option
 * is not set, so a driver reads a value that was checked. The specs
 * themselves are checked at load: a range on a string or boolean, choices on
 * a non-string, min > max, a renamed_from that is declared, or a default
 * that does not parse as its type or is not allowed, refuses the driver.
 * Frozen like obx_option.
 */
typedef struct obx_option_spec {
    const char *default_value;  /* as it would be written in the config; NULL: none */
    double min, max;            /* INT and DOUBLE: the allowed range, inclusive, when min < max */
    const char *const *choices; /* STRING: NULL-terminated allowed values, or NULL */
    const char *renamed_from;   /* an older name still accepted, with a warning (both set: an
                                   error); getters answer to the new name; or NULL */
} obx_option_spec;

/** A header (key/value pair) carried with a message. Frozen. */
typedef struct obx_header {
    const char *key;
    const char *value;
} obx_header;

/**
 * One event to publish. Valid only during publish_batch. Never NULL:
 * event_id, event_type, aggregate_type, aggregate_id, destination (non-empty),
 * content_type, payload (payload_len may be 0), and each header's key and
 * value; headers is NULL only when header_count is 0. All texts are valid
 * UTF-8 without NUL. Frozen: publish_batch receives an array of these, so
 * its size never changes; later data comes through new host services.
 *
 * What a batch holds: messages in outbox id order. Two messages of one
 * aggregate appear in one batch only for a driver that declares
 * OBX_DRIVER_IN_ORDER (and only with ordering on; with ordering off a batch
 * may hold anything, in id order).
 */
typedef struct obx_message {
    uint64_t token;       /* pass back in complete(); opaque to the driver */
    const char *event_id; /* uuid text: the consumer's de-duplication key */
    const char *event_type;
    const char *aggregate_type;
    const char *aggregate_id; /* ordering scope and default partition key */
    const char *destination;  /* topic / exchange+key / MQTT topic, rendered by the host */
    const void *payload;
    size_t payload_len;
    const char *content_type;  /* "application/json" or "application/octet-stream" */
    int64_t created_at_us;     /* row's created_at, microseconds since the Unix epoch */
    const obx_header *headers; /* the row's headers column, in order */
    size_t header_count;
    uint32_t attempt; /* 1 on the first attempt */
} obx_message;

/**
 * Since 1.2: the fields of a message that came after obx_message froze,
 * from host->message_ext (obx_envelope_fill_host reads them for a driver).
 * Valid as long as its message. Fields are appended only: read one only
 * when struct_size covers it.
 */
typedef struct obx_message_ext {
    uint32_t struct_size;      /* sizeof(obx_message_ext) as the host knows it */
    int64_t aggregate_seq;     /* 1, 2, 3... within the aggregate, no gap; 0: not known */
    const char *event_version; /* the payload's schema version; NULL: not given */
} obx_message_ext;

typedef struct obx_instance obx_instance; /* a driver's own, opaque to the host */

/**
 * Services the host gives each instance. The table and host_ctx stay valid
 * until destroy returns. Getters return 1 and set *out when the option is
 * set or, since 1.1, has a declared default; otherwise they return 0 and
 * leave *out alone (the host has already checked the type, range and
 * choices). A getter of another type than the option's returns 0.
 */
typedef struct obx_host {
    uint32_t struct_size; /* sizeof(obx_host) as the host knows it */
    void *host_ctx;       /* pass as the first argument of every service */

    /** Log a line; the host adds time, driver and output name. Any thread. */
    void (*log)(void *host_ctx, obx_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
        __attribute__((format(printf, 3, 4)))
#endif
        ;
    int (*get_string)(void *host_ctx, const char *name, const char **out);
    int (*get_int)(void *host_ctx, const char *name, int64_t *out);
    int (*get_bool)(void *host_ctx, const char *name, int *out);
    int (*get_double)(void *host_ctx, const char *name, double *out);
    /**
     * Native client properties (the output's `properties` list), by index
     * from 0; returns 0 past the end. Passed through to the client library.
     */
    int (*get_property)(void *host_ctx, size_t index, const char **key, const char **value);
    /**
     * Report the outcome of an accepted message. Exactly once per accepted
     * message, from any thread. native_code is the broker's or client's own
     * code (0 if none); detail is a short text, copied by the host, may be
     * NULL. Never call after close has returned.
     */
    void (*complete)(void *host_ctx, uint64_t token, obx_status status, int native_code,
                     const char *detail);

    /* ---- since 1.1: test with OBX_HOST_HAS before calling ---- */

    /**
     * Say why a message was refused in publish_batch (accept[i] != OBX_OK):
     * called from inside publish_batch, on its thread, at most once per
     * refused message, never for an accepted one. A refusal without a reason
     * reads "refused by the driver". native_code as in complete; the host
     * copies detail.
     */
    void (*refuse)(void *host_ctx, uint64_t token, int native_code, const char *detail);

    /* ---- since 1.2 ---- */

    /**
     * The fields of message m beyond obx_message (obx_message_ext), or NULL
     * when the host has none for it. Only inside publish_batch, on its
     * thread, for a message of the array it was given (a pointer into that
     * array, not a copy); the result is valid as long as the message.
     */
    const obx_message_ext *(*message_ext)(void *host_ctx, const obx_message *m);
} obx_host;

/** True when the host table provides service MEMBER (a later minor may add more). */
#define OBX_HOST_HAS(host, member)                                                                 \
    ((host)->struct_size >= offsetof(obx_host, member) + sizeof((host)->member) &&                 \
     (host)->member != NULL)

/**
 * Driver flags (obx_driver_def.flags, since 1.1).
 *
 * OBX_DRIVER_IN_ORDER: within one instance, messages of one aggregate are
 * delivered in the order publish_batch received them, and once one of them
 * fails, no later one of that aggregate still in flight is acknowledged
 * ahead of it (Kafka with idempotence on one partition, one AMQP channel, one
 * MQTT connection). The host may then put a run of consecutive events of one
 * aggregate in a batch; should a later one be acknowledged after an earlier
 * one failed anyway, the host does not mark it published but sends it again
 * after its predecessor. Without the flag, at most one event per aggregate is
 * in flight.
 */
#define OBX_DRIVER_IN_ORDER 0x1u
/**
 * OBX_DRIVER_NULL_PAYLOAD (since 1.2): the driver sends a message whose
 * payload is NULL (payload_len 0) as its protocol's null value: a Kafka
 * tombstone for compacted topics. Only an output configured with
 * tombstones = true is given such messages, and the host refuses that
 * setting for a driver without the flag; every other output's messages
 * have a payload.
 */
#define OBX_DRIVER_NULL_PAYLOAD 0x2u

/** The driver definition. Fields are appended only. */
typedef struct obx_driver_def {
    uint32_t magic;       /* OBX_DRIVER_MAGIC */
    uint16_t abi_major;   /* OBX_ABI_MAJOR the driver was built with */
    uint16_t abi_minor;   /* OBX_ABI_MINOR the driver was built with */
    uint32_t struct_size; /* sizeof(obx_driver_def) the driver was built with */

    const char *name;          /* short name, e.g. "kafka" */
    const char *version;       /* the driver's own version */
    const char *description;   /* one line */
    const obx_option *options; /* accepted options; NULL means none */

    /**
     * Create an instance. Reads its options through host. On failure
     * returns NULL and writes a one-line reason to errstr (never a secret).
     * May connect lazily; must not block for long. Required.
     */
    obx_instance *(*create)(const obx_host *host, char *errstr, size_t errstr_size);

    /**
     * Hand a batch to the broker without waiting for acknowledgements.
     * Writes accept[i] for every message: OBX_OK means a completion will
     * follow; any other status refuses the message now (no completion):
     * RETRIABLE or PERMANENT for a reason of this message (counts an attempt,
     * so a message refused every time ends dead; give the reason with
     * host->refuse), UNAVAILABLE while the output cannot be reached (counts
     * nothing).
     * Returns OBX_OK, or OBX_FATAL when the instance is unusable (accepted
     * messages still get their completions, at the latest from close).
     * Required.
     */
    obx_status (*publish_batch)(obx_instance *inst, const obx_message *msgs, size_t count,
                                obx_status *accept);

    /**
     * Serve the driver's events (acknowledgements, reconnects) for up to
     * timeout_ms, returning early once something completed. Drivers whose
     * completions come from their own threads may leave it NULL.
     */
    void (*poll)(obx_instance *inst, int timeout_ms);

    /**
     * Wait up to timeout_ms for in-flight messages to complete. Returns how
     * many are still in flight (0 when all are done). Required.
     */
    size_t (*flush)(obx_instance *inst, int timeout_ms);

    /**
     * Stop: complete every in-flight message as OBX_RETRIABLE ("aborted")
     * unless already acknowledged, then release connections. After close
     * returns no completion is made. Calling it again does nothing. Required.
     */
    void (*close)(obx_instance *inst);

    /** Free the instance; calls close first if needed. Required. */
    void (*destroy)(obx_instance *inst);

    /* ---- since 1.1 (a 1.0 driver reads as zero and NULL here) ---- */

    uint32_t flags;                      /* OBX_DRIVER_* */
    const obx_option_spec *option_specs; /* parallel to options; NULL: none declared */

    /**
     * While the output is paused (a message came back UNAVAILABLE), the host
     * calls this with backoff instead of sending messages: try to reach the
     * broker for up to timeout_ms and return OBX_OK once it can take
     * messages, OBX_UNAVAILABLE while it cannot. Optional: without it the
     * host probes by offering the next batch.
     */
    obx_status (*probe)(obx_instance *inst, int timeout_ms);
} obx_driver_def;

/* The frozen structs (arrays cross the boundary with no stride). */
#if defined(__cplusplus) && __cplusplus >= 201103L
#define OBX_STATIC_ASSERT(c, m) static_assert(c, #m)
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define OBX_STATIC_ASSERT(c, m) _Static_assert(c, #m)
#else
#define OBX_STATIC_ASSERT(c, m) typedef char obx_static_assert_##m[(c) ? 1 : -1]
#endif
/* On LP64 (the platforms the relay ships for) these are the 1.0 layouts. */
#define OBX_LP64_OR(c) (sizeof(void *) != 8 || sizeof(size_t) != 8 || (c))
OBX_STATIC_ASSERT(OBX_LP64_OR(sizeof(obx_message) == 104 && offsetof(obx_message, attempt) == 96),
                  obx_message_is_frozen);
OBX_STATIC_ASSERT(OBX_LP64_OR(sizeof(obx_header) == 16), obx_header_is_frozen);
OBX_STATIC_ASSERT(OBX_LP64_OR(sizeof(obx_option) == 24), obx_option_is_frozen);
OBX_STATIC_ASSERT(OBX_LP64_OR(sizeof(obx_option_spec) == 40), obx_option_spec_is_frozen);

/** The one symbol a driver exports. */
typedef const obx_driver_def *(*obx_driver_entry_fn)(void);

#define OBX_DRIVER_ENTRY_SYMBOL "obx_driver_entry"

#if defined(__GNUC__)
#define OBX_DRIVER_EXPORT __attribute__((visibility("default")))
#else
#define OBX_DRIVER_EXPORT
#endif

/** Fill the versioned head of a definition: OBX_DRIVER_DEF_HEAD, .name = ... */
#define OBX_DRIVER_DEF_HEAD                                                                        \
    .magic = OBX_DRIVER_MAGIC, .abi_major = OBX_ABI_MAJOR, .abi_minor = OBX_ABI_MINOR,             \
    .struct_size = sizeof(obx_driver_def)

#ifdef __cplusplus
}
#endif

#endif /* OBX_DRIVER_H */
