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

/* Declared options: the host rejects any other name and checks the types. */
static const obx_option file_options[] = {
    {"path", OBX_OPT_STRING, 0, "file to append JSON lines to; \"-\" is stdout (default)"},
    {"fsync", OBX_OPT_BOOL, 0, "fsync after each batch before acknowledging (default false)"},
    {NULL, 0, 0, NULL},
};

struct obx_instance {
    const obx_host *host;
    int fd;
    int own_fd; /* 0 for stdout: never close it */
    int fsync;
    char *buf; /* one batch of lines, reused: one write per batch */
    size_t len, cap;
};

static obx_instance *file_create(const obx_host *host, char *errstr, size_t errstr_size)
{
    const char *path = "-";
    int do_fsync = 0;
    host->get_string(host->host_ctx, "path", &path); /* unset: keep the default */
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

static void file_iso8601(int64_t us, char *out, size_t size)
{
    time_t secs = (time_t)(us >= 0 ? us / 1000000 : (us - 999999) / 1000000);
    long micros = (long)(us - (int64_t)secs * 1000000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    size_t n = strftime(out, size, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, size - n, ".%06ldZ", micros);
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

/* Builds the JSON object of one message; NULL when out of memory. */
static json_t *file_to_json(const obx_message *m)
{
    char created[40];
    file_iso8601(m->created_at_us, created, sizeof created);

    json_t *headers = json_object();
    for (size_t i = 0; i < m->header_count; i++)
        json_object_set_new(headers, m->headers[i].key, json_string(m->headers[i].value));

    json_t *payload = NULL;
    int base64 = 0;
    if (!m->payload) {
        payload = json_null(); /* the outbox payload column is nullable */
    } else if (m->content_type && strcmp(m->content_type, "application/json") == 0) {
        payload = json_loadb(m->payload, m->payload_len, JSON_DECODE_ANY, NULL);
    }
    if (!payload) { /* binary, or JSON that does not parse: keep the exact bytes */
        char *b64 = file_base64(m->payload, m->payload_len);
        payload = json_string(b64 ? b64 : "");
        free(b64);
        base64 = 1;
    }
    json_t *obj =
        json_pack("{s:s?, s:s?, s:s?, s:s?, s:s?, s:s, s:I, s:o, s:o}", "event_id", m->event_id,
                  "event_type", m->event_type, "aggregate_type", m->aggregate_type, "aggregate_id",
                  m->aggregate_id, "destination", m->destination, "created_at", created, "attempt",
                  (json_int_t)m->attempt, "headers", headers, "payload", payload);
    if (obj && base64)
        json_object_set_new(obj, "payload_encoding", json_string("base64"));
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
    inst->len = 0;
    for (size_t i = 0; i < count; i++) {
        json_t *obj = file_to_json(&msgs[i]);
        char *line = obj ? json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
        /* a message we cannot even format is refused now: no completion follows */
        accept[i] = line && file_append(inst, line, strlen(line)) == 0 ? OBX_OK : OBX_RETRIABLE;
        free(line);
        json_decref(obj);
    }
    /* The "broker" acknowledges when the bytes are written (and synced):
     * only then is a completion OK. A failed write is worth retrying. */
    int err = file_write_all(inst);
    for (size_t i = 0; i < count; i++) {
        if (accept[i] != OBX_OK)
            continue;
        if (err == 0)
            inst->host->complete(inst->host->host_ctx, msgs[i].token, OBX_OK, 0, NULL);
        else
            inst->host->complete(inst->host->host_ctx, msgs[i].token, OBX_RETRIABLE, err,
                                 strerror(err));
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
    free(inst);
}

static const obx_driver_def file_def = {
    OBX_DRIVER_DEF_HEAD,
    .name = "file",
    .version = "1.0.0",
    .description = "writes each message as a JSON line to a file or stdout (reference driver)",
    .options = file_options,
    .create = file_create,
    .publish_batch = file_publish_batch,
    .poll = NULL, /* completions are synchronous */
    .flush = file_flush,
    .close = file_close,
    .destroy = file_destroy,
};

/* The only exported symbol: everything else is hidden by the build. */
OBX_DRIVER_EXPORT const obx_driver_def *obx_driver_entry(void)
{
    return &file_def;
}
