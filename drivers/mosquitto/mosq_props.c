/*
 * mosquitto driver: a message's MQTT 5 properties as libmosquitto takes
 * them. What is sent (the relay's envelope or a CloudEvent's attributes and
 * the row's headers as user properties, the content type) and the checks it
 * passes first are both drivers' (drivers/mqtt_common/mqc_shape.c).
 */
#include "mosq_props.h"

/* One user property; -1: no memory. */
static int mosq_user(mosquitto_property **props, const char *k, const char *v)
{
    return mosquitto_property_add_string_pair(props, MQTT_PROP_USER_PROPERTY, k, v) ==
                   MOSQ_ERR_SUCCESS
               ? 0
               : -1;
}

/* The shape's properties into sh->props; -1: no memory. */
static int mosq_props_add(const mosq_inst *inst, const obx_message *m, mosq_shape *sh)
{
    const mqc_shape *msg = &sh->msg;
    for (size_t i = 0; i < msg->count; i++)
        if (mosq_user(&sh->props, msg->field[i].name, msg->field[i].value) < 0)
            return -1;
    for (size_t i = 0; i < m->header_count; i++) {
        const obx_header *h = &m->headers[i];
        if (h->key && h->value && mosq_user(&sh->props, h->key, h->value) < 0)
            return -1;
    }
    if (msg->ct && mosquitto_property_add_string(&sh->props, MQTT_PROP_CONTENT_TYPE, msg->ct) !=
                       MOSQ_ERR_SUCCESS)
        return -1;
    if (inst->message_expiry_s > 0 &&
        mosquitto_property_add_int32(&sh->props, MQTT_PROP_MESSAGE_EXPIRY_INTERVAL,
                                     (uint32_t)inst->message_expiry_s) != MOSQ_ERR_SUCCESS)
        return -1;
    return 0;
}

const char *mosq_shape_make(const mosq_inst *inst, const obx_message *m, mosq_shape *sh, int *nomem)
{
    sh->props = NULL;
    const char *why = mqc_shape_make(inst->host, &inst->ce, &inst->tpl, m, &sh->msg, nomem);
    if (!why && !*nomem && mosq_props_add(inst, m, sh) < 0)
        *nomem = 1;
    return why;
}

void mosq_shape_free(mosq_shape *sh)
{
    mosquitto_property_free_all(&sh->props);
    mqc_shape_free(&sh->msg);
}
