/*
 * RabbitMQ driver: the basic properties type, message_id, content_type,
 * priority and expiration, each a template over the message's fields
 * (obx/cloudevents.h) or a constant. Checked once at create; expanded per
 * message into the instance's buffers (one publish at a time), so a message
 * costs no allocation.
 *
 * A basic.return carries no delivery tag: it is matched to its publish by
 * its message_id. So a message_id template must hold ${event_id}: the sent
 * ids are then as unique as the events, and a publish matches a return when
 * the hash of the id sent is the return's and the event id is in it.
 */
#include <stdio.h>
#include <string.h>

#include "rmq_props.h"

const char *const rmq_prop_options[RMQ_P_COUNT] = {"type", "message_id", "content_type", "priority",
                                                   "expiration"};

/* A priority: 0 to 255, in decimal digits. */
static int rmq_priority_parse(const char *s, uint8_t *out)
{
    unsigned v = 0;
    size_t n = strlen(s);
    if (n == 0 || n > 3 || strspn(s, "0123456789") != n)
        return -1;
    for (size_t i = 0; i < n; i++)
        v = v * 10 + (unsigned)(s[i] - '0');
    if (v > 255)
        return -1;
    *out = (uint8_t)v;
    return 0;
}

/* An expiration: milliseconds in decimal digits, as AMQP's text wants. */
static int rmq_expiration_ok(const char *s)
{
    size_t n = strlen(s);
    return n > 0 && strspn(s, "0123456789") == n;
}

/* Is the value at RMQ_P_* index i wrong as that property? Then why. */
static const char *rmq_value_problem(int i, const char *v, uint8_t *priority)
{
    if (i == RMQ_P_PRIORITY && rmq_priority_parse(v, priority) != 0)
        return "is not a priority (a number from 0 to 255)";
    if (i == RMQ_P_EXPIRATION && !rmq_expiration_ok(v))
        return "is not an expiration (milliseconds, digits only)";
    return NULL;
}

int rmq_props_check(obx_instance *inst, char *errstr, size_t errstr_size)
{
    rmq_props *p = &inst->props;
    for (int i = 0; i < RMQ_P_COUNT; i++) {
        const char *tpl = p->tpl[i];
        char why[256];
        if (tpl && !*tpl && i > RMQ_P_MESSAGE_ID)
            p->tpl[i] = tpl = NULL; /* written empty: not set */
        if (!tpl)
            continue;
        if (obx_ce_template_check(tpl, why, sizeof why) != 0) {
            snprintf(errstr, errstr_size, "option %s: %s", rmq_prop_options[i], why);
            return -1;
        }
        const char *bad = strstr(tpl, "${") ? NULL : rmq_value_problem(i, tpl, &p->priority);
        if (bad) {
            snprintf(errstr, errstr_size, "option %s = \"%.64s\" %s", rmq_prop_options[i], tpl,
                     bad);
            return -1;
        }
    }
    if (!p->tpl[RMQ_P_MESSAGE_ID] || !strstr(p->tpl[RMQ_P_MESSAGE_ID], "${event_id}")) {
        snprintf(errstr, errstr_size,
                 "option message_id must contain ${event_id}: a message the broker returns "
                 "(mandatory, unroutable) is matched to its event by it");
        return -1;
    }
    return 0;
}

int rmq_props_expand(obx_instance *inst, const obx_message *m, char *why, size_t why_size)
{
    rmq_props *p = &inst->props;
    for (int i = 0; i < RMQ_P_COUNT; i++) {
        if (!p->tpl[i])
            continue;
        if (obx_ce_expand(p->tpl[i], m, p->text[i], sizeof p->text[i]) < 0) {
            snprintf(why, why_size,
                     "%s \"%.40s...\" is over the AMQP limit of 255 bytes for a short string",
                     rmq_prop_options[i], p->text[i]);
            return -1;
        }
        const char *bad = rmq_value_problem(i, p->text[i], &p->priority);
        if (bad) {
            snprintf(why, why_size, "%s \"%.64s\" (from \"%.64s\") %s", rmq_prop_options[i],
                     p->text[i], p->tpl[i], bad);
            return -1;
        }
    }
    return 0;
}

uint64_t rmq_id_hash(const void *bytes, size_t len)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (const unsigned char *c = bytes; len--; c++)
        h = (h ^ *c) * 1099511628211ULL;
    return h;
}

int rmq_id_holds(const void *id, size_t len, const char *event_id)
{
    size_t n = strlen(event_id);
    if (n > len)
        return 0;
    for (size_t at = 0; at + n <= len; at++)
        if (memcmp((const char *)id + at, event_id, n) == 0)
            return 1;
    return 0;
}
