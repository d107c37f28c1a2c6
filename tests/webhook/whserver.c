/*
 * whserver: the webhook tests' receiver, on libmicrohttpd, a thread per
 * connection (a slow answer holds up only its own connection).
 *
 *   whserver -p PORT_FILE -o RECORDS [-s SECRET_ENV]
 *
 * Listens on a free 127.0.0.1 port (written to PORT_FILE once ready) and
 * answers every POST by its X-Event-Type:
 *   *fail.400*  400 always
 *   *fail.latin1* 400 always, the body in Latin-1 (not valid UTF-8)
 *   *fail.500*  500 to the first two requests of an event id, then 200
 *   *fail.429*  429 with Retry-After: 1 to the first request, then 200
 *   *fail.slow* 200 after 8 s to the first request, then 200 at once
 *   *stall.body* 200 at once, then a body (chunked) that never ends: a byte
 *               every 500 ms until the client hangs up
 *   *push.429*  429 without Retry-After, always (and *push.503*, *push.408*)
 *   *push.twice* 429 with Retry-After: 1 to the first two requests, then 200
 *   *push.reset* no answer: the connection is closed at once
 *   *hang*      accepted, never answered (until the server stops, at most 60 s)
 *   otherwise   200
 * With -s, the X-Signature header must be sha256=<hex HMAC-SHA256 of the
 * body> keyed with the variable's value, else 401. Every request is one
 * tab-separated line in RECORDS:
 *   seq ms status event_id event_type aggregate_type aggregate_id created_at
 *   destination path(still percent-encoded) tenant content_type sig_ok nth body_md5
 * where ms is monotonic milliseconds, nth counts requests of that event id
 * and sig_ok is 1 when the signature was checked and right. Stops on SIGTERM.
 */
#include <microhttpd.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct seen {
    struct seen *next;
    char id[64];
    int count;
} seen;

static FILE *records;
static const char *secret;
static seen *table[65536];
static long seq;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* table, seq, records */
static volatile int stopping; /* a *hang* answer gives up: MHD_stop_daemon joins its thread */

typedef struct {
    char *buf;
    size_t len, cap;
} body;

static int nth_request(const char *id)
{
    unsigned h = 5381;
    for (const char *p = id; *p; p++)
        h = h * 33 + (unsigned char)*p;
    seen **slot = &table[h % 65536], *s;
    for (s = *slot; s; s = s->next)
        if (strcmp(s->id, id) == 0)
            return ++s->count;
    s = calloc(1, sizeof *s);
    snprintf(s->id, sizeof s->id, "%.63s", id);
    s->next = *slot;
    *slot = s;
    return s->count = 1;
}

static void hex(const unsigned char *md, unsigned len, char *out)
{
    for (unsigned i = 0; i < len; i++)
        sprintf(out + 2 * i, "%02x", md[i]);
    out[2 * len] = '\0';
}

static int signature_ok(struct MHD_Connection *c, const body *b)
{
    const char *sig = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Signature");
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    char want[2 * EVP_MAX_MD_SIZE + 1];
    HMAC(EVP_sha256(), secret, (int)strlen(secret), (const unsigned char *)(b->buf ? b->buf : ""),
         b->len, md, &len);
    hex(md, len, want);
    return sig && strncmp(sig, "sha256=", 7) == 0 && strlen(sig + 7) == strlen(want) &&
           CRYPTO_memcmp(sig + 7, want, strlen(want)) == 0;
}

/* A header value for the record: "-" when absent, no tabs or newlines. */
static const char *field(struct MHD_Connection *c, const char *name, char *out, size_t size)
{
    const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
    snprintf(out, size, "%s", v ? (*v ? v : "(empty)") : "-");
    for (char *p = out; *p; p++)
        if (*p == '\t' || *p == '\n' || *p == '\r')
            *p = ' ';
    return out;
}

/* The body of a *stall.body* answer: one byte at once (the headers go with
 * it), then one every 500 ms, never the end. */
static ssize_t trickle(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)cls, (void)max;
    if (pos)
        usleep(500 * 1000);
    buf[0] = '.';
    return 1;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **state)
{
    (void)cls, (void)version;
    body *b = *state;
    if (!b) {
        *state = calloc(1, sizeof(body));
        return MHD_YES;
    }
    if (*upload_size) {
        if (b->len + *upload_size > b->cap) {
            b->cap = (b->len + *upload_size) * 2;
            b->buf = realloc(b->buf, b->cap);
        }
        memcpy(b->buf + b->len, upload, *upload_size);
        b->len += *upload_size;
        *upload_size = 0;
        return MHD_YES;
    }
    char f[8][512], md5hex[33];
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned md_len = 0;
    EVP_Digest(b->buf ? b->buf : "", b->len, md, &md_len, EVP_md5(), NULL);
    hex(md, md_len, md5hex);
    field(c, "X-Event-Id", f[0], sizeof f[0]);
    field(c, "X-Event-Type", f[1], sizeof f[1]);
    pthread_mutex_lock(&lock);
    int nth = nth_request(f[0]);
    pthread_mutex_unlock(&lock);
    int sig_ok = secret && signature_ok(c, b);
    unsigned status = 200;
    int stall = 0;
    const char *text = "ok\n", *retry_after = NULL;
    if (strcmp(method, "POST") != 0) {
        status = 405, text = "POST only\n";
    } else if (secret && !sig_ok) {
        status = 401, text = "bad signature\n";
    } else if (strstr(f[1], "fail.latin1")) {
        /* "réponse refusée: «café crème»" in Latin-1 */
        status = 400, text = "r\xe9ponse refus\xe9"
                             "e: \xab"
                             "caf\xe9 cr\xe8me\xbb\n";
    } else if (strstr(f[1], "fail.400")) {
        status = 400, text = "bad event: \"fail.400\"\tis refused\n";
    } else if (strstr(f[1], "fail.500") && nth <= 2) {
        status = 500, text = "try again\n";
    } else if (strstr(f[1], "fail.429") && nth == 1) {
        status = 429, text = "slow down\n", retry_after = "1";
    } else if (strstr(f[1], "fail.slow") && nth == 1) {
        usleep(8000 * 1000); /* past the client's timeout (3 s in the test): it has hung up */
    } else if (strstr(f[1], "stall.body")) {
        stall = 1;
    } else if (strstr(f[1], "push.429") || strstr(f[1], "push.503") || strstr(f[1], "push.408")) {
        status = (unsigned)atoi(strstr(f[1], "push.") + 5), text = "not now\n";
    } else if (strstr(f[1], "push.twice") && nth <= 2) {
        status = 429, text = "slow down\n", retry_after = "1";
    } else if (strstr(f[1], "push.reset")) {
        status = 0; /* recorded as 0: the connection is closed without an answer */
    } else if (strstr(f[1], "hang")) {
        for (int i = 0; i < 600 && !stopping; i++) /* the client hangs up long before */
            usleep(100 * 1000);
        status = 0;
    }
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    pthread_mutex_lock(&lock);
    fprintf(records, "%ld\t%lld\t%u\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", ++seq,
            (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000, status, f[0], f[1],
            field(c, "X-Aggregate-Type", f[2], sizeof f[2]),
            field(c, "X-Aggregate-Id", f[3], sizeof f[3]),
            field(c, "X-Created-At", f[4], sizeof f[4]),
            field(c, "X-Outbox-Destination", f[5], sizeof f[5]), url,
            field(c, "X-Header-tenant", f[6], sizeof f[6]),
            field(c, "Content-Type", f[7], sizeof f[7]), sig_ok, nth, md5hex);
    fflush(records);
    pthread_mutex_unlock(&lock);
    if (status == 0)
        return MHD_NO; /* closes the connection, nothing sent */
    struct MHD_Response *r =
        stall ? MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64, trickle, NULL, NULL)
              : MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
    if (retry_after)
        MHD_add_response_header(r, "Retry-After", retry_after);
    enum MHD_Result rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}

/* Leaves the path as sent, so the records show the driver's encoding. */
static size_t keep_escaped(void *cls, struct MHD_Connection *c, char *s)
{
    (void)cls, (void)c;
    return strlen(s);
}

static void completed(void *cls, struct MHD_Connection *c, void **state,
                      enum MHD_RequestTerminationCode why)
{
    (void)cls, (void)c, (void)why;
    body *b = *state;
    if (b)
        free(b->buf);
    free(b);
    *state = NULL;
}

int main(int argc, char **argv)
{
    const char *port_file = NULL, *out = NULL;
    int opt;
    while ((opt = getopt(argc, argv, "p:o:s:")) != -1) {
        if (opt == 'p')
            port_file = optarg;
        else if (opt == 'o')
            out = optarg;
        else if (opt == 's' && !(secret = getenv(optarg)))
            return fprintf(stderr, "whserver: %s is not set\n", optarg), 2;
        else if (opt != 's')
            return fprintf(stderr, "usage: whserver -p PORT_FILE -o RECORDS [-s SECRET_ENV]\n"), 2;
    }
    if (!port_file || !out || !(records = fopen(out, "w")))
        return fprintf(stderr, "whserver: -p and a writable -o are required\n"), 2;
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL); /* before MHD's thread starts */
    struct sockaddr_in addr = {
        .sin_family = AF_INET, .sin_port = 0, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, answer,
        NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr, MHD_OPTION_NOTIFY_COMPLETED,
        completed, NULL, MHD_OPTION_UNESCAPE_CALLBACK, keep_escaped, NULL,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)1000, MHD_OPTION_END);
    if (!d)
        return fprintf(stderr, "whserver: cannot start the daemon\n"), 1;
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", port_file);
    FILE *pf = fopen(tmp, "w");
    if (!pf || fprintf(pf, "%u\n", (unsigned)info->port) < 0 || fclose(pf) != 0 ||
        rename(tmp, port_file) != 0)
        return fprintf(stderr, "whserver: cannot write %s\n", port_file), 1;
    int sig;
    sigwait(&stop, &sig);
    stopping = 1;
    MHD_stop_daemon(d);
    fclose(records);
    return 0;
}
