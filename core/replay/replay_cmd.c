#include "replay/replay_cmd.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "db/db.h"
#include "db/operator_args.h"
#include "db/pgarray.h"
#include "host/source.h"
#include "replay/replay_send.h"

#define REPLAY_RATE_DEFAULT 1000.0

typedef struct replay_args {
    const char *config, *outbox, *since, *until, *to, *name;
    char **aggregates, **routes;
    int aggregate_count, route_count;
    double rate;
} replay_args;

static int usage(const char *why)
{
    fprintf(stderr,
            "outbox-relay replay: %s\nusage: outbox-relay replay -c FILE --since TIME [--until "
            "TIME] [--aggregate TYPE/ID ...] [--route N ...] [--to OUTPUT] [--rate N] [--name "
            "NAME] [--outbox NAME]\n",
            why);
    return 2;
}

static int parse(int argc, char **argv, replay_args *a)
{
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'},    {"outbox", required_argument, NULL, 'b'},
        {"since", required_argument, NULL, 's'},     {"until", required_argument, NULL, 'u'},
        {"aggregate", required_argument, NULL, 'g'}, {"route", required_argument, NULL, 'r'},
        {"to", required_argument, NULL, 't'},        {"rate", required_argument, NULL, 'R'},
        {"name", required_argument, NULL, 'n'},      {NULL, 0, NULL, 0}};
    a->aggregates = calloc((size_t)argc, sizeof *a->aggregates);
    a->routes = calloc((size_t)argc, sizeof *a->routes);
    a->rate = REPLAY_RATE_DEFAULT;
    char *end;
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "c:", longopts, NULL)) != -1) {
        switch (opt) {
        case 'c': a->config = optarg; break;
        case 'b': a->outbox = optarg; break;
        case 's': a->since = optarg; break;
        case 'u': a->until = optarg; break;
        case 'g': a->aggregates[a->aggregate_count++] = optarg; break;
        case 'r': a->routes[a->route_count++] = optarg; break;
        case 't': a->to = optarg; break;
        case 'n': a->name = optarg; break;
        case 'R':
            a->rate = strtod(optarg, &end);
            if (*end || !(a->rate >= 1 && a->rate <= 1e7))
                return usage("--rate takes events a second, 1 to 10000000");
            break;
        default: return usage("bad option");
        }
    }
    if (optind < argc)
        return usage("unexpected argument");
    if (a->name && (!a->name[0] || strlen(a->name) > 100))
        return usage("--name takes 1 to 100 characters");
    if (!a->since)
        return usage("--since TIME is required (e.g. '2026-12-01T10:00:00Z' or '1 hour ago')");
    for (int i = 0; i < a->aggregate_count; i++) {
        const char *slash = strchr(a->aggregates[i], '/');
        if (!slash || slash == a->aggregates[i] || !slash[1])
            return usage("--aggregate takes TYPE/ID, e.g. Order/42");
    }
    if (!a->config)
        return usage("missing -c FILE (the config file)");
    return 0;
}

/* Routes by number; the output by name. Fills routes[] and *to. */
static int resolve(const relay_config *cfg, const replay_args *a, unsigned char *routes, long *to)
{
    for (int i = 0; i < a->route_count; i++) {
        char *end;
        long n = strtol(a->routes[i], &end, 10);
        if (*end || n < 1 || (size_t)n > cfg->route_count) {
            fprintf(stderr,
                    "outbox-relay replay: --route %s: give a route's number, 1 to %zu in %s's "
                    "order\n",
                    a->routes[i], cfg->route_count, cfg->path);
            return 2;
        }
        routes[n - 1] = 1;
    }
    *to = -1;
    for (size_t i = 0; a->to && i < cfg->output_count; i++)
        if (!strcmp(cfg->outputs[i].name, a->to))
            *to = (long)i;
    if (a->to && *to < 0) {
        fprintf(stderr, "outbox-relay replay: --to %s: no such output in %s (outputs:", a->to,
                cfg->path);
        for (size_t i = 0; i < cfg->output_count; i++)
            fprintf(stderr, " %s", cfg->outputs[i].name);
        fputs(")\n", stderr);
        return 2;
    }
    return 0;
}

/* What names a replay: the same arguments go on with the same one (rate aside). */
static void canonical(const replay_args *a, char *out, size_t size)
{
    size_t n = (size_t)snprintf(out, size, "since=%s\nuntil=%s\nto=%s", a->since,
                                a->until ? a->until : "", a->to ? a->to : "");
    for (int i = 0; i < a->aggregate_count && n < size; i++)
        n += (size_t)snprintf(out + n, size - n, "\naggregate=%s", a->aggregates[i]);
    for (int i = 0; i < a->route_count && n < size; i++)
        n += (size_t)snprintf(out + n, size - n, "\nroute=%s", a->routes[i]);
}

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    if (stop_requested) { /* a second signal: progress is kept up to the last save */
        static const char msg[] = "second signal: exiting now; run the replay again to go on\n";
        ssize_t rc = write(STDERR_FILENO, msg, sizeof msg - 1);
        (void)rc;
        _exit(130);
    }
    stop_requested = 1;
}

/* Connected, the drivers loaded: the progress row, the count, the sending. */
static int replay(relay_state *st, PGconn *conn, const replay_args *a, const replay_opts *base)
{
    char err[1024], args[4096];
    canonical(a, args, sizeof args);
    replay_progress p = {0};
    char since[64], until[64];
    if (arg_time(conn, "--since", a->since, since, sizeof since, err, sizeof err) < 0 ||
        (a->until &&
         arg_time(conn, "--until", a->until, until, sizeof until, err, sizeof err) < 0)) {
        fprintf(stderr, "outbox-relay replay: %s\n", err);
        return 2;
    }
    int rc = replay_progress_begin(conn, st->cfg, a->name, args, since, a->until ? until : NULL, &p,
                                   err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "outbox-relay replay: %s\n", err);
        return rc;
    }
    if (p.finished) {
        printf("replay %s: finished already (%lld events replayed, %lld failed)\n", p.name,
               p.replayed, p.failed);
        return 0;
    }
    pgarray types, ids;
    pgarray_init(&types);
    pgarray_init(&ids);
    for (int i = 0; i < a->aggregate_count; i++) {
        char *slash = strchr(a->aggregates[i], '/');
        *slash = '\0';
        pgarray_add(&types, a->aggregates[i], 1);
        pgarray_add(&ids, slash + 1, 1);
        *slash = '/';
    }
    replay_filter f = {p.since,
                       p.until,
                       a->aggregate_count ? pgarray_text(&types) : NULL,
                       a->aggregate_count ? pgarray_text(&ids) : NULL,
                       p.max_id,
                       st->src->replayable};
    replay_opts o = *base;
    o.total = replay_count(conn, st->cfg, &f, p.done_through, err, sizeof err);
    long long skipped = 0;
    if (o.total < 0) {
        fprintf(stderr, "outbox-relay replay: %s\n", err);
        rc = 1;
    } else {
        log_info("replay %s: %lld events created in [%s, %s)%s, at most %.0f a second", p.name,
                 o.total, p.since, p.until, p.done_through ? " left (resumed)" : "", o.rate);
        rc = replay_send(st, conn, &f, &p, &o, &skipped);
        printf("replay %s: %s: %lld events replayed, %lld failed, %lld not on the routes "
               "chosen%s\n",
               p.name, p.finished ? "done" : "stopped", p.replayed, p.failed, skipped,
               p.finished ? "" : "; run it again to send the rest");
    }
    pgarray_free(&types);
    pgarray_free(&ids);
    return rc;
}

int replay_main(int argc, char **argv, const source_kind *(*source_of)(const relay_config *cfg))
{
    replay_args a = {0};
    int rc = parse(argc, argv, &a);
    char err[1024];
    relay_config *cfg = NULL;
    if (rc == 0 && !(cfg = config_load_source(a.config, a.outbox, err, sizeof err))) {
        fprintf(stderr, "outbox-relay: config error: %s\n", err);
        rc = 2;
    }
    unsigned char *routes = cfg ? calloc(cfg->route_count, 1) : NULL;
    replay_opts o = {.rate = a.rate, .stop = &stop_requested};
    if (rc == 0) {
        log_setup(cfg->log_level, cfg->log_format);
        rc = resolve(cfg, &a, routes, &o.to_output);
        o.routes = a.route_count ? routes : NULL;
    }
    relay_state st = {.cfg = cfg, .src = cfg ? source_of(cfg) : NULL};
    pthread_mutex_init(&st.gen_lock, NULL);
    if (rc == 0 && !(st.gen = gen_new(cfg, 0, 0, err, sizeof err))) {
        fprintf(stderr, "outbox-relay: config error: %s\n", err);
        rc = 2;
    }
    PGconn *conn = NULL;
    if (rc == 0 && !(conn = db_connect(cfg, "outbox-relay replay", err, sizeof err))) {
        fprintf(stderr, "outbox-relay: %s\n", err);
        rc = 1;
    }
    /* a page walks the id index from the last id read, whatever the table's
     * statistics say (unanalyzed, a sort of every row left, per page) */
    if (rc == 0 && db_exec(conn, "SET enable_sort = off", err, sizeof err) < 0) {
        fprintf(stderr, "outbox-relay replay: %s\n", err);
        rc = 1;
    }
    if (rc == 0 && replay_payload_kind(conn, cfg, &st.payload, err, sizeof err) < 0) {
        fprintf(stderr, "outbox-relay replay: %s\n", err);
        rc = 1;
    }
    if (rc == 0) {
        struct sigaction sa = {.sa_handler = on_signal};
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        signal(SIGPIPE, SIG_IGN);
        rc = replay(&st, conn, &a, &o);
    }
    PQfinish(conn);
    if (st.gen)
        gen_release(st.gen);
    pthread_mutex_destroy(&st.gen_lock);
    free(routes);
    config_free(cfg);
    free(a.aggregates);
    free(a.routes);
    return rc;
}
