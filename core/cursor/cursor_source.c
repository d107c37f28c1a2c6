#include "cursor/cursor_source.h"

#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "cursor/cursor_places.h"
#include "cursor/cursor_read.h"
#include "cursor/cursor_retention.h"
#include "cursor/cursor_schema.h"
#include "db/db.h"
#include "db/lock_holder.h"
#include "telemetry/counters.h"
#include "window/window.h"
#include "window/window_publish.h"

/* The cursor is saved at most this often while it moves: one write per
 * round of events, never one per event. */
#define SAVE_GAP_MS 50
/* A session asked nothing for this long is asked something: its
 * idle_session_timeout is how a standby takes over from a hung reader. */
#define KEEPALIVE_MS 1000
/* Reads are at least FETCH_GAP_MS apart unless the last one was full: each
 * costs the database a round trip and a snapshot whatever it finds, so
 * under a stream of small commits one read takes many of them. After a
 * wake-up or a read that found rows, look again after FETCH_GAP_MS, then
 * twice as long each time nothing comes, up to QUICK_MAX_MS (an older
 * transaction may still hold what committed), then wait for the next
 * notification or the poll interval. */
#define FETCH_GAP_MS 10
#define QUICK_MAX_MS 64

typedef struct cursor_source {
    relay_state *st;
    const relay_config *cfg;
    window w;
    window_publisher pub;
    cursor_reader r;
    cursor_places places; /* the place of each unconfirmed transaction */
    cursor_place read_at; /* the last place read */
    cursor_place saved;   /* the cursor table's */
    cursor_place done;    /* every row up to here is finished */
    long long saved_ms, asked_ms, fetch_at_ms, fetched_ms;
    int quick_ms;   /* the delay of the next look after the last read, 0: none pending */
    int last_empty; /* the last fetch found nothing */
    event_row **rows;
    cursor_place *row_places;
} cursor_source;

static int stopping(const cursor_source *src)
{
    return atomic_load(&src->st->stop) != 0;
}

int cursor_preflight(PGconn *conn, const relay_config *cfg, const char *payload_type, char *err,
                   size_t err_size)
{
    (void)payload_type;
    return cursor_schema_check(conn, cfg, err, err_size);
}

static int same_place(const cursor_place *a, const cursor_place *b)
{
    return a->xid == b->xid && a->id == b->id;
}

/* Reads the next rows into the window, a transaction per run of one
 * cursor_xid. Returns how many, or -1 when the session is lost. */
static int fetch(cursor_source *src, long limit)
{
    char err[512];
    int n = cursor_reader_fetch(&src->r, &src->read_at, (int)limit, src->rows, src->row_places, err,
                                sizeof err);
    if (n < 0) {
        log_warn("cursor: %s", err);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        const cursor_place *at = &src->row_places[i];
        if (i == 0 || at->xid != src->row_places[i - 1].xid)
            window_begin(&src->w, src->rows[i]->created_at_us);
        window_add(&src->w, src->rows[i]);
        atomic_fetch_add(&src->st->stats.claimed, 1);
        if (i + 1 == n || src->row_places[i + 1].xid != at->xid) {
            window_commit(&src->w, (uint64_t)at->id);
            cursor_places_push(&src->places, at);
        }
    }
    if (n > 0)
        src->read_at = src->row_places[n - 1];
    src->asked_ms = src->fetched_ms = now_ms();
    return n;
}

/* Moves the finished place, and saves it when it moved (at most every
 * SAVE_GAP_MS unless forced). Returns -1 when the session is lost. */
static int advance(cursor_source *src, long long now, int force)
{
    uint64_t end = window_confirm(&src->w);
    if (end)
        cursor_places_confirm(&src->places, end, &src->done);
    if (window_empty(&src->w))
        src->done = src->read_at; /* nothing held: everything read is finished */
    if (same_place(&src->done, &src->saved) || (!force && now - src->saved_ms < SAVE_GAP_MS))
        return 0;
    char err[512];
    if (cursor_reader_save(&src->r, &src->done, err, sizeof err) < 0) {
        log_warn("cursor: cannot save the cursor: %s", err);
        return -1;
    }
    src->saved = src->done;
    src->saved_ms = src->asked_ms = now;
    return 0;
}

/* When to look for rows next, after a read of n rows of limit, or a
 * notification (woken). */
static void plan_fetch(cursor_source *src, long long now, int n, long limit, int woken)
{
    if (n == limit) { /* full: more wait */
        src->fetch_at_ms = now;
        src->quick_ms = 0;
        return;
    }
    if (n > 0 || woken)
        src->quick_ms = FETCH_GAP_MS;
    else if (src->quick_ms)
        src->quick_ms *= 2;
    if (src->quick_ms && src->quick_ms <= QUICK_MAX_MS) {
        src->fetch_at_ms = src->fetched_ms + src->quick_ms;
    } else {
        src->quick_ms = 0;
        src->fetch_at_ms = now + src->cfg->poll_interval_ms;
    }
}

/* After a read of n rows: plans the next and listens only while idle (one
 * more look follows the LISTEN: a commit just before it was not heard). */
static int listen_when_idle(cursor_source *src, long long now, int n, long limit)
{
    char err[512];
    src->last_empty = n == 0;
    plan_fetch(src, now, n, limit, 0);
    int idle = src->quick_ms == 0 && src->fetch_at_ms > now, was = src->r.listening;
    if (cursor_reader_listen(&src->r, idle, err, sizeof err) < 0) {
        log_warn("cursor: %s", err);
        return -1;
    }
    if (idle && !was)
        src->fetch_at_ms = now;
    return 0;
}

/* Reads and publishes until stopped (0), drained (0) or lost (-1). */
static int stream(cursor_source *src)
{
    src->fetch_at_ms = 0;
    for (;;) {
        long long now = now_ms();
        counters_beat();
        if (stopping(src))
            return 0;
        window_publisher_tend(&src->pub);
        window_publisher_settle(&src->pub, now);
        int sent = window_publisher_reload(&src->pub) ? 0 : window_publisher_send(&src->pub, now);
        if (advance(src, now, 0) < 0)
            return -1;
        if (src->st->drain && src->last_empty && window_empty(&src->w)) {
            if (advance(src, now, 1) < 0)
                return -1;
            log_info("drained: cursor at %llu/%lld", (unsigned long long)src->saved.xid,
                     src->saved.id);
            return 0;
        }
        long room =
            window_room(&src->w, src->cfg->wal_max_in_flight, src->cfg->wal_max_in_flight_mb);
        if (room > 0 && now >= src->fetch_at_ms) {
            long limit = room < src->cfg->batch_size ? room : src->cfg->batch_size;
            int n = fetch(src, limit);
            if (n < 0 || listen_when_idle(src, now, n, limit) < 0)
                return -1;
            continue;
        }
        if (now - src->asked_ms >= KEEPALIVE_MS) {
            char err[256];
            if (db_exec(src->r.conn, "SELECT 1", err, sizeof err) < 0)
                return -1;
            src->asked_ms = now;
        }
        long long timeout = src->pub.in_flight > 0 || sent ? 2 : 50;
        long long wait =
            src->pub.paused ? outputs_wait_ms(&src->pub.dl.outs) : window_wait_ms(&src->w, now);
        if (wait >= 0 && wait < timeout)
            timeout = wait;
        if (room > 0 && src->fetch_at_ms - now < timeout)
            timeout = src->fetch_at_ms > now ? src->fetch_at_ms - now : 0;
        int woke = cursor_reader_wait(&src->r, (int)timeout);
        if (woke < 0)
            return -1;
        if (woke)
            plan_fetch(src, now_ms(), 0, 1, 1);
    }
}

/* Before the window is dropped (reconnect) or the relay exits: wait, up to
 * shutdown_timeout_ms, for what is in flight, then save what finished. */
static void settle_in_flight(cursor_source *src)
{
    window_publisher_finish_in_flight(&src->pub, src->cfg->shutdown_timeout_ms);
    if (src->r.conn)
        advance(src, now_ms(), 1);
}

/* The reader's lock is held elsewhere: by a relay (this is a standby, said
 * once), or by a session of another role, which is no relay and would
 * otherwise stop delivery unseen (issue 54): named in the log once per
 * holder, and in /readyz and outbox_relay_lock_squatted while it holds. */
static void standby(cursor_source *src, int *said)
{
    const lock_holder *h = &src->r.holder;
    char who[LOCK_HOLDER_TEXT];
    lock_holder_text(h, who, sizeof who);
    int squat = lock_squat_note(&src->st->squats, LOCK_CURSOR, h);
    if (squat > 0)
        log_warn("cursor: a lock the reader of %s.%s needs is held by %s, which is not a relay "
                 "(not the relay's role): nothing is delivered until that session ends or lets go",
                 src->cfg->schema, src->cfg->table, who);
    else if (h->pid && h->relay && (squat < 0 || !*said))
        log_info("standby: the cursor of %s.%s is held by another relay, %s; taking over when "
                 "it is released",
                 src->cfg->schema, src->cfg->table, who);
    else if (!h->pid && (squat < 0 || !*said))
        log_info("standby: the cursor of %s.%s is held by another relay; taking over when it is "
                 "released",
                 src->cfg->schema, src->cfg->table);
    *said = 1;
}

static void read_loop(cursor_source *src)
{
    int standby_said = 0, backoff = 100;
    while (!stopping(src)) {
        char err[1024];
        reader_open_result r = cursor_reader_open(&src->r, &src->saved, err, sizeof err);
        if (r == READER_BUSY) {
            standby(src, &standby_said);
            counters_nap(&src->st->stop, 500);
            continue;
        }
        if (r == READER_RETRY) {
            log_warn("cursor: %s; retrying in %d ms", err, backoff);
            counters_nap(&src->st->stop, backoff);
            backoff = backoff < 5000 ? backoff * 2 : 5000;
            continue;
        }
        backoff = 100;
        if (lock_squat_note(&src->st->squats, LOCK_CURSOR, NULL) < 0)
            log_info("cursor: the session that held a lock the reader needs let go");
        log_info("reading %s.%s from cursor %llu/%lld%s", src->cfg->schema, src->cfg->table,
                 (unsigned long long)src->saved.xid, src->saved.id,
                 standby_said ? " (took over as the active relay)" : "");
        standby_said = 0;
        src->read_at = src->done = src->saved;
        src->saved_ms = now_ms();
        int rc = stream(src);
        settle_in_flight(src);
        cursor_reader_close(&src->r);
        if (rc == 0)
            break;
        /* lost: what was not saved is read again */
        window_clear(&src->w);
        cursor_places_clear(&src->places);
        window_publisher_new_epoch(&src->pub);
        counters_nap(&src->st->stop, 200);
    }
}

void cursor_run(relay_state *st)
{
    counters_thread_register(st->metrics, 0); /* the reader is the source's one thread */
    cursor_source *src = calloc(1, sizeof *src);
    src->st = st;
    src->cfg = st->cfg;
    size_t cap = (size_t)src->cfg->batch_size;
    src->rows = calloc(cap, sizeof *src->rows);
    src->row_places = calloc(cap, sizeof *src->row_places);
    window_init(&src->w, src->cfg->ordering == ORDERING_AGGREGATE);
    cursor_reader_init(&src->r, src->cfg);
    if (window_publisher_init(&src->pub, st, &src->w, cursor_retention_upkeep, NULL) < 0)
        state_fail(st, "its outputs could not start (the log says why)");
    else
        read_loop(src);
    cursor_reader_free(&src->r);
    window_publisher_free(&src->pub);
    window_free(&src->w);
    cursor_places_free(&src->places);
    free(src->rows);
    free(src->row_places);
    free(src);
}
