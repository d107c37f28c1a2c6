#include "wal/wal_metrics.h"

#include "telemetry/exposition.h"

long long wal_backlog_bytes(const relay_state *st)
{
    wal_gauges *g = st->gauges;
    if (!atomic_load(&g->lag_known))
        return -1;
    /* The lag counts every database's WAL since the last confirm: on a busy
     * server it is megabytes while the relay idles. Nothing of ours waits
     * when the window holds no unfinished event (the stream reads ahead as
     * far as the window lets it). */
    return atomic_load(&g->window_bytes) ? atomic_load(&g->lag_bytes) : 0;
}

/* WAL mode: how much the slot holds back, and whether this process streams. */
void wal_metrics(FILE *f, const relay_state *st)
{
    wal_gauges *g = st->gauges;
    expo_gauge(f, "outbox_relay_wal_slot_lag_bytes",
          "WAL the replication slot holds past the position confirmed to PostgreSQL.",
          (double)atomic_load(&g->lag_bytes));
    expo_gauge(f, "outbox_relay_wal_slot_lag_seconds",
          "Age of the oldest commit received and not yet confirmed.",
          atomic_load(&g->lag_ms) / 1000.0);
    expo_gauge(f, "outbox_relay_wal_window_bytes",
          "Bytes of the events read and not yet finished (bounded by relay.wal.max_in_flight_mb).",
          (double)atomic_load(&g->window_bytes));
    expo_gauge(f, "outbox_relay_wal_window_peak_bytes", "The most window_bytes has been.",
          (double)atomic_load(&g->window_peak_bytes));
    expo_gauge(f, "outbox_relay_wal_streaming",
          "1 while this process streams the slot, 0 while it waits as a standby.",
          (double)atomic_load(&g->streaming));
    expo_family(f, "outbox_relay_wal_ignored_messages_total", "counter",
           "Logical messages with the relay's prefix ignored (relay.wal.accept_logical_messages "
           "is off).");
    fprintf(f, "outbox_relay_wal_ignored_messages_total %lld\n", atomic_load(&g->ignored));
}
