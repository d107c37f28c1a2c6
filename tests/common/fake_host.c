/* The recording fake host: see fake_host.h. */
#include "fake_host.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"
#include "host/options.h"

int64_t fh_now_ms(void)
{
    return now_ms(); /* the engine's clock */
}

void fh_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

loaded_driver *fh_load(const char *path, char *err, size_t err_size)
{
    log_setup(getenv("OBX_TEST_DEBUG") ? OBX_LOG_DEBUG : OBX_LOG_INFO, LOG_FORMAT_TEXT);
    return loader_open(NULL, path, err, err_size);
}

/* ---- what the driver calls ---- */

/* The relay's log, keeping the last line that starts with watch_prefix. */
static void fh_log(void *arg, obx_log_level level, const char *fmt, ...)
{
    fake_host *fh = (fake_host *)((host_ctx *)arg);
    char line[1024];
    va_list ap;
    if (!fmt)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (fh->watch_prefix && strncmp(line, fh->watch_prefix, strlen(fh->watch_prefix)) == 0) {
        pthread_mutex_lock(&fh->lock);
        snprintf(fh->watched, sizeof fh->watched, "%s", line);
        pthread_mutex_unlock(&fh->lock);
    }
    if ((unsigned)level > OBX_LOG_DEBUG)
        level = OBX_LOG_DEBUG;
    log_scoped(level, fh->ctx.scope, "%s", line);
}

/* The ledger's violation counters, as the harnesses read them (fh->lock held). */
static void fh_sync_counts(fake_host *fh)
{
    ledger *r = &fh->rec;
    pthread_mutex_lock(&r->lock);
    fh->duplicates = r->dup;
    fh->unknown = r->unknown + r->foreign;
    fh->after_close = r->after_close;
    fh->refused_completed = r->refused_completed;
    fh->bad_status = r->bad_status;
    fh->bad_refusals = r->bad_refuse;
    pthread_mutex_unlock(&r->lock);
}

/* The ledger checks the completion; the harnesses' view of it is kept here. */
static void fh_on_complete(void *arg, uint64_t token, obx_status status, int native_code,
                           const char *detail)
{
    fake_host *fh = arg;
    (void)native_code;
    pthread_mutex_lock(&fh->lock);
    ledger_complete(&fh->rec, token, status, detail);
    fh->completions++;
    if ((unsigned)status <= OBX_STATUS_MAX)
        fh->by_status[status]++;
    if (status != OBX_OK)
        snprintf(fh->last_detail, sizeof fh->last_detail, "%s", detail ? detail : "");
    if (token < fh->cap) {
        fh_token *t = &fh->tok[token];
        t->in_flight = 0;
        t->completions++;
        t->status = status;
        snprintf(t->detail, sizeof t->detail, "%s", detail ? detail : "");
    }
    if (status == OBX_OK) {
        int64_t now = fh_now_ms();
        if (fh->last_ok_ms && now - fh->last_ok_ms > fh->longest_no_ok_ms)
            fh->longest_no_ok_ms = now - fh->last_ok_ms;
        fh->last_ok_ms = now;
    }
    fh_sync_counts(fh);
    pthread_cond_broadcast(&fh->changed);
    pthread_mutex_unlock(&fh->lock);
}

/* host->refuse: checked by the ledger (inside publish_batch, once, for a
 * message of the batch that it refuses). */
static void fh_on_refuse(void *arg, uint64_t token, int native_code, const char *detail)
{
    fake_host *fh = arg;
    (void)native_code;
    pthread_mutex_lock(&fh->lock);
    ledger_refuse(&fh->rec, token, detail);
    fh->refusals++;
    snprintf(fh->last_refusal, sizeof fh->last_refusal, "%s", detail ? detail : "");
    if (token < fh->cap) {
        fh->tok[token].refusals++;
        snprintf(fh->tok[token].detail, sizeof fh->tok[token].detail, "%s", detail ? detail : "");
    }
    fh_sync_counts(fh);
    pthread_mutex_unlock(&fh->lock);
}

/* ---- set-up ---- */

fake_host *fh_new(const loaded_driver *drv, size_t cap)
{
    fake_host *fh = calloc(1, sizeof *fh);
    fh->drv = drv;
    fh->def = &drv->def;
    fh->cfg.path = "(harness options)";
    fh->output.name = "harness";
    fh->output.driver = (char *)drv->def.name;
    fh->output.line = 1;
    pthread_mutex_init(&fh->lock, NULL);
    pthread_cond_init(&fh->changed, NULL);
    fh->cap = cap;
    fh->tok = calloc(cap ? cap : 1, sizeof *fh->tok);
    fh->slots = calloc(cap ? cap : 1, sizeof *fh->slots);
    ledger_init(&fh->rec, 0, fh->slots, cap); /* tag 0: tokens are the indexes */
    host_init(&fh->ctx, drv, &fh->output, fh_on_complete, fh);
    fh->ctx.on_refuse = fh_on_refuse;
    fh->ctx.host.log = fh_log; /* host_ctx is the first member: arg is fh */
    return fh;
}

void fh_free(fake_host *fh)
{
    if (!fh)
        return;
    for (size_t i = 0; i < fh->output.option_count; i++) {
        free(fh->output.options[i].name);
        free(fh->output.options[i].s);
    }
    for (size_t i = 0; i < fh->output.property_count; i++) {
        free(fh->output.properties[i].key);
        free(fh->output.properties[i].value);
    }
    free(fh->output.options);
    free(fh->output.properties);
    pthread_mutex_destroy(&fh->lock);
    pthread_cond_destroy(&fh->changed);
    pthread_mutex_destroy(&fh->rec.lock);
    free(fh->slots);
    free(fh->tok);
    free(fh);
}

/* TEXT as the config parser would type it for a TYPE option. */
static int parse_value(obx_option_type type, const char *text, cfg_value *v)
{
    char *end;
    errno = 0;
    v->type = (int)type;
    switch (type) {
    case OBX_OPT_STRING: return 0;
    case OBX_OPT_INT: v->i = strtoll(text, &end, 10); return errno || end == text || *end ? -1 : 0;
    case OBX_OPT_DOUBLE:
        v->d = strtod(text, &end);
        return errno || end == text || *end || !isfinite(v->d) ? -1 : 0;
    case OBX_OPT_BOOL:
        v->b = strcmp(text, "true") == 0;
        return v->b || strcmp(text, "false") == 0 ? 0 : -1;
    }
    return -1;
}

int fh_set(fake_host *fh, const char *name, const char *text)
{
    static const char *const words[] = {"a string", "an integer", "true or false", "a number"};
    const obx_option *o = options_find(fh->def, name);
    obx_option_type type = o ? o->type : OBX_OPT_STRING;
    cfg_value v = {.line = (int)fh->output.option_count + 1};
    if (parse_value(type, text, &v) < 0) {
        fprintf(stderr, "harness: option %s = \"%s\": must be %s\n", name, text, words[type]);
        return -1;
    }
    if (fh->output.option_count == fh->option_cap) {
        fh->option_cap = fh->option_cap ? 2 * fh->option_cap : 16;
        fh->output.options = realloc(fh->output.options, fh->option_cap * sizeof v);
    }
    v.name = strdup(name);
    v.s = strdup(text);
    fh->output.options[fh->output.option_count++] = v;
    return 0;
}

int fh_set_int(fake_host *fh, const char *name, int64_t value)
{
    char text[32];
    snprintf(text, sizeof text, "%lld", (long long)value);
    return fh_set(fh, name, text);
}

int fh_option(fake_host *fh, const char *name_eq_value)
{
    const char *eq = strchr(name_eq_value, '=');
    if (!eq || eq == name_eq_value) {
        fprintf(stderr, "harness: option \"%s\" is not name=value\n", name_eq_value);
        return -1;
    }
    char *name = strndup(name_eq_value, (size_t)(eq - name_eq_value));
    int rc = fh_set(fh, name, eq + 1);
    free(name);
    return rc;
}

int fh_property(fake_host *fh, const char *key_eq_value)
{
    const char *eq = strchr(key_eq_value, '=');
    if (!eq || eq == key_eq_value) {
        fprintf(stderr, "harness: property \"%s\" is not key=value\n", key_eq_value);
        return -1;
    }
    if (fh->output.property_count == fh->property_cap) {
        fh->property_cap = fh->property_cap ? 2 * fh->property_cap : 16;
        fh->output.properties =
            realloc(fh->output.properties, fh->property_cap * sizeof *fh->output.properties);
    }
    cfg_pair *p = &fh->output.properties[fh->output.property_count++];
    p->key = strndup(key_eq_value, (size_t)(eq - key_eq_value));
    p->value = strdup(eq + 1);
    return 0;
}

int fh_validate(fake_host *fh, char *err, size_t err_size)
{
    return host_validate_options(&fh->cfg, &fh->output, fh->drv, err, err_size);
}

obx_instance *fh_create(fake_host *fh, char *err, size_t err_size)
{
    if (fh_validate(fh, err, err_size) < 0)
        return NULL;
    return fh_create_unchecked(fh, err, err_size);
}

obx_instance *fh_create_unchecked(fake_host *fh, char *err, size_t err_size)
{
    err[0] = '\0';
    return fh->def->create(&fh->ctx.host, err, err_size);
}

/* ---- publishing and waiting ---- */

obx_status fh_publish(fake_host *fh, obx_instance *inst, const obx_message *msgs, size_t count,
                      obx_status *accept)
{
    /* in flight before the call: a completion may come from another thread
     * before publish_batch returns */
    pthread_mutex_lock(&fh->lock);
    for (size_t i = 0; i < count; i++)
        if (msgs[i].token < fh->cap)
            fh->tok[msgs[i].token].in_flight = 1;
    pthread_mutex_unlock(&fh->lock);
    ledger_publish_begin(&fh->rec, msgs, count);

    obx_status rc = fh->def->publish_batch(inst, msgs, count, accept);

    /* accept[] is the verdict whatever rc is: the driver writes every entry */
    ledger_publish_end(&fh->rec, msgs, count, accept);
    pthread_mutex_lock(&fh->lock);
    for (size_t i = 0; i < count; i++)
        if (msgs[i].token < fh->cap && accept[i] != OBX_OK)
            fh->tok[msgs[i].token].in_flight = 0; /* refused: no completion comes */
    fh_sync_counts(fh);
    pthread_mutex_unlock(&fh->lock);
    return rc;
}

void fh_close(fake_host *fh, obx_instance *inst)
{
    ledger_closing(&fh->rec);
    fh->def->close(inst);
    ledger_closed(&fh->rec);
}

size_t fh_completions(fake_host *fh)
{
    pthread_mutex_lock(&fh->lock);
    size_t n = fh->completions;
    pthread_mutex_unlock(&fh->lock);
    return n;
}

size_t fh_in_flight(fake_host *fh)
{
    return ledger_pending(&fh->rec);
}

size_t fh_count_status(fake_host *fh, uint64_t from, uint64_t to, obx_status status)
{
    size_t n = 0;
    pthread_mutex_lock(&fh->lock);
    for (uint64_t t = from; t < to && t < fh->cap; t++)
        n += fh->tok[t].completions == 1 && fh->tok[t].status == status;
    pthread_mutex_unlock(&fh->lock);
    return n;
}

/* One step of driving the instance: its poll (drivers that deliver
 * completions there) and a short flush. */
static void fh_drive(fake_host *fh, obx_instance *inst)
{
    if (fh->def->poll)
        fh->def->poll(inst, 50);
    if (fh->def->flush(inst, 50) == 0 && !fh->def->poll)
        fh_sleep_ms(10);
}

int fh_wait_completions(fake_host *fh, obx_instance *inst, size_t want, int timeout_ms)
{
    int64_t end = fh_now_ms() + timeout_ms;
    while (fh_completions(fh) < want) {
        if (fh_now_ms() >= end)
            return 0;
        fh_drive(fh, inst);
    }
    return 1;
}

int fh_wait_settled(fake_host *fh, obx_instance *inst, int timeout_ms)
{
    int64_t end = fh_now_ms() + timeout_ms;
    while (fh_in_flight(fh) > 0) {
        if (fh_now_ms() >= end)
            return 0;
        fh_drive(fh, inst);
    }
    return 1;
}

size_t fh_violations(fake_host *fh, char *why, size_t why_size)
{
    return ledger_violations(&fh->rec, why, why_size, 0);
}
