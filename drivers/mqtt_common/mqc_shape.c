/*
 * MQTT 5 drivers: shaping a message (envelope or CloudEvent, templates)
 * once, for the checks and the copy both, and checking its texts: a
 * non-UTF-8 string would make the broker drop the connection for everyone.
 */
#include <stdio.h>
#include <string.h>

#include "mqc_shape.h"
#include "mqc_text.h"

#define MQC_WHY_MAX 160

/* Expands option `name`'s template tpl (NULL: none) for m into buf; *out is
 * the text, or NULL when there is no template or it expands to nothing.
 * 0, or -1 with err when it does not fit. */
static int mqc_expand(const char *name, const char *tpl, const obx_message *m, char *buf,
                      const char **out, char *err, size_t err_size)
{
    *out = NULL;
    if (!tpl)
        return 0;
    if (obx_ce_expand(tpl, m, buf, MQC_PROP_TEXT_MAX) < 0) {
        snprintf(err, err_size, "%s \"%.40s...\" is longer than %d bytes", name, buf,
                 MQC_PROP_TEXT_MAX - 1);
        return -1;
    }
    *out = *buf ? buf : NULL;
    return 0;
}

/* The properties from templates; the row's content type where none is set. */
static int mqc_shape_props(const mqc_templates *tpl, const obx_message *m, mqc_shape *sh, char *err,
                           size_t err_size)
{
    if (mqc_expand("content_type", tpl->content_type, m, sh->text[0], &sh->ct, err, err_size) < 0 ||
        mqc_expand("response_topic", tpl->response_topic, m, sh->text[1], &sh->response_topic, err,
                   err_size) < 0 ||
        mqc_expand("correlation_data", tpl->correlation_data, m, sh->text[2], &sh->correlation_data,
                   err, err_size) < 0)
        return -1;
    if (!sh->ct)
        sh->ct = m->content_type && *m->content_type ? m->content_type : NULL;
    const char *bad = tpl->response_topic ? mqc_topic_problem(sh->response_topic) : NULL;
    if (bad) {
        snprintf(err, err_size, "response_topic \"%.64s\" (from \"%.64s\"): %s",
                 sh->response_topic ? sh->response_topic : "", tpl->response_topic, bad);
        return -1;
    }
    return 0;
}

/* 0, or -1 (the message's fault) / -2 (no memory) with the reason in err. */
static int mqc_shape_fill(const obx_host *host, const obx_ce_config *ce, const mqc_templates *tpl,
                          const obx_message *m, mqc_shape *sh, char *err, size_t err_size)
{
    if (mqc_shape_props(tpl, m, sh, err, err_size) != 0)
        return -1;
    if (ce->mode != OBX_CE_OFF) {
        int rc = obx_ce_fill(&sh->ce, ce, host, m, OBX_CE_MQTT, err, err_size);
        if (rc != 0)
            return rc;
        for (size_t i = 0; i < sh->ce.count; i++)
            sh->field[sh->count++] = sh->ce.attr[i];
        sh->body = sh->ce.body;
        sh->body_len = sh->ce.body_len;
        sh->ct = sh->ce.content_type;
        return 0;
    }
    obx_envelope_fill_host(&sh->env, host, m, OBX_ENVELOPE_SNAKE, OBX_ENVELOPE_STANDARD);
    for (size_t i = 0; i < sh->env.count; i++) {
        sh->field[sh->count].name = sh->env.field[i].name;
        sh->field[sh->count++].value = sh->env.field[i].value;
    }
    return 0;
}

const char *mqc_shape_make(const obx_host *host, const obx_ce_config *ce, const mqc_templates *tpl,
                           const obx_message *m, mqc_shape *sh, int *nomem)
{
    static __thread char why[MQC_WHY_MAX];
    memset(sh, 0, sizeof *sh);
    sh->body = m->payload;
    sh->body_len = m->payload_len;
    *nomem = 0;
    const char *tp = mqc_topic_problem(m->destination);
    if (tp)
        return tp;
    int rc = mqc_shape_fill(host, ce, tpl, m, sh, why, sizeof why);
    if (rc == -2) {
        *nomem = 1; /* retriable */
        return NULL;
    }
    if (rc != 0)
        return why;
    for (size_t i = 0; i < sh->count; i++)
        if (!mqc_text_ok(sh->field[i].value))
            return "invalid header: an event field is not valid UTF-8 or has control characters";
    for (size_t i = 0; i < m->header_count; i++) {
        const obx_header *h = &m->headers[i];
        if (h->key && h->value && (!mqc_text_ok(h->key) || !mqc_text_ok(h->value)))
            return "invalid header: key or value is not valid UTF-8, has control characters or is "
                   "too long";
    }
    if (sh->ct && !mqc_text_ok(sh->ct))
        return "invalid content type: not valid UTF-8, has control characters or is too long";
    return NULL;
}

void mqc_shape_free(mqc_shape *sh)
{
    obx_ce_event_free(&sh->ce);
}
