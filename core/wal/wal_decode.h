/* pgoutput (protocol 1) decoded into what the relay needs: transaction
 * bounds, the outbox table's inserts and, when accepted, logical messages. */
#ifndef OBX_WAL_DECODE_H
#define OBX_WAL_DECODE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "event/event_row.h"


typedef enum { WAL_NONE, WAL_BEGIN, WAL_COMMIT, WAL_EVENT } wal_change_kind;

typedef struct wal_change {
    wal_change_kind kind;
    uint64_t lsn;        /* COMMIT: the transaction's end, the position to confirm */
    long long commit_us; /* BEGIN: commit time, Unix microseconds */
    event_row *row;        /* EVENT: the caller owns it */
} wal_change;

typedef struct wal_decoder {
    const relay_config *cfg;
    uint32_t relid; /* the outbox table's relation id, once announced */
    int have_relation;
    int column[WF_COUNT]; /* tuple index of each field, -1 when the table lacks it */
    char prefix[300];     /* the logical messages' prefix */
    atomic_llong *ignored; /* counts the messages it ignores (wal_gauges) */
} wal_decoder;

void wal_decoder_init(wal_decoder *d, const relay_config *cfg, atomic_llong *ignored);

/* Decodes one pgoutput message. Returns 0 (with out->kind WAL_NONE for what
 * the relay ignores) or -1 with err on a malformed or unusable message. */
int wal_decode(wal_decoder *d, const char *data, size_t len, wal_change *out, char *err,
               size_t err_size);



#endif
