/*
 * The standard envelope fields of a message (event id, event type,
 * aggregate type and id, created at, attempt; since ABI 1.2 the aggregate
 * sequence and event version, read through the host) as (name, value) pairs, named
 * in one of a few styles, so every driver carries them the same way and
 * under the same names: Kafka, AMQP and MQTT headers, HTTP headers, a file.
 *
 * Header-only: a driver links nothing of the relay. C99, standard headers
 * and the public obx headers only; compiles as C++.
 *
 * Ownership: an obx_envelope is the caller's (usually on the stack). A
 * field's name is a static string. Its value points into the message (valid
 * only during publish_batch, like the message) or, for created_at, attempt
 * and aggregate_seq, into the envelope's own buffers (valid as long as the envelope,
 * and only until it is filled again). A driver copies what it keeps.
 *
 * Threading: no global state; any thread.
 */
#ifndef OBX_ENVELOPE_H
#define OBX_ENVELOPE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "obx/driver.h"
#include "obx/driver_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/** How the field names are spelled. */
typedef enum obx_envelope_style {
    OBX_ENVELOPE_SNAKE = 0, /**< "event_id", "aggregate_type", "created_at": the relay's names */
    OBX_ENVELOPE_HTTP = 1,  /**< "X-Event-Id", "X-Aggregate-Type", "X-Created-At" */
    OBX_ENVELOPE_KEBAB = 2  /**< "event-id", "aggregate-type", "created-at" */
} obx_envelope_style;

/* The fields, as bits of the `fields` mask, in the order they are listed. */
#define OBX_ENVELOPE_EVENT_ID 0x01u
#define OBX_ENVELOPE_EVENT_TYPE 0x02u
#define OBX_ENVELOPE_AGGREGATE_TYPE 0x04u
#define OBX_ENVELOPE_AGGREGATE_ID 0x08u
#define OBX_ENVELOPE_CREATED_AT 0x10u /* ISO 8601 UTC with microseconds (obx_format_time) */
#define OBX_ENVELOPE_ATTEMPT 0x20u    /* decimal, "1" on the first attempt */
/* since 1.2, listed by obx_envelope_fill_host only, when the message has them */
#define OBX_ENVELOPE_AGGREGATE_SEQ 0x40u /* decimal, 1, 2, 3... within the aggregate */
#define OBX_ENVELOPE_EVENT_VERSION 0x80u /* the payload's schema version */
/** What the broker drivers send: every field but the attempt. */
#define OBX_ENVELOPE_STANDARD 0xDFu
#define OBX_ENVELOPE_ALL 0xFFu
#define OBX_ENVELOPE_MAX 8 /* fields at most */

/** One field: which one (an OBX_ENVELOPE_* bit), its name in the style, its value. */
typedef struct obx_envelope_field {
    unsigned field;
    const char *name;
    const char *value;
} obx_envelope_field;

/** The fields of one message, filled by obx_envelope_fill. */
typedef struct obx_envelope {
    size_t count; /* fields listed in field[] */
    obx_envelope_field field[OBX_ENVELOPE_MAX];
    char created_at[48];    /* any int64 microsecond time fits, far years included */
    char attempt[12];       /* any uint32 */
    char aggregate_seq[24]; /* any int64 */
} obx_envelope;

/**
 * The name of one field (a single OBX_ENVELOPE_* bit) in a style (a value
 * outside obx_envelope_style reads as OBX_ENVELOPE_SNAKE); NULL when field is
 * not a single known bit.
 */
static inline const char *obx_envelope_name(unsigned field, obx_envelope_style style)
{
    static const char *const names[3][OBX_ENVELOPE_MAX] = {
        {"event_id", "event_type", "aggregate_type", "aggregate_id", "created_at", "attempt",
         "aggregate_seq", "event_version"},
        {"X-Event-Id", "X-Event-Type", "X-Aggregate-Type", "X-Aggregate-Id", "X-Created-At",
         "X-Attempt", "X-Aggregate-Seq", "X-Event-Version"},
        {"event-id", "event-type", "aggregate-type", "aggregate-id", "created-at", "attempt",
         "aggregate-seq", "event-version"},
    };
    unsigned s = (unsigned)style <= OBX_ENVELOPE_KEBAB ? (unsigned)style : 0u;
    for (int i = 0; i < OBX_ENVELOPE_MAX; i++)
        if (field == (1u << i))
            return names[s][i];
    return NULL;
}

/* Lists the selected fields whose value[i] is set, in the order of the bits. */
static inline size_t obx_envelope_list(obx_envelope *env, const char *const *value,
                                       obx_envelope_style style, unsigned fields)
{
    for (int i = 0; i < OBX_ENVELOPE_MAX; i++) {
        unsigned bit = 1u << i;
        if (!(fields & bit) || !value[i])
            continue;
        obx_envelope_field *f = &env->field[env->count++];
        f->field = bit;
        f->name = obx_envelope_name(bit, style);
        f->value = value[i];
    }
    return env->count;
}

/* The values of the fields of obx_message itself; the rest NULL. */
static inline void obx_envelope_values(obx_envelope *env, const obx_message *m, unsigned fields,
                                       const char **value)
{
    value[0] = m->event_id ? m->event_id : "";
    value[1] = m->event_type ? m->event_type : "";
    value[2] = m->aggregate_type ? m->aggregate_type : "";
    value[3] = m->aggregate_id ? m->aggregate_id : "";
    value[4] = value[5] = value[6] = value[7] = NULL;
    env->count = 0;
    env->created_at[0] = env->attempt[0] = env->aggregate_seq[0] = '\0';
    if (fields & OBX_ENVELOPE_CREATED_AT) {
        obx_format_time(m->created_at_us, env->created_at, sizeof env->created_at);
        value[4] = env->created_at;
    }
    if (fields & OBX_ENVELOPE_ATTEMPT) {
        snprintf(env->attempt, sizeof env->attempt, "%lu", (unsigned long)m->attempt);
        value[5] = env->attempt;
    }
}

/**
 * Lists the fields of m selected by the `fields` mask (OBX_ENVELOPE_STANDARD,
 * OBX_ENVELOPE_ALL or any OR of bits), always in the order of the bits, named
 * in `style`, into env; returns how many (env->count). The fields since 1.2
 * (aggregate sequence, event version) need the host: see
 * obx_envelope_fill_host; here they are never listed. No name or value is
 * NULL: a NULL text (a host breaking the message contract) reads as "".
 * Values: see Ownership at the top.
 */
static inline size_t obx_envelope_fill(obx_envelope *env, const obx_message *m,
                                       obx_envelope_style style, unsigned fields)
{
    const char *value[OBX_ENVELOPE_MAX];
    obx_envelope_values(env, m, fields, value);
    return obx_envelope_list(env, value, style, fields);
}

/**
 * As obx_envelope_fill, with the fields a 1.2 host gives beside the message
 * (host->message_ext): the aggregate sequence when known, the event version
 * when given; an older host, or a message without them, lists neither. Call
 * inside publish_batch with m pointing into the array it received.
 */
static inline size_t obx_envelope_fill_host(obx_envelope *env, const obx_host *host,
                                            const obx_message *m, obx_envelope_style style,
                                            unsigned fields)
{
    const char *value[OBX_ENVELOPE_MAX];
    obx_envelope_values(env, m, fields, value);
    const obx_message_ext *x =
        host && OBX_HOST_HAS(host, message_ext) ? host->message_ext(host->host_ctx, m) : NULL;
    if (x && x->struct_size >= offsetof(obx_message_ext, aggregate_seq) + sizeof x->aggregate_seq &&
        x->aggregate_seq > 0 && (fields & OBX_ENVELOPE_AGGREGATE_SEQ)) {
        snprintf(env->aggregate_seq, sizeof env->aggregate_seq, "%lld",
                 (long long)x->aggregate_seq);
        value[6] = env->aggregate_seq;
    }
    if (x && x->struct_size >= offsetof(obx_message_ext, event_version) + sizeof x->event_version)
        value[7] = x->event_version;
    return obx_envelope_list(env, value, style, fields);
}

#ifdef __cplusplus
}
#endif

#endif /* OBX_ENVELOPE_H */
