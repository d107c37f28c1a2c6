#include "forward/dead_forward.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/text.h"
#include "db/db.h"
#include "db/lock_holder.h"
#include "db/pgarray.h"
#include "db/sql.h"
#include "db/sql_run.h"
#include "deliver/delivery.h"
#include "deliver/flight.h"
#include "forward/dead_message.h"
#include "host/source.h"

#define BATCH 100
#define IDLE_MS 1000      /* between reads when nothing was dead */
#define ACK_WAIT_MS 30000 /* a batch not acknowledged by then is given back */
#define MAX_BACKOFF_MS 30000
/* How much later than its dead_at a dead event's transaction may commit
 * (the relay's own, bounded by relay.max_transaction_ms, with room). */
#define COMMIT_MARGIN_US (60LL * 1000000)

/* SQL text reads best as written. */
/* clang-format off */
/* The source's dead events not forwarded yet, oldest death first, payloads
 * over max_payload_bytes left out (NULL), none dead before $3 (µs since
 * the epoch: see low_us). @SIZE@: the payload's size. */
static const char read_sql[] =
    "SELECT d.dead_key, d.event_id, d.event_type, d.aggregate_type, d.aggregate_id,"
    " CASE WHEN d.payload IS NULL OR @SIZE@ > $2::bigint THEN NULL ELSE d.payload::text END,"
    " d.headers, d.dead_at_us, d.attempts, d.error, d.created_at_us"
    " FROM (@DEAD@) d WHERE d.dead_at >= timestamptz 'epoch' + $3::bigint * interval '1 microsecond'"
    " AND NOT EXISTS (SELECT 1 FROM {schema}.{n._dead_forwarded} f"
    "  WHERE f.dead_key = d.dead_key AND f.dead_at_us = d.dead_at_us)"
    " ORDER BY d.dead_at_us LIMIT $1";
static const char done_sql[] =
    "INSERT INTO {schema}.{n._dead_forwarded} (dead_key, dead_at_us, refused)"
    " SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[]) ON CONFLICT DO NOTHING";
/* One relay of those sharing the outbox forwards (a session lock, held
 * while its session lives): each dead event goes out once, not once per
 * relay. */
#define LOCK_KEY "pg_catalog.hashtext({lit.table} || ' dead_letter')"
static const char lock_sql[] = "SELECT pg_try_advisory_lock(" LOCK_KEY ")";
/* clang-format on */

typedef struct forwarder {
    relay_state *st;
    const relay_config *cfg;
    delivery dl; /* an instance of each output a dead_letter group names */
    char *read_sql;
    PGconn *conn;
    arena scratch;
    /* Every event dead before this (µs) was forwarded, but for those that
     * died in transactions that committed up to COMMIT_MARGIN_US later: the
     * reads start there, not at the first dead event ever (0 at start). */
    long long low_us;
    int leader; /* this session holds the outbox's forwarding lock */
    int backoff_ms;

    flights fs;    /* the delivery core's slots of one batch: one lane is used */
    flight *batch; /* that lane */
    size_t out[BATCH];  /* the output each of the batch goes to */
    int nowhere[BATCH]; /* no dead_letter takes it: finished, never sent */
} forwarder;

static int stopping(const forwarder *f)
{
    return atomic_load(&f->st->stop) != 0;
}

static void nap(const forwarder *f, long long ms)
{
    for (long long slept = 0; slept < ms && !stopping(f); slept += 50)
        usleep(1000 * (ms - slept < 50 ? ms - slept : 50));
}

/* A batch waits for its answers until ACK_WAIT_MS, or a stop's deadline. */
static int waited_enough(const forwarder *f, long long sent)
{
    long long now = now_ms();
    return now - sent >= ACK_WAIT_MS ||
           (stopping(f) && now >= atomic_load(&f->st->stop_at_ms) + f->cfg->shutdown_timeout_ms);
}

/* Who holds the forwarding lock f could not take: another relay forwards,
 * or a session of another role, no relay, stops the forwarding (issue 54):
 * named once per holder in the log, and in /readyz and metrics. */
static void find_leader(forwarder *f)
{
    char err[512];
    char *key = sql_render(f->cfg, LOCK_KEY);
    lock_holder h;
    int found = lock_holder_find(f->conn, key, 0, 0, NULL, &h, err, sizeof err) == 0;
    free(key);
    if (!found)
        return;
    int squat = lock_squat_note(&f->st->squats, LOCK_DEAD_FORWARD, &h);
    char who[LOCK_HOLDER_TEXT];
    lock_holder_text(&h, who, sizeof who);
    if (squat > 0)
        log_warn("dead-letter output: the forwarding lock of %s.%s is held by %s, which is not a "
                 "relay (not the relay's role): no dead event is forwarded until it lets go",
                 f->cfg->schema, f->cfg->table, who);
    else if (squat < 0)
        log_info("dead-letter output: the session that held the forwarding lock let go");
}

/* Takes the outbox's forwarding lock on f's session: 1 when held. */
static int lead(forwarder *f)
{
    char err[1024];
    PGresult *res =
        sql_run(f->conn, f->cfg, lock_sql, 0, NULL, PGRES_TUPLES_OK, NULL, err, sizeof err);
    int held = res && strcmp(PQgetvalue(res, 0, 0), "t") == 0;
    if (!res)
        log_warn("dead-letter output: %s", err);
    PQclear(res);
    if (held && lock_squat_note(&f->st->squats, LOCK_DEAD_FORWARD, NULL) < 0)
        log_info("dead-letter output: the session that held the forwarding lock let go");
    else if (res && !held)
        find_leader(f);
    return held;
}

/* The payload's size in SQL, for the column's kind, without building a
 * jsonb's text when its stored size already says it is small. */
static char *make_read_sql(const relay_state *st, payload_kind kind)
{
    const char *size =
        kind == PAYLOAD_JSON
            ? "(CASE WHEN pg_column_size(d.payload)::bigint * 256 < $2::bigint THEN 0"
              " ELSE {schema}.outbox_relay_payload_size(d.payload::jsonb) END)"
            : "octet_length(d.payload)";
    char *sql = text_fill(strdup(read_sql), "@SIZE@", size);
    return text_fill(sql, "@DEAD@", st->src->dead_events);
}

/* Offers the batch, each message to its output, and waits for the answers
 * (ACK_WAIT_MS at most) in the lane's slots; a message with no answer by
 * then is given back (UNAVAILABLE, its output stalled). */
static void publish(forwarder *f, obx_message *msgs, int n)
{
    flight *fl = f->batch;
    flight_begin(fl, n);
    for (int i = 0; i < n; i++) {
        fl->slots[i].output = f->out[i];
        if (f->nowhere[i])
            flight_settle(&fl->slots[i], SLOT_BAD, OBX_PERMANENT, "no dead_letter takes its route");
        msgs[i].token = flight_token(fl, i);
    }
    long long sent = now_ms();
    for (size_t out = 0; out < f->dl.outs.count; out++)
        if (f->cfg->outputs[out].dead_letter)
            flight_publish(fl, out, msgs, NULL,
                           f->dl.outs.out[out].inst && outputs_may_send(&f->dl.outs, out));
    while (flight_left(fl) > 0 && !waited_enough(f, sent))
        if (!outputs_poll(&f->dl.outs, 20)) /* drivers with their own threads: just wait */
            flights_wait(&f->fs, 20);
    char late[64];
    snprintf(late, sizeof late, "no acknowledgement within %d s", ACK_WAIT_MS / 1000);
    flight_give_back(fl, late);
    flight_end(fl);
    /* the outputs' health and counters learn what their messages said */
    settle_item items[BATCH];
    decision d[BATCH];
    size_t k = 0;
    for (int i = 0; i < n; i++)
        if (!f->nowhere[i])
            items[k++] = (settle_item){.output = f->out[i],
                                       .v = flight_verdict(&fl->slots[i]),
                                       .attempt = 1,
                                       .offered = fl->slots[i].offered,
                                       .created_at_us = msgs[i].created_at_us,
                                       .since_ms = sent};
    delivery_settle(&f->dl, items, k, d);
}

/* Is the batch's message i finished with: acknowledged, or refused for
 * good (a message the output will never take is not sent again)? */
static int finished(const forwarder *f, int i)
{
    obx_status s = f->batch->slots[i].status;
    return s == OBX_OK || s == OBX_PERMANENT;
}

/* Remembers what was finished (a refusal with its reason). Returns how
 * many, or -1. */
static int record(forwarder *f, const PGresult *rows, int n)
{
    pgarray keys, ats, why;
    pgarray_init(&keys);
    pgarray_init(&ats);
    pgarray_init(&why);
    int done = 0;
    for (int i = 0; i < n; i++)
        if (finished(f, i)) {
            pgarray_add(&keys, PQgetvalue(rows, i, DEAD_KEY), 1);
            pgarray_add(&ats, PQgetvalue(rows, i, DEAD_AT_US), 0);
            const slot *s = &f->batch->slots[i];
            pgarray_add(&why, s->status == OBX_OK ? "" : s->detail, 1);
            if (s->status != OBX_OK && !f->nowhere[i])
                log_warn("dead-letter output %s refused dead event %s for good: %s",
                         f->cfg->outputs[f->out[i]].name, PQgetvalue(rows, i, DEAD_KEY),
                         s->detail);
            done++;
        }
    char err[1024];
    const char *params[] = {pgarray_text(&keys), pgarray_text(&ats), pgarray_text(&why)};
    PGresult *res = done ? sql_run(f->conn, f->cfg, done_sql, 3, params, PGRES_COMMAND_OK, NULL,
                                   err, sizeof err)
                         : NULL;
    if (done && !res) {
        log_warn("dead-letter output: cannot record what it finished: %s", err);
        done = -1;
    }
    PQclear(res);
    pgarray_free(&keys);
    pgarray_free(&ats);
    pgarray_free(&why);
    return done;
}

/* After a batch (oldest death first): the low mark moves to its first event
 * not finished, or past the batch when all were. */
static void move_low(forwarder *f, const PGresult *rows, int n, int all)
{
    for (int i = 0; i < n; i++)
        if (all ? i == n - 1 : !finished(f, i)) {
            f->low_us = atoll(PQgetvalue(rows, i, DEAD_AT_US));
            return;
        }
}

/* One round: read, publish, record. Returns events read (0: none), -1 on a
 * database error. */
static int forward_some(forwarder *f)
{
    char err[1024], batch[16], limit[16], low[24];
    snprintf(batch, sizeof batch, "%d", BATCH);
    snprintf(limit, sizeof limit, "%d", f->cfg->max_payload_bytes);
    snprintf(low, sizeof low, "%lld",
             f->low_us > COMMIT_MARGIN_US ? f->low_us - COMMIT_MARGIN_US : 0);
    const char *params[] = {batch, limit, low};
    PGresult *rows =
        sql_run(f->conn, f->cfg, f->read_sql, 3, params, PGRES_TUPLES_OK, NULL, err, sizeof err);
    if (!rows) {
        log_warn("dead-letter output: cannot read the dead events: %s", err);
        return -1;
    }
    int n = PQntuples(rows);
    if (n > 0) {
        obx_message msgs[BATCH];
        for (int i = 0; i < n; i++)
            f->nowhere[i] = dead_message_build(f->cfg, f->st->payload, rows, i, &f->scratch,
                                               &msgs[i], &f->out[i]) < 0;
        publish(f, msgs, n);
        int done = record(f, rows, n), acked = 0;
        for (int i = 0; i < n && done >= 0; i++)
            acked += f->batch->slots[i].status == OBX_OK;
        move_low(f, rows, n, done == n);
        atomic_fetch_add(&f->st->stats.dead_forwarded, acked);
        f->backoff_ms = done == n ? 0 : f->backoff_ms ? f->backoff_ms * 2 : 500;
        if (f->backoff_ms > MAX_BACKOFF_MS)
            f->backoff_ms = MAX_BACKOFF_MS;
        if (done >= 0 && done < n) {
            int first = 0;
            while (finished(f, first))
                first++;
            log_warn("dead-letter output %s: %d of %d dead events not acknowledged (%s); sent "
                     "again in %d ms",
                     f->cfg->outputs[f->out[first]].name, n - done, n, f->batch->slots[first].detail,
                     f->backoff_ms);
        }
        arena_reset(&f->scratch);
    }
    PQclear(rows);
    return n;
}

void *dead_forward_main(void *arg)
{
    forwarder *f = calloc(1, sizeof *f);
    f->st = arg;
    f->cfg = f->st->cfg;
    log_thread_source(f->cfg->source_name);
    f->read_sql = make_read_sql(f->st, f->st->payload);
    flights_init(&f->fs, BATCH, &f->dl, "dead-letter");
    f->batch = &f->fs.lane[0];
    delivery_init(&f->dl, f->st, 0, flight_on_complete, &f->fs);
    snprintf(f->dl.outs.scope, sizeof f->dl.outs.scope, "dead-letter");
    f->dl.outs.only = OUTPUTS_DEAD_LETTER;
    while (!stopping(f)) {
        char err[1024];
        if (!f->conn &&
            !(f->conn = db_connect(f->cfg, "outbox-relay dead-letter", err, sizeof err))) {
            log_warn("dead-letter output: %s", err);
            nap(f, 5000);
            continue;
        }
        if (!f->leader && !(f->leader = lead(f))) {
            nap(f, 5000); /* another relay on this outbox forwards */
            continue;
        }
        outputs_close_broken(&f->dl.outs);
        outputs_ensure(&f->dl.outs, 0);
        if (!outputs_any_usable(&f->dl.outs)) {
            long long wait = outputs_wait_ms(&f->dl.outs);
            nap(f, wait > 0 && wait < 5000 ? wait : 500);
            continue;
        }
        int n = forward_some(f);
        if (n < 0 && PQstatus(f->conn) != CONNECTION_OK) {
            PQfinish(f->conn);
            f->conn = NULL;
            f->leader = 0; /* the lock went with the session */
        }
        nap(f, n < 0 ? 5000 : f->backoff_ms ? f->backoff_ms : n == BATCH ? 0 : IDLE_MS);
    }
    outputs_close_all(&f->dl.outs);
    delivery_free(&f->dl);
    if (f->conn)
        PQfinish(f->conn);
    arena_free(&f->scratch);
    free(f->read_sql);
    flights_free(&f->fs);
    free(f);
    return NULL;
}
