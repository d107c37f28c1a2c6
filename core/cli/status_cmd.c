#include "cli/status_cmd.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/text.h"
#include "cli/commands.h"
#include "db/db.h"
#include "db/schema.h"
#include "db/sql_run.h"
#include "ops/control.h"
#include "run/sources.h"

/* The dead events, oldest first (those dead at once: oldest created
 * first), from the source's reader of them (the
 * one the dead_letter output uses): poll the outbox rows with dead_at, WAL
 * and cursor the dead-letter table. */
static const char dead_list_sql[] =
    "SELECT coalesce(d.event_id, d.dead_key), coalesce(d.event_type, '-'),"
    " coalesce(d.aggregate_type, '-') || '/' || coalesce(d.aggregate_id, '-'), d.attempts,"
    " coalesce(d.error, ''), to_char(d.dead_at AT TIME ZONE 'UTC', "
    "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),"
    " count(*) OVER () FROM (@DEAD@) d ORDER BY d.dead_at, d.created_at_us, d.dead_key LIMIT $1";

/* A field of a listed event on one line: control characters as spaces,
 * at most max bytes (then "..."), never cutting a UTF-8 sequence. */
static void put_field(const char *text, size_t max)
{
    size_t n = strlen(text);
    size_t cut = n > max ? max : n;
    while (cut < n && cut > 0 && ((unsigned char)text[cut] & 0xC0) == 0x80)
        cut--;
    for (size_t i = 0; i < cut; i++)
        putchar((unsigned char)text[i] < 0x20 || text[i] == 0x7f ? ' ' : text[i]);
    if (cut < n)
        fputs("...", stdout);
}

/* The first `limit` dead events: printed, or as "dead_events" in json. */
static int dead_list(PGconn *conn, const relay_config *cfg, int limit, json_t *json, char *err,
                     size_t err_size)
{
    if (limit <= 0)
        return 0;
    char *tmpl = text_fill(strdup(dead_list_sql), "@DEAD@", source_for(cfg)->dead_events);
    char n[16];
    snprintf(n, sizeof n, "%d", limit);
    const char *params[] = {n};
    PGresult *res = sql_run(conn, cfg, tmpl, 1, params, PGRES_TUPLES_OK, NULL, err, err_size);
    free(tmpl);
    if (!res)
        return -1;
    int rows = PQntuples(res);
    json_t *list = json ? json_array() : NULL;
    if (!json && rows > 0)
        printf("dead events:            %d of %s, oldest first%s\n", rows, PQgetvalue(res, 0, 6),
               rows < atoi(PQgetvalue(res, 0, 6)) ? " (--dead N lists more)" : "");
    for (int i = 0; i < rows; i++) {
        if (list) {
            json_t *e = json_object();
            json_object_set_new(e, "event_id", json_string(PQgetvalue(res, i, 0)));
            json_object_set_new(e, "event_type", json_string(PQgetvalue(res, i, 1)));
            json_object_set_new(e, "aggregate", json_string(PQgetvalue(res, i, 2)));
            json_object_set_new(e, "attempts", json_integer(atoll(PQgetvalue(res, i, 3))));
            json_object_set_new(e, "last_error", json_string(PQgetvalue(res, i, 4)));
            json_object_set_new(e, "dead_at", json_string(PQgetvalue(res, i, 5)));
            json_array_append_new(list, e);
            continue;
        }
        printf("  %s  dead since %s  attempts %s\n    ", PQgetvalue(res, i, 0),
               PQgetvalue(res, i, 5), PQgetvalue(res, i, 3));
        put_field(PQgetvalue(res, i, 1), 80);
        fputs("  ", stdout);
        put_field(PQgetvalue(res, i, 2), 120);
        fputs("\n    last error: ", stdout);
        put_field(PQgetvalue(res, i, 4), 200);
        putchar('\n');
    }
    if (list)
        json_object_set_new(json, "dead_events", list);
    PQclear(res);
    return 0;
}

/* One report on *conn (connected first when NULL), with the first dead
 * events of the source. Returns 0 or 1. */
static int report(const relay_config *cfg, PGconn **conn, int json, int dead)
{
    char err[1024];
    if (!*conn && !(*conn = db_connect(cfg, "outbox-relay", err, sizeof err))) {
        fprintf(stderr, "outbox-relay: %s\n", err);
        return 1;
    }
    if (!command_installed(*conn, cfg, err, sizeof err)) {
        fprintf(stderr, "outbox-relay: status%s%s: %s\n", cfg->source_name ? " of source " : "",
                cfg->source_name ? cfg->source_name : "", err);
        return 1;
    }
    json_t *o = json ? json_object() : NULL;
    if (o && cfg->source_name)
        json_object_set_new(o, "source", json_string(cfg->source_name));
    else if (cfg->source_name)
        printf("source %s\n", cfg->source_name);
    int rc = source_for(cfg)->status(*conn, cfg, o);
    if (rc == 0 && dead_list(*conn, cfg, dead, o, err, sizeof err) < 0) {
        fprintf(stderr, "outbox-relay: status: dead events: %s\n", err);
        rc = 1;
    }
    if (rc == 0) {
        rc = o ? control_json(*conn, cfg, o, err, sizeof err)
               : control_print(*conn, cfg, stdout, err, sizeof err);
        if (rc == 0 && o) {
            char *text = json_dumps(o, JSON_COMPACT);
            puts(text);
            free(text);
        }
        if (rc != 0)
            fprintf(stderr, "outbox-relay: %s\n", err);
    }
    json_decref(o);
    if (rc == 0)
        return 0;
    PQfinish(*conn); /* the next round connects again */
    *conn = NULL;
    return 1;
}

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* Every source's report, each on its own connection; 1 if one failed. */
static int report_all(relay_config *const *cfgs, size_t count, PGconn **conns, int json, int dead)
{
    int rc = 0;
    for (size_t i = 0; i < count; i++) {
        if (i && !json)
            putchar('\n');
        rc |= report(cfgs[i], &conns[i], json, dead);
    }
    return rc;
}

int command_status(relay_config *const *cfgs, size_t count, int json, int watch_seconds, int dead)
{
    PGconn *conns[count];
    memset(conns, 0, sizeof conns);
    int rc = 0;
    if (watch_seconds <= 0) {
        rc = report_all(cfgs, count, conns, json, dead);
        for (size_t i = 0; i < count; i++)
            PQfinish(conns[i]);
        return rc;
    }
    /* a handler, not the default action: a shell starts background commands
     * with SIGINT ignored, and an interrupted watch is a normal end */
    struct sigaction sa = {.sa_handler = on_interrupt};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    int tty = isatty(STDOUT_FILENO);
    while (!interrupted) {
        if (tty)
            fputs("\033[H\033[2J", stdout);
        if (!json) {
            char now[32];
            time_t t = time(NULL);
            strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
            printf("outbox-relay status at %s (every %d s; Ctrl-C stops)\n", now, watch_seconds);
        }
        report_all(cfgs, count, conns, json, dead);
        fflush(stdout);
        for (int left = watch_seconds * 10; left > 0 && !interrupted; left--)
            usleep(100000);
    }
    for (size_t i = 0; i < count; i++)
        PQfinish(conns[i]);
    return 0;
}
