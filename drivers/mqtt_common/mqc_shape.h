/* MQTT 5 drivers: a message as it is sent, before a client library encodes
 * it: user properties, body, content type and the properties from templates. */
#ifndef OBX_MQC_SHAPE_H
#define OBX_MQC_SHAPE_H

#include <stddef.h>

#include "obx/cloudevents.h"
#include "obx/driver.h"
#include "obx/envelope.h"

/* An expanded property template, NUL included. */
#define MQC_PROP_TEXT_MAX 1024

/* The property templates from the options; NULL: that property is not sent
 * (content_type then is the row's own). */
typedef struct mqc_templates {
    const char *content_type, *response_topic, *correlation_data;
} mqc_templates;

/* The user properties (the relay's envelope, or with format = "cloudevents"
 * the CloudEvent's attributes; the row's headers follow them, from the
 * message), the body, the content type and the properties from templates
 * (NULL when not sent). mqc_shape_free releases a structured body. */
typedef struct mqc_shape {
    size_t count;
    obx_ce_attr field[OBX_CE_A_COUNT + OBX_ENVELOPE_MAX];
    const void *body;
    size_t body_len;
    const char *ct, *response_topic, *correlation_data;
    obx_envelope env;
    obx_ce_event ce;
    char text[3][MQC_PROP_TEXT_MAX];
} mqc_shape;

/* Shapes m and checks every text of it a broker would close the connection
 * for, the topic first: NULL when it can be sent (or *nomem: out of memory,
 * retriable), else why it never can be (valid until the thread's next
 * call). Call mqc_shape_free either way. */
const char *mqc_shape_make(const obx_host *host, const obx_ce_config *ce, const mqc_templates *tpl,
                           const obx_message *m, mqc_shape *sh, int *nomem);
void mqc_shape_free(mqc_shape *sh);

#endif
