#include "run/outbox_run.h"

#include <stdlib.h>

#include "base/log.h"
#include "db/db.h"
#include "db/schema.h"
#include "db/own_tables.h"
#include "forward/dead_forward.h"
#include "ops/backlog.h"
#include "ops/control.h"
#include "run/sources.h"
#include "telemetry/counters.h"

/* What an operator paused, read here once before the source starts: the
 * backlog poller reads it only a moment after the first claims or reads,
 * and a pause set while no relay ran let thousands of events through to the
 * paused output meanwhile (issue 49). No control table: nothing is paused;
 * one that is not init-db's: nothing an operator set (pause refuses it
 * too), and the poller says why. Any other failure stops the start rather
 * than send to what may be paused. 0, or -1 with err. */
static int read_pauses_first(PGconn *conn, relay_state *st, char *err, size_t err_size)
{
    int changed = 0;
    char why[768];
    int rc = control_read(conn, st->cfg, &st->pauses, &changed, why, sizeof why);
    if (rc == OWN_REFUSED)
        return 0;
    if (rc < 0) {
        snprintf(err, err_size,
                 "cannot read what an operator paused, so nothing is sent (a paused output "
                 "would get events): %s",
                 why);
        return -1;
    }
    if (atomic_load(&st->pauses.source) || atomic_load(&st->pauses.any))
        control_log(&st->pauses);
    return 0;
}

/* Checks what `run` needs before any worker starts: the database, the
 * schema, what an operator paused, and the payload column's type (written
 * to type). */
static int preflight(relay_state *st, char *type, size_t type_size)
{
    char err[1024];
    PGconn *conn = db_connect(st->cfg, "outbox-relay", err, sizeof err);
    if (!conn) {
        log_error("%s", err);
        return -1;
    }
    int rc = schema_check(conn, st->cfg, err, sizeof err);
    if (rc == 0)
        rc = read_pauses_first(conn, st, err, sizeof err);
    if (rc == 0)
        rc = schema_payload_type(conn, st->cfg, type, type_size, err, sizeof err);
    if (rc == 0 && st->src->preflight)
        rc = st->src->preflight(conn, st->cfg, type, err, sizeof err);
    PQfinish(conn);
    if (rc < 0) {
        log_error("%s", err);
        return -1;
    }
    st->payload = payload_kind_of(type);
    return 0;
}

/* Generation 0: the config as started, its drivers loaded and checked. */
static int load_drivers(relay_state *st)
{
    char err[1024];
    pthread_mutex_init(&st->gen_lock, NULL);
    pauses_init(&st->pauses);
    st->gen = gen_new((relay_config *)st->cfg, 0, 0, err, sizeof err);
    if (!st->gen) {
        log_error("%s", err);
        return 2;
    }
    return 0;
}

/* While the engine's thread logs for r, its lines name r's source. */
void speak_for(const outbox_run *r)
{
    log_thread_source(r ? r->st->cfg->source_name : NULL);
}

/* A run of cfg (taken), its drivers loaded; NULL (logged) when they cannot be. */
outbox_run *run_new(relay_config *cfg, int drain)
{
    outbox_run *r = calloc(1, sizeof *r);
    r->st = calloc(1, sizeof *r->st);
    r->st->cfg = cfg;
    r->st->drain = drain;
    r->st->metrics = counters_new(cfg);
    r->src = r->st->src = source_for(cfg);
    r->st->gauges = r->src->gauges_size ? calloc(1, r->src->gauges_size) : NULL;
    speak_for(r);
    int code = load_drivers(r->st);
    speak_for(NULL);
    if (code == 0)
        return r;
    pauses_destroy(&r->st->pauses);
    pthread_mutex_destroy(&r->st->gen_lock);
    counters_free(r->st->metrics);
    free(r->st->gauges);
    free(r->st);
    free(r);
    config_free(cfg);
    return NULL;
}

void run_free(outbox_run *r)
{
    relay_state *st = r->st;
    gen_release(st->gen); /* the last user: workers have let go */
    pthread_mutex_destroy(&st->gen_lock);
    pauses_destroy(&st->pauses);
    counters_free(st->metrics);
    free(st->gauges);
    config_free((relay_config *)st->cfg);
    free(atomic_load(&st->fatal));
    free(st);
    free(r);
}

/* Checks r's database and starts its threads: 0, or -1 (logged). */
int run_start(outbox_run *r)
{
    relay_state *st = r->st;
    speak_for(r);
    int ok = preflight(st, r->payload_type, sizeof r->payload_type) == 0;
    if (ok) {
        char line[256];
        r->src->describe(st->cfg, st->drain, line, sizeof line);
        log_info("relay starting: %s", line);
        r->run = r->src->start(st, r->payload_type);
        atomic_store(&st->running, 1);
        pthread_create(&r->poller, NULL, backlog_main, st); /* operator pauses, backlog gauges */
        int dead_letters = 0; /* a dead_letter group, the global one or a route's, names one */
        for (size_t i = 0; i < st->cfg->output_count; i++)
            dead_letters |= st->cfg->outputs[i].dead_letter;
        r->forwarding =
            dead_letters && pthread_create(&r->forwarder, NULL, dead_forward_main, st) == 0;
        if (dead_letters && !r->forwarding)
            log_error("dead-letter output: cannot start its thread; dead events stay in the "
                      "database");
    }
    speak_for(NULL);
    return ok ? 0 : -1;
}

static void *starter_main(void *arg)
{
    outbox_run *r = arg;
    atomic_store(&r->start_rc, run_start(r) == 0 ? 1 : -1);
    return NULL;
}

void run_start_async(outbox_run *r)
{
    atomic_store(&r->start_rc, 0);
    r->starting = pthread_create(&r->starter, NULL, starter_main, r) == 0;
    if (!r->starting) /* no thread: start here */
        atomic_store(&r->start_rc, run_start(r) == 0 ? 1 : -1);
}

int run_start_poll(outbox_run *r)
{
    int rc = atomic_load(&r->start_rc);
    if (rc == 0)
        return 0;
    if (r->starting)
        pthread_join(r->starter, NULL);
    r->starting = 0;
    atomic_store(&r->start_rc, 0);
    return rc;
}

/* r's threads have ended: its helpers stop too, and the totals are logged. */
void run_end(outbox_run *r)
{
    relay_state *st = r->st;
    r->ended = 1;
    atomic_store(&st->running, 0);
    if (!r->run)
        return;
    state_request_stop(st, now_ms());
    pthread_join(r->poller, NULL);
    if (r->forwarding)
        pthread_join(r->forwarder, NULL);
    r->src->finish(r->run);
    r->run = NULL;
    const relay_stats *s = &st->stats;
    speak_for(r);
    log_info("relay stopped: claimed %lld, published %lld, retried %lld, dead %lld, released %lld, "
             "deferred %lld",
             atomic_load(&s->claimed), atomic_load(&s->published), atomic_load(&s->retried),
             atomic_load(&s->dead), atomic_load(&s->released), atomic_load(&s->deferred));
    speak_for(NULL);
}
