/* WAL mode's own series: what the slot holds back, the window's bytes,
 * whether this process streams, the logical messages ignored; kept per
 * outbox in relay_state.gauges. */
#ifndef OBX_WAL_METRICS_H
#define OBX_WAL_METRICS_H

#include <stdatomic.h>
#include <stdio.h>

#include "host/relay_state.h"

typedef struct wal_gauges {
    atomic_llong lag_bytes;     /* WAL the slot holds past the confirmed position */
    atomic_int lag_known;       /* lag_bytes has been read once */
    atomic_llong lag_ms;        /* how old the oldest unconfirmed commit is */
    atomic_llong confirmed_lsn; /* the position confirmed to the slot */
    atomic_llong window_bytes, window_peak_bytes; /* rows held unfinished */
    atomic_int streaming; /* 1: this process streams; 0: it waits as a standby */
    atomic_llong ignored; /* logical messages with the relay's prefix ignored */
} wal_gauges;

/* source_kind.backlog_bytes: the slot's lag, as last checked, while the
 * window holds unfinished events (else 0); -1 before the first check. */
long long wal_backlog_bytes(const relay_state *st);

/* source_kind.metrics. */
void wal_metrics(FILE *f, const relay_state *st);

#endif
