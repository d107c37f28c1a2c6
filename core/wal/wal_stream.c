#include "wal/wal_stream.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/select.h>
#include <time.h>

#include "base/clock.h"
#include "db/db.h"

/* Microseconds between the Unix epoch and PostgreSQL's (2000-01-01). */
#define PG_EPOCH_OFFSET_US 946684800000000LL

static uint64_t read_u64(const char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | (unsigned char)p[i];
    return v;
}

static void write_u64(char *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (char)(v & 0xff);
}

uint64_t wal_lsn_parse(const char *text)
{
    unsigned hi, lo;
    if (!text || sscanf(text, "%X/%X", &hi, &lo) != 2)
        return 0;
    return (uint64_t)hi << 32 | lo;
}

static const char *sqlstate(const PGresult *res)
{
    const char *s = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    return s ? s : "";
}

wal_open_result wal_stream_open(wal_stream *s, const relay_config *cfg, uint64_t start_lsn,
                                char *err, size_t err_size)
{
    memset(s, 0, sizeof *s);
    s->conn = db_connect_replication(cfg, "outbox-relay-wal", err, err_size);
    if (!s->conn)
        return WAL_OPEN_RETRY;
    /* the slot name is checked to be [a-z0-9_]; the publication is quoted
     * as an identifier inside a string literal */
    char quoted[4 * 64 + 8], cmd[512];
    size_t q = 0;
    for (const char *p = cfg->wal_publication; *p && q < sizeof quoted - 8; p++) {
        if (*p == '"')
            quoted[q++] = '"';
        if (*p == '\'')
            quoted[q++] = '\'';
        quoted[q++] = *p;
    }
    quoted[q] = '\0';
    snprintf(cmd, sizeof cmd,
             "START_REPLICATION SLOT %s LOGICAL %X/%X (proto_version '1', "
             "publication_names '\"%s\"', messages 'true')",
             cfg->wal_slot, (unsigned)(start_lsn >> 32), (unsigned)start_lsn, quoted);
    PGresult *res = PQexec(s->conn, cmd);
    if (PQresultStatus(res) == PGRES_COPY_BOTH) {
        PQclear(res);
        s->sent_flush = start_lsn;
        return WAL_OPEN_OK;
    }
    char why[512];
    db_error(s->conn, res, why, sizeof why);
    const char *state = sqlstate(res);
    wal_open_result rc = WAL_OPEN_RETRY;
    if (strcmp(state, "55006") == 0) {
        rc = WAL_OPEN_BUSY; /* "replication slot ... is active for PID ..." */
    } else if (strcmp(state, "42704") == 0 || strstr(why, "can no longer get changes") ||
               strstr(why, "invalidated")) {
        rc = WAL_OPEN_LOST;
    } else if (!db_lost(s->conn) && state[0] && strcmp(state, "57P03") != 0 &&
               strncmp(state, "08", 2) != 0) {
        rc = WAL_OPEN_LOST; /* refused for a reason waiting will not fix */
    }
    snprintf(err, err_size, "START_REPLICATION on slot %s: %s", cfg->wal_slot, why);
    PQclear(res);
    wal_stream_close(s);
    return rc;
}

/* Waits for the socket to become readable, up to timeout_ms. */
static int wait_readable(PGconn *conn, int timeout_ms)
{
    int fd = PQsocket(conn);
    if (fd < 0)
        return -1;
    fd_set r;
    FD_ZERO(&r);
    FD_SET(fd, &r);
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    int n = select(fd + 1, &r, NULL, NULL, &tv);
    return n < 0 && errno != EINTR ? -1 : 0;
}

int wal_stream_read(wal_stream *s, int timeout_ms, const char **data, size_t *len, char *err,
                    size_t err_size)
{
    if (s->buf) {
        PQfreemem(s->buf);
        s->buf = NULL;
    }
    for (int waited = 0;;) {
        int n = PQgetCopyData(s->conn, &s->buf, 1);
        if (n == 0) {
            if (waited || timeout_ms == 0)
                return 0;
            waited = 1;
            if (wait_readable(s->conn, timeout_ms) < 0 || !PQconsumeInput(s->conn))
                goto lost;
            continue;
        }
        if (n < 0)
            goto lost;
        if (s->buf[0] == 'k' && n >= 18) { /* keepalive: walEnd, time, reply requested */
            s->server_end = read_u64(s->buf + 1);
            s->reply_requested |= s->buf[17] != 0;
            PQfreemem(s->buf);
            s->buf = NULL;
            continue;
        }
        if (s->buf[0] == 'w' && n >= 25) { /* XLogData: start, end, time, then pgoutput */
            *data = s->buf + 25;
            *len = (size_t)n - 25;
            return 1;
        }
        PQfreemem(s->buf); /* nothing else is sent on a logical stream */
        s->buf = NULL;
    }
lost:;
    char why[512] = "the server ended the stream";
    PGresult *res = PQgetResult(s->conn);
    if ((res && PQresultErrorMessage(res)[0]) || PQerrorMessage(s->conn)[0])
        db_error(s->conn, res, why, sizeof why);
    PQclear(res);
    snprintf(err, err_size, "replication stream ended: %s", why);
    return -1;
}

int wal_stream_take(wal_stream *s)
{
    return PQconsumeInput(s->conn) ? 0 : -1;
}

int wal_stream_status(wal_stream *s, uint64_t flush, int ask)
{
    char msg[1 + 8 * 4 + 1];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now_us = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000 - PG_EPOCH_OFFSET_US;
    msg[0] = 'r';
    write_u64(msg + 1, flush);  /* written */
    write_u64(msg + 9, flush);  /* flushed: what the slot may forget */
    write_u64(msg + 17, flush); /* applied */
    write_u64(msg + 25, (uint64_t)now_us);
    msg[33] = ask ? 1 : 0;
    if (PQputCopyData(s->conn, msg, sizeof msg) != 1 || PQflush(s->conn) != 0)
        return -1;
    s->sent_flush = flush;
    s->sent_at_ms = now_ms();
    s->reply_requested = 0;
    return 0;
}

void wal_stream_close(wal_stream *s)
{
    if (s->buf)
        PQfreemem(s->buf);
    s->buf = NULL;
    if (s->conn)
        PQfinish(s->conn);
    s->conn = NULL;
}
