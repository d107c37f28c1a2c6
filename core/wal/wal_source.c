#include "wal/wal_source.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "db/db.h"
#include "telemetry/counters.h"
#include "wal/wal_decode.h"
#include "wal/wal_metrics.h"
#include "wal/wal_schema.h"
#include "wal/wal_slot.h"
#include "wal/wal_stream.h"
#include "window/dead_table.h"
#include "window/window.h"
#include "window/window_publish.h"

#define SCOPE "wal"
#define LAG_CHECK_MS 2000
#define FRAMES_PER_ROUND 2000
#define STATUS_MIN_GAP_MS 10
/* While frames flow, a round gathers them for up to GATHER_US, looking again
 * every GATHER_NAP_US: one publish_batch of many events instead of one per
 * few frames (the walsender sends each pgoutput message on its own), so the
 * driver's threads and this one wake up far less often. A quiet stream adds
 * one nap to the latency. */
#define GATHER_US 1000
#define GATHER_NAP_US 200

typedef struct wal_source {
    relay_state *st;
    const relay_config *cfg;
    window w;
    window_publisher pub;
    wal_decoder dec;
    wal_stream s;
    uint64_t confirmed;    /* every event of every commit up to here is finished */
    uint64_t drain_target; /* --drain: the WAL position at start */
    long long lag_checked_ms;
    wal_slot_watch slot; /* the side thread's slot check */
    wal_gauges *gauges;  /* relay_state.gauges */
} wal_source;

static int stopping(const wal_source *src)
{
    return atomic_load(&src->st->stop) != 0;
}

int wal_preflight(PGconn *conn, const relay_config *cfg, const char *payload_type, char *err,
                   size_t err_size)
{
    (void)payload_type;
    return wal_schema_check(conn, cfg, err, err_size);
}

/* The age of the oldest commit not yet confirmed into relay_state; the
 * slot's lag in bytes comes from the side thread (window_side.c). Returns -1
 * when the side thread found the slot invalidated (the relay cannot go on). */
static int check_slot(wal_source *src, long long now)
{
    if (now - src->lag_checked_ms < LAG_CHECK_MS)
        return 0;
    src->lag_checked_ms = now;
    long long oldest = window_oldest_us(&src->w), lag_ms = 0;
    if (oldest > 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        lag_ms = ((long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000 - oldest) / 1000;
    }
    atomic_store(&src->gauges->lag_ms, lag_ms > 0 ? lag_ms : 0);
    return atomic_load(&src->slot.lost) ? -1 : 0;
}

/* The window holds max_in_flight events, or their rows max_in_flight_mb:
 * reading waits for events to finish. */
static int window_full(const wal_source *src)
{
    return window_room(&src->w, src->cfg->wal_max_in_flight, src->cfg->wal_max_in_flight_mb) ==
           0;
}

/* Reads what the stream has, while the window has room. Returns the frames
 * read, or -1 when the stream is lost. */
static int read_frames(wal_source *src, int timeout_ms)
{
    int frames = 0, napped = 0, since_nap = 0;
    char err[512];
    while (frames < FRAMES_PER_ROUND && !window_full(src)) {
        const char *data;
        size_t len;
        int rc = wal_stream_read(&src->s, frames ? 0 : timeout_ms, &data, &len, err, sizeof err);
        if (rc == 0 && frames > 0 && since_nap > 0 && napped < GATHER_US / GATHER_NAP_US &&
            !stopping(src)) { /* flowing: gather more into this round */
            usleep(GATHER_NAP_US);
            napped++;
            since_nap = 0;
            wal_stream_take(&src->s); /* a lost connection shows in the next read */
            continue;
        }
        if (rc < 0) {
            log_warn("%s", err);
            return -1;
        }
        if (rc == 0)
            break;
        frames++;
        since_nap++;
        wal_change c;
        if (wal_decode(&src->dec, data, len, &c, err, sizeof err) < 0) {
            log_error("%s", err);
            return -1;
        }
        if (c.kind == WAL_BEGIN) {
            window_begin(&src->w, c.commit_us);
        } else if (c.kind == WAL_COMMIT) {
            window_commit(&src->w, c.lsn);
        } else if (c.kind == WAL_EVENT) {
            if (!window_in_txn(&src->w)) { /* only inside a transaction: never expected */
                free(c.row);
                continue;
            }
            window_add(&src->w, c.row);
            atomic_fetch_add(&src->st->stats.claimed, 1);
        }
    }
    return frames;
}

/* Moves the confirmed position and tells the server when it moved, when
 * asked, and at least every status_interval_ms. */
static int report(wal_source *src, long long now)
{
    uint64_t lsn = window_confirm(&src->w);
    if (lsn > src->confirmed)
        src->confirmed = lsn;
    /* nothing held: every commit the server has sent is finished */
    if (window_empty(&src->w) && src->s.server_end > src->confirmed)
        src->confirmed = src->s.server_end;
    atomic_store(&src->gauges->confirmed_lsn, (long long)src->confirmed);
    atomic_store(&src->gauges->window_bytes, (long long)src->w.bytes);
    atomic_store(&src->gauges->window_peak_bytes, (long long)src->w.peak_bytes);
    int draining = src->st->drain && window_empty(&src->w);
    long long since = now - src->s.sent_at_ms;
    int due = src->s.reply_requested || since >= src->cfg->wal_status_interval_ms ||
              (src->confirmed != src->s.sent_flush && since >= STATUS_MIN_GAP_MS) ||
              (draining && since >= 200);
    if (due && wal_stream_status(&src->s, src->confirmed, draining) < 0)
        return -1;
    return 0;
}

/* Streams until stopped (0), drained (0), lost (-1) or a fatal error (-2). */
static int stream(wal_source *src)
{
    for (;;) {
        long long now = now_ms();
        counters_beat(); /* the stream's heartbeat: /healthz and the watchdog */
        if (stopping(src))
            return 0;
        window_publisher_tend(&src->pub);
        window_publisher_settle(&src->pub, now);
        int sent = window_publisher_reload(&src->pub) ? 0 : window_publisher_send(&src->pub, now);
        if (report(src, now) < 0)
            return -1;
        if (check_slot(src, now) < 0)
            return -2;
        if (src->st->drain && window_empty(&src->w) && src->confirmed >= src->drain_target) {
            log_info("drained: confirmed %X/%X", (unsigned)(src->confirmed >> 32),
                     (unsigned)src->confirmed);
            return 0;
        }
        if (window_full(src)) {
            window_publisher_wait(&src->pub, 10);
            continue;
        }
        int timeout = src->pub.in_flight > 0 || sent ? 2 : 50;
        long long wait =
            src->pub.paused ? outputs_wait_ms(&src->pub.dl.outs) : window_wait_ms(&src->w, now);
        if (src->pub.paused && wait <= 0)
            wait = timeout; /* events due wait for the output, not for a clock */
        if (wait >= 0 && wait < timeout)
            timeout = (int)wait;
        if (read_frames(src, timeout) < 0)
            return -1;
    }
}

/* Before the window is dropped (reconnect) or the relay exits: wait, up to
 * shutdown_timeout_ms, for what is in flight, then confirm what finished. */
static void settle_in_flight(wal_source *src)
{
    window_publisher_finish_in_flight(&src->pub, src->cfg->shutdown_timeout_ms);
    uint64_t lsn = window_confirm(&src->w);
    if (lsn > src->confirmed)
        src->confirmed = lsn;
    if (src->s.conn)
        wal_stream_status(&src->s, src->confirmed, 0);
}

/* --drain: where the WAL ends now (once, before streaming). */
static void drain_target(wal_source *src)
{
    char err[512];
    PGconn *db = db_connect(src->cfg, "outbox-relay", err, sizeof err);
    PGresult *res = db ? PQexec(db, "SELECT pg_current_wal_lsn()") : NULL;
    if (PQresultStatus(res) == PGRES_TUPLES_OK)
        src->drain_target = wal_lsn_parse(PQgetvalue(res, 0, 0));
    PQclear(res);
    if (db)
        PQfinish(db);
}

void wal_run(relay_state *st)
{
    counters_thread_register(st->metrics, 0); /* the stream is the source's one thread */
    wal_source *src = calloc(1, sizeof *src);
    src->st = st;
    src->cfg = st->cfg;
    src->gauges = st->gauges;
    window_init(&src->w, src->cfg->ordering == ORDERING_AGGREGATE);
    wal_decoder_init(&src->dec, src->cfg, &src->gauges->ignored);
    if (window_publisher_init(&src->pub, st, &src->w, wal_slot_upkeep, &src->slot) < 0) {
        state_fail(st, "its outputs could not start (the log says why)");
        goto out;
    }
    if (st->drain)
        drain_target(src);
    int standby_said = 0, backoff = 100;
    while (!stopping(src)) {
        char err[1024];
        wal_open_result r = wal_stream_open(&src->s, src->cfg, src->confirmed, err, sizeof err);
        if (r == WAL_OPEN_BUSY) {
            if (!standby_said++)
                log_info("standby: replication slot %s is held by another relay; taking over "
                         "when it is released",
                         src->cfg->wal_slot);
            counters_nap(&src->st->stop, 500);
            continue;
        }
        if (r == WAL_OPEN_LOST) {
            log_error("%s; the relay cannot continue (`outbox-relay init-db -c %s`, or "
                      "--reset-slot for an invalidated slot: see docs/sources.md, Slot safety)",
                      err, src->cfg->path);
            state_fail(st, err);
            break;
        }
        if (r == WAL_OPEN_RETRY) {
            log_warn("%s; retrying in %d ms", err, backoff);
            counters_nap(&src->st->stop, backoff);
            backoff = backoff < 5000 ? backoff * 2 : 5000;
            continue;
        }
        backoff = 100;
        log_info("streaming from replication slot %s%s", src->cfg->wal_slot,
                 standby_said ? " (took over as the active relay)" : "");
        standby_said = 0;
        atomic_store(&src->gauges->streaming, 1);
        int rc = stream(src);
        atomic_store(&src->gauges->streaming, 0);
        settle_in_flight(src);
        wal_stream_close(&src->s);
        if (rc == 0)
            break;
        if (rc == -2) {
            char why[256];
            snprintf(why, sizeof why, "replication slot %s was invalidated", src->cfg->wal_slot);
            state_fail(st, why);
            break;
        }
        /* lost: what was not confirmed comes again from the slot */
        window_clear(&src->w);
        window_publisher_new_epoch(&src->pub);
        wal_decoder_init(&src->dec, src->cfg, &src->gauges->ignored);
        counters_nap(&src->st->stop, 200);
    }
    wal_stream_close(&src->s);
out:
    window_publisher_free(&src->pub);
    window_free(&src->w);
    free(src);
}
