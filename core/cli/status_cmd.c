#include "status_cmd.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "control.h"
#include "db.h"
#include "source.h"

/* One report on *conn (connected first when NULL). Returns 0 or 1. */
static int report(const relay_config *cfg, PGconn **conn, int json)
{
    char err[1024];
    if (!*conn && !(*conn = db_connect(cfg, "outbox-relay", err, sizeof err))) {
        fprintf(stderr, "outbox-relay: %s\n", err);
        return 1;
    }
    json_t *o = json ? json_object() : NULL;
    if (o && cfg->source_name)
        json_object_set_new(o, "source", json_string(cfg->source_name));
    else if (cfg->source_name)
        printf("source %s\n", cfg->source_name);
    int rc = source_for(cfg)->status(*conn, cfg, o);
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
static int report_all(relay_config *const *cfgs, size_t count, PGconn **conns, int json)
{
    int rc = 0;
    for (size_t i = 0; i < count; i++) {
        if (i && !json)
            putchar('\n');
        rc |= report(cfgs[i], &conns[i], json);
    }
    return rc;
}

int command_status(relay_config *const *cfgs, size_t count, int json, int watch_seconds)
{
    PGconn *conns[count];
    memset(conns, 0, sizeof conns);
    int rc = 0;
    if (watch_seconds <= 0) {
        rc = report_all(cfgs, count, conns, json);
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
        report_all(cfgs, count, conns, json);
        fflush(stdout);
        for (int left = watch_seconds * 10; left > 0 && !interrupted; left--)
            usleep(100000);
    }
    for (size_t i = 0; i < count; i++)
        PQfinish(conns[i]);
    return 0;
}
