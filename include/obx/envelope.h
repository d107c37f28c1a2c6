/*
 * The standard envelope fields of a message (event id, event type,
 * aggregate type and id, created at, attempt) as (name, value) pairs, named
 * in one of a few styles, so every driver carries them the same way and
 * under the same names: Kafka, AMQP and MQTT headers, HTTP headers, a file.
 *
 * Header-only: a driver links nothing of the relay. C99, standard headers
 * and the public obx headers only; compiles as C++.
 *
 * Ownership: an obx_envelope is the caller's (usually on the stack). A
 * field's name is a static string. Its value points into the message (valid
 * only during publish_batch, like the message) or, for created_at and
 * attempt, into the envelope's own buffers (valid as long as the envelope,
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
/** What the broker drivers send: every field but the attempt. */
#define OBX_ENVELOPE_STANDARD 0x1Fu
#define OBX_ENVELOPE_ALL 0x3Fu
#define OBX_ENVELOPE_MAX 6 /* fields at most */

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
    char created_at[48]; /* any int64 microsecond time fits, far years included */
    char attempt[12];    /* any uint32 */
} obx_envelope;

/**
 * The name of one field (a single OBX_ENVELOPE_* bit) in a style (a value
 * outside obx_envelope_style reads as OBX_ENVELOPE_SNAKE); NULL when field is
 * not a single known bit.
 */
static inline const char *obx_envelope_name(unsigned field, obx_envelope_style style)
{
    static const char *const names[3][OBX_ENVELOPE_MAX] = {
        {"event_id", "event_type", "aggregate_type", "aggregate_id", "created_at", "attempt"},
        {"X-Event-Id", "X-Event-Type", "X-Aggregate-Type", "X-Aggregate-Id", "X-Created-At",
         "X-Attempt"},
        {"event-id", "event-type", "aggregate-type", "aggregate-id", "created-at", "attempt"},
    };
    unsigned s = (unsigned)style <= OBX_ENVELOPE_KEBAB ? (unsigned)style : 0u;
    for (int i = 0; i < OBX_ENVELOPE_MAX; i++)
        if (field == (1u << i))
            return names[s][i];
    return NULL;
}

/**
 * Lists the fields of m selected by the `fields` mask (OBX_ENVELOPE_STANDARD,
 * OBX_ENVELOPE_ALL or any OR of bits), always in the order of the bits, named
 * in `style`, into env; returns how many (env->count). No name or value is
 * NULL: a NULL text (a host breaking the message contract) reads as "".
 * Values: see Ownership at the top.
 */
static inline size_t obx_envelope_fill(obx_envelope *env, const obx_message *m,
                                       obx_envelope_style style, unsigned fields)
{
    const char *value[OBX_ENVELOPE_MAX] = {m->event_id,     m->event_type, m->aggregate_type,
                                           m->aggregate_id, NULL,          NULL};
    env->count = 0;
    env->created_at[0] = env->attempt[0] = '\0';
    if (fields & OBX_ENVELOPE_CREATED_AT) {
        obx_format_time(m->created_at_us, env->created_at, sizeof env->created_at);
        value[4] = env->created_at;
    }
    if (fields & OBX_ENVELOPE_ATTEMPT) {
        snprintf(env->attempt, sizeof env->attempt, "%lu", (unsigned long)m->attempt);
        value[5] = env->attempt;
    }
    for (int i = 0; i < OBX_ENVELOPE_MAX; i++) {
        unsigned bit = 1u << i;
        if (!(fields & bit))
            continue;
        obx_envelope_field *f = &env->field[env->count++];
        f->field = bit;
        f->name = obx_envelope_name(bit, style);
        f->value = value[i] ? value[i] : "";
    }
    return env->count;
}

#ifdef __cplusplus
}
#endif

#endif /* OBX_ENVELOPE_H */
