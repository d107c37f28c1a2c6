/* WAL mode's replication connection: START_REPLICATION on the slot with
 * pgoutput, the XLogData frames, keepalives, Standby Status Updates. */
#ifndef OBX_WAL_STREAM_H
#define OBX_WAL_STREAM_H

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"

typedef struct wal_stream {
    PGconn *conn;
    char *buf;            /* the last frame read (PQfreemem) */
    uint64_t server_end;  /* the walsender's position from its last keepalive */
    int reply_requested;  /* a keepalive asked for a status update now */
    uint64_t sent_flush;  /* the flush position last reported */
    long long sent_at_ms; /* when (monotonic) */
} wal_stream;

/* What opening the stream gave. */
typedef enum {
    WAL_OPEN_OK,
    WAL_OPEN_BUSY,  /* another process streams from the slot: wait as a standby */
    WAL_OPEN_LOST,  /* the slot is invalidated or gone: the relay cannot go on */
    WAL_OPEN_RETRY, /* the server cannot be reached now: try again */
} wal_open_result;

/* Connects and starts streaming from start_lsn (0: the slot's confirmed
 * position). err says why when not OK. */
wal_open_result wal_stream_open(wal_stream *s, const relay_config *cfg, uint64_t start_lsn,
                                char *err, size_t err_size);

/*
 * Waits up to timeout_ms for the next XLogData frame. Returns 1 with the
 * pgoutput message in *data and *len (valid until the next call), 0 when none
 * came (keepalives are absorbed into server_end and reply_requested), -1
 * when the stream ended or the connection was lost (err says why).
 */
int wal_stream_read(wal_stream *s, int timeout_ms, const char **data, size_t *len, char *err,
                    size_t err_size);

/* Takes what the socket holds now into the stream, without waiting (the
 * next wal_stream_read with timeout 0 returns it). Returns 0, or -1 when the
 * connection is lost (the next wal_stream_read says why). */
int wal_stream_take(wal_stream *s);

/* Sends a Standby Status Update: written, flushed and applied = flush.
 * With ask, the server answers with a keepalive. Returns 0 or -1. */
int wal_stream_status(wal_stream *s, uint64_t flush, int ask);

void wal_stream_close(wal_stream *s);

/* "X/Y" as PostgreSQL writes an LSN; 0 when it cannot be parsed. */
uint64_t wal_lsn_parse(const char *text);

#endif
