/*
 * file: the reference driver. Read this one first when writing a driver.
 *
 * It "publishes" each message as one JSON line to a file (or stdout) and
 * treats a successful write + flush (+ fsync when asked) as the broker's
 * durable acknowledgement. Because the acknowledgement is synchronous, every
 * completion is made inside publish_batch, so poll is NULL, flush has
 * nothing to wait for and close has nothing to abort. A network driver
 * differs exactly there: it keeps in-flight messages until the broker
 * acknowledges them, and completes them from poll or its own thread.
 *
 * Who pays for a failure (include/obx/driver.h): a message it cannot encode
 * is refused with a reason (host->refuse), PERMANENT when the message itself
 * is bad, RETRIABLE when memory ran out: either counts an attempt, so it ends
 * dead after max_attempts. A failed write is the output's state (disk full,
 * I/O error), not the messages': they complete OBX_UNAVAILABLE, which counts
 * nothing, and the host pauses the output and offers a batch again later
 * (no probe: offering a batch is the file's probe).
 *
 * Lines are written in the order publish_batch gets them, so it keeps order
 * within an instance (OBX_DRIVER_IN_ORDER): with ordering on, the host hands
 * it runs of an aggregate. Once a message is refused, the later ones of its
 * aggregate in the batch are refused too, so none is written ahead of it.
 *
 * Line format:
 *   {"event_id":..,"event_type":..,"aggregate_type":..,"aggregate_id":..,
 *    "destination":..,"created_at":"2024-01-02T03:04:05.123456Z","attempt":1,
 *    "headers":{..},"payload":<JSON, or base64 text with "payload_encoding":"base64">}
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "obx/driver.h"
#include "obx/driver_util.h"
#include "obx/envelope.h"

/* Declared options: the host rejects any other name and checks the types. */
static const obx_option file_options[] = {
    {"path", OBX_OPT_STRING, 0, "file to append JSON lines to; \"-\" is stdout"},
    {"fsync", OBX_OPT_BOOL, 0, "fsync after each batch before acknowledging"},
    {NULL, 0, 0, NULL},
};

/* ABI 1.1, parallel to file_options: the host hands these defaults to the getters. */
static const obx_option_spec file_specs[] = {
    {.default_value = "-"},
    {.default_value = "false"},
};

struct obx_instance {
    const obx_host *host;
    int fd;
    int own_fd; /* 0 for stdout: never close it */
    int fsync;
    char *buf; /* one batch of lines, reused: one write per batch */
    size_t len, cap;
    obx_held held; /* aggregates with a refused message in this batch */
};

static obx_instance *file_create(const obx_host *host, char *errstr, size_t errstr_size)
{
    const char *path = "-"; /* a 1.1 host gives the declared default; a 1.0 host, nothing */
    int do_fsync = 0;
    host->get_string(host->host_ctx, "path", &path);
    host->get_bool(host->host_ctx, "fsync", &do_fsync);

    int fd = STDOUT_FILENO;
    if (strcmp(path, "-") != 0) {
        /* O_APPEND: several instances (workers, processes) may share the file */
        fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) {
            snprintf(errstr, errstr_size, "path %s: %s", path, strerror(errno));
            return NULL;
        }
    }
    obx_instance *inst = calloc(1, sizeof *inst);
    if (!inst) {
        if (fd != STDOUT_FILENO)
            close(fd);
        snprintf(errstr, errstr_size, "out of memory");
        return NULL;
    }
    inst->host = host;
    inst->fd = fd;
    inst->own_fd = fd != STDOUT_FILENO;
    inst->fsync = do_fsync;
    return inst;
}

static char *file_base64(const unsigned char *in, size_t len)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = malloc((len + 2) / 3 * 4 + 1);
    char *p = out;
    if (!out)
        return NULL;
    for (size_t i = 0; i < len; i += 3) {
        unsigned v = (unsigned)in[i] << 16;
        if (i + 1 < len)
            v |= (unsigned)in[i + 1] << 8;
        if (i + 2 < len)
            v |= in[i + 2];
        *p++ = tab[(v >> 18) & 63];
        *p++ = tab[(v >> 12) & 63];
        *p++ = i + 1 < len ? tab[(v >> 6) & 63] : '=';
        *p++ = i + 2 < len ? tab[v & 63] : '=';
    }
    *p = '\0';
    return out;
}

/* Why a message cannot be encoded, for its refusal. */
typedef struct file_refusal {
    obx_status status;
    const char *detail;
    char text[64]; /* room for a detail written here */
} file_refusal;

/* A JSON string of text, or NULL with why: jansson takes only valid UTF-8. */
static json_t *file_string(const char *text, const char *what, file_refusal *why)
{
    json_t *s = json_string(text);
    if (s)
        return s;
    /* the unchecked copy only fails for want of memory */
    json_t *raw = json_stringn_nocheck(text, strlen(text));
    *why = raw ? (file_refusal){OBX_PERMANENT, what, ""}
               : (file_refusal){OBX_RETRIABLE, "out of memory", ""};
    json_decref(raw);
    return NULL;
}

/* The payload: JSON as is; anything else (or JSON that does not parse) as base64. */
static json_t *file_payload(const obx_message *m, int *base64)
{
    int json = m->content_type && strcmp(m->content_type, "application/json") == 0;
    *base64 = 0;
    if (!m->payload || (json && m->payload_len == 0))
        return json_null(); /* the outbox payload column is nullable */
    json_t *payload = json ? json_loadb(m->payload, m->payload_len, JSON_DECODE_ANY, NULL) : NULL;
    if (payload)
        return payload;
    char *b64 = file_base64(m->payload, m->payload_len);
    payload = b64 ? json_string(b64) : NULL;
    free(b64);
    *base64 = 1;
    return payload;
}

/* One envelope field as JSON (the attempt and the sequence as numbers), or
 * NULL with why. */
static json_t *file_field(const obx_message *m, const obx_envelope_field *f, file_refusal *why)
{
    if (f->field == OBX_ENVELOPE_ATTEMPT)
        return json_integer((json_int_t)m->attempt);
    if (f->field == OBX_ENVELOPE_AGGREGATE_SEQ)
        return json_integer((json_int_t)strtoll(f->value, NULL, 10));
    json_t *s = file_string(f->value, NULL, why);
    if (!s && why->status == OBX_PERMANENT) {
        snprintf(why->text, sizeof why->text, "%s is not valid UTF-8", f->name);
        why->detail = why->text;
    }
    return s;
}

/* Builds the JSON object of one message; NULL with why when it cannot. */
static json_t *file_to_json(const obx_host *host, const obx_message *m, file_refusal *why)
{
    obx_envelope env;
    obx_envelope_fill_host(&env, host, m, OBX_ENVELOPE_SNAKE, OBX_ENVELOPE_ALL);
    *why = (file_refusal){OBX_RETRIABLE, "out of memory", ""};

    json_t *obj = json_object();
    json_t *headers = json_object();
    int base64;
    json_t *payload = file_payload(m, &base64);
    int ok = obj && headers && payload;
    for (size_t i = 0; i < env.count; i++) {
        const obx_envelope_field *f = &env.field[i];
        if (f->field == OBX_ENVELOPE_CREATED_AT) /* the line has always read: ids, then where */
            ok &= json_object_set_new(
                      obj, "destination",
                      file_string(m->destination, "destination is not valid UTF-8", why)) == 0;
        ok &= json_object_set_new(obj, f->name, file_field(m, f, why)) == 0; /* steals, even NULL */
    }
    for (size_t i = 0; ok && i < m->header_count; i++) {
        json_t *key = file_string(m->headers[i].key, "a header key is not valid UTF-8", why);
        json_t *value = file_string(m->headers[i].value, "a header value is not valid UTF-8", why);
        ok = key && value && json_object_set_new_nocheck(headers, m->headers[i].key, value) == 0;
        if (!key)
            json_decref(value);
        json_decref(key); /* it only checked the key's UTF-8 */
    }
    ok &= json_object_set_new(obj, "headers", headers) == 0;
    ok &= json_object_set_new(obj, "payload", payload) == 0;
    if (ok && base64)
        ok = json_object_set_new(obj, "payload_encoding", json_string("base64")) == 0;
    if (!ok) {
        json_decref(obj);
        return NULL;
    }
    return obj;
}

static int file_append(obx_instance *inst, const char *line, size_t n)
{
    if (inst->len + n + 1 > inst->cap) {
        size_t cap = inst->cap ? inst->cap : 4096;
        while (cap < inst->len + n + 1)
            cap *= 2;
        char *buf = realloc(inst->buf, cap);
        if (!buf)
            return -1;
        inst->buf = buf;
        inst->cap = cap;
    }
    memcpy(inst->buf + inst->len, line, n);
    inst->len += n;
    inst->buf[inst->len++] = '\n';
    return 0;
}

/* Writes the whole batch; returns 0 or an errno value. */
static int file_write_all(obx_instance *inst)
{
    for (size_t off = 0; off < inst->len;) {
        ssize_t w = write(inst->fd, inst->buf + off, inst->len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return errno;
        off += (size_t)w;
    }
    /* stdout may be a pipe or terminal: fsync does not apply there */
    if (inst->fsync && inst->own_fd && fsync(inst->fd) != 0)
        return errno;
    return 0;
}

static obx_status file_publish_batch(obx_instance *inst, const obx_message *msgs, size_t count,
                                     obx_status *accept)
{
    const obx_host *host = inst->host;
    inst->len = 0;
    obx_held_clear(&inst->held);
    int hold_all = 0; /* no room to remember a refused aggregate: refuse the rest */
    for (size_t i = 0; i < count; i++) {
        uint64_t aggregate = obx_aggregate_hash(&msgs[i]);
        if (hold_all || obx_held_has(&inst->held, aggregate)) {
            accept[i] = OBX_RETRIABLE;
            if (OBX_HOST_HAS(host, refuse))
                host->refuse(host->host_ctx, msgs[i].token, 0,
                             "not written in order: an earlier event of its aggregate was refused");
            continue;
        }
        file_refusal why;
        json_t *obj = file_to_json(inst->host, &msgs[i], &why);
        char *line = obj ? json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
        if (line && file_append(inst, line, strlen(line)) != 0) {
            free(line);
            line = NULL;
        }
        if (obj && !line)
            why = (file_refusal){OBX_RETRIABLE, "out of memory", ""};
        /* a message we cannot encode is refused now, with a reason: no completion follows */
        accept[i] = line ? OBX_OK : why.status;
        if (!line && OBX_HOST_HAS(host, refuse))
            host->refuse(host->host_ctx, msgs[i].token, 0, why.detail);
        if (!line && obx_held_add(&inst->held, aggregate) != 0)
            hold_all = 1;
        free(line);
        json_decref(obj);
    }
    /* The "broker" acknowledges when the bytes are written (and synced):
     * only then is a completion OK. */
    int err = file_write_all(inst);
    for (size_t i = 0; i < count; i++) {
        if (accept[i] != OBX_OK)
            continue;
        if (err == 0)
            host->complete(host->host_ctx, msgs[i].token, OBX_OK, 0, NULL);
        else
            host->complete(host->host_ctx, msgs[i].token, OBX_UNAVAILABLE, err, strerror(err));
    }
    return OBX_OK;
}

/* Everything completed inside publish_batch: nothing is ever in flight. */
static size_t file_flush(obx_instance *inst, int timeout_ms)
{
    (void)inst;
    (void)timeout_ms;
    return 0;
}

static void file_close(obx_instance *inst)
{
    if (inst->own_fd && inst->fd >= 0)
        close(inst->fd);
    inst->fd = -1; /* a second close finds nothing to do */
}

static void file_destroy(obx_instance *inst)
{
    file_close(inst);
    free(inst->buf);
    obx_held_free(&inst->held);
    free(inst);
}

static const obx_driver_def file_def = {
    OBX_DRIVER_DEF_HEAD,
    .name = "file",
    .version = "1.1.0",
    .description = "writes each message as a JSON line to a file or stdout (reference driver)",
    .options = file_options,
    .create = file_create,
    .publish_batch = file_publish_batch,
    .poll = NULL, /* completions are synchronous */
    .flush = file_flush,
    .close = file_close,
    .destroy = file_destroy,
    .option_specs = file_specs,
    .flags = OBX_DRIVER_IN_ORDER,
};

/* The only exported symbol: everything else is hidden by the build. */
OBX_DRIVER_EXPORT const obx_driver_def *obx_driver_entry(void)
{
    return &file_def;
}
