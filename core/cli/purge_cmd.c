#include "cli/purge_cmd.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "db/db.h"
#include "db/operator_args.h"
#include "db/pgarray.h"
#include "event/route.h"
#include "run/sources.h"

/* How many of the events a dry run would remove it lists. */
#define PURGE_LIST_MAX 20
#define PURGE_LIST_MAX_TEXT "20"

enum { P_KEY, P_EVENT_ID, P_EVENT_TYPE, P_AGGREGATE_TYPE, P_ERROR };

typedef struct purge_args {
    const char *config, *outbox, *older_than;
    char **ids;
    int id_count, all, dry_run;
    long route; /* 1-based; 0: any */
} purge_args;

static int usage(const char *why)
{
    fprintf(stderr,
            "outbox-relay purge: %s\nusage: outbox-relay purge -c FILE (--id EVENT_ID... | "
            "--older-than INTERVAL | --route N | --all) [--dry-run] [--outbox NAME]\n",
            why);
    return 2;
}

static int parse(int argc, char **argv, purge_args *a)
{
    static const struct option longopts[] = {{"config", required_argument, NULL, 'c'},
                                             {"id", required_argument, NULL, 'i'},
                                             {"older-than", required_argument, NULL, 'o'},
                                             {"route", required_argument, NULL, 'r'},
                                             {"all", no_argument, NULL, 'a'},
                                             {"dry-run", no_argument, NULL, 'n'},
                                             {"outbox", required_argument, NULL, 'b'},
                                             {NULL, 0, NULL, 0}};
    a->ids = calloc((size_t)argc, sizeof *a->ids);
    const char *route = NULL;
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "c:", longopts, NULL)) != -1) {
        switch (opt) {
        case 'c': a->config = optarg; break;
        case 'i': a->ids[a->id_count++] = optarg; break;
        case 'o': a->older_than = optarg; break;
        case 'r': route = optarg; break;
        case 'a': a->all = 1; break;
        case 'n': a->dry_run = 1; break;
        case 'b': a->outbox = optarg; break;
        default: return usage("bad option");
        }
    }
    if (optind < argc && a->id_count == 0)
        return usage("unexpected argument (event ids follow --id)");
    while (optind < argc) /* --id A B C */
        a->ids[a->id_count++] = argv[optind++];
    if (route) {
        char *end;
        a->route = strtol(route, &end, 10);
        if (*end || a->route < 1)
            return usage("--route takes a route's number, from 1 in the config's order");
    }
    int selectors = (a->id_count > 0) + (a->older_than != NULL) + (route != NULL);
    if (a->all && selectors)
        return usage("--all selects every dead event: give it alone");
    if (!a->all && !selectors)
        return usage("say which dead events: --id, --older-than, --route, or --all");
    if (!a->config)
        return usage("missing -c FILE (the config file)");
    return 0;
}

/* Does the event take route n (1-based) first, as the relay would route it? */
static int takes_route(const relay_config *cfg, const PGresult *res, int row, long n)
{
    if (n == 0)
        return 1;
    if (PQgetisnull(res, row, P_EVENT_TYPE) || PQgetisnull(res, row, P_AGGREGATE_TYPE))
        return 0; /* a dead letter stored raw: no route would take it */
    obx_message m = {.event_type = PQgetvalue(res, row, P_EVENT_TYPE),
                     .aggregate_type = PQgetvalue(res, row, P_AGGREGATE_TYPE)};
    return route_for(cfg, &m) == &cfg->routes[n - 1];
}

/* Row data on a terminal: control characters shown, not obeyed. */
static void print_clean(const char *s, size_t max)
{
    size_t n = 0;
    for (; *s && n < max; s++, n++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            printf("\\x%02x", (unsigned char)*s);
        else
            putchar(*s);
    if (*s)
        fputs("...", stdout);
}

static void print_listed(const PGresult *res, const int *rows, long count)
{
    printf("dry run: would purge %ld dead events%s\n", count,
           count > PURGE_LIST_MAX ? " (the first " PURGE_LIST_MAX_TEXT " below)" : "");
    for (long k = 0; k < count && k < PURGE_LIST_MAX; k++) {
        int r = rows[k];
        printf("  %s  ",
               PQgetisnull(res, r, P_EVENT_ID) ? "(stored raw)" : PQgetvalue(res, r, P_EVENT_ID));
        print_clean(PQgetisnull(res, r, P_EVENT_TYPE) ? "-" : PQgetvalue(res, r, P_EVENT_TYPE), 64);
        fputs("  last error: ", stdout);
        print_clean(PQgetvalue(res, r, P_ERROR), 200);
        putchar('\n');
    }
}

/* Selects, filters by route, then lists (dry run) or deletes, in one transaction. */
static int purge(PGconn *conn, const relay_config *cfg, const purge_args *a)
{
    const source_kind *src = source_for(cfg);
    pgarray ids, keys;
    pgarray_init(&ids);
    pgarray_init(&keys);
    for (int i = 0; i < a->id_count; i++)
        pgarray_add(&ids, a->ids[i], 1);
    char err[1024];
    int bad = 0, rc = 1, open = db_exec(conn, "BEGIN", err, sizeof err) == 0;
    PGresult *res = NULL;
    if (open)
        res = src->purge_select(conn, cfg, a->id_count ? pgarray_text(&ids) : NULL, a->older_than,
                                &bad, err, sizeof err);
    int rows = res ? PQntuples(res) : 0;
    int *chosen = calloc((size_t)rows + 1, sizeof *chosen);
    long count = 0;
    for (int r = 0; r < rows; r++)
        if (takes_route(cfg, res, r, a->route)) {
            chosen[count++] = r;
            pgarray_add(&keys, PQgetvalue(res, r, P_KEY), 1);
        }
    if (res && a->dry_run) {
        print_listed(res, chosen, count);
        rc = 0;
    } else if (res) {
        long long n =
            count ? src->purge_delete(conn, cfg, pgarray_text(&keys), err, sizeof err) : 0;
        if (n >= 0 && db_exec(conn, "COMMIT", err, sizeof err) == 0) {
            printf("purged %lld dead events\n", n);
            rc = 0;
            open = 0;
        }
    }
    if (rc != 0) {
        fprintf(stderr, "outbox-relay purge: %s\n", err);
        if (bad)
            rc = 2;
    }
    char ignored[256];
    if (open) /* the dry run's, or after a failure */
        db_exec(conn, "ROLLBACK", ignored, sizeof ignored);
    PQclear(res);
    free(chosen);
    pgarray_free(&ids);
    pgarray_free(&keys);
    return rc;
}

int purge_main(int argc, char **argv)
{
    purge_args a = {0};
    int rc = parse(argc, argv, &a);
    relay_config *cfg = rc == 0 ? command_load_config(a.config, a.outbox, "purge") : NULL;
    if (rc == 0 && !cfg)
        rc = 2;
    if (rc == 0 && a.route > (long)cfg->route_count) {
        fprintf(stderr, "outbox-relay purge: --route %ld: %s has %zu routes\n", a.route, cfg->path,
                cfg->route_count);
        rc = 2;
    }
    if (rc == 0 && arg_check_event_ids("purge", a.ids, a.id_count) < 0)
        rc = 2;
    PGconn *conn = NULL;
    if (rc == 0 && !(conn = command_connect(cfg)))
        rc = 1;
    char err[1024];
    if (rc == 0 && !command_installed(conn, cfg, err, sizeof err)) {
        fprintf(stderr, "outbox-relay purge: %s\n", err);
        rc = 1;
    }
    if (rc == 0 && a.older_than &&
        arg_interval(conn, "--older-than", a.older_than, err, sizeof err) < 0) {
        fprintf(stderr, "outbox-relay purge: %s\n", err);
        rc = 2;
    }
    if (rc == 0)
        rc = purge(conn, cfg, &a);
    PQfinish(conn);
    config_free(cfg);
    free(a.ids);
    return rc;
}
