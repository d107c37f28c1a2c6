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
 * The completion contract (what the conformance runner checks):
 *  - Every message whose accept status is OBX_OK gets exactly one
 *    completion, eventually; messages refused at publish time get none.
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
#define OBX_ABI_MINOR 0

/** The outcome of a message, at accept time or in its completion. */
typedef enum obx_status {
    OBX_OK = 0,        /**< accepted (publish) or durably acknowledged (completion) */
    OBX_RETRIABLE = 1, /**< transient failure: the host retries with backoff */
    OBX_PERMANENT = 2, /**< the message can never succeed: dead-lettered */
    OBX_FATAL = 3      /**< the instance is unusable: the host closes and re-creates it */
} obx_status;

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

/** One option a driver accepts; arrays end with an entry whose name is NULL. */
typedef struct obx_option {
    const char *name;
    obx_option_type type;
    unsigned flags;          /* OBX_OPT_* */
    const char *description; /* one line, shown by `outbox-relay drivers -v` */
} obx_option;

/** A header (key/value pair) carried with a message. */
typedef struct obx_header {
    const char *key;
    const char *value;
} obx_header;

/**
 * One event to publish. Valid only during publish_batch. Never NULL:
 * event_id, event_type, aggregate_type, aggregate_id, destination (non-empty),
 * content_type, payload, and each header's key and value; headers is NULL
 * only when header_count is 0.
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

typedef struct obx_instance obx_instance; /* a driver's own, opaque to the host */

/**
 * Services the host gives each instance. The table and host_ctx stay valid
 * until destroy returns. Getters return 1 and set *out when the option is
 * set, 0 when it is not (the host has already checked the type).
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
} obx_host;

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
     * follow; any other status refuses the message now (no completion).
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
} obx_driver_def;

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
