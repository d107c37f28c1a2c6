#include "poll/poll_outputs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"
#include "db/db.h"
#include "db/sql.h"
#include "event/route.h"

/* SQL text reads best as written. */
/* clang-format off */
/* Pending rows (the live index) and those published in the last minute
 * (the published_at index), by type; a failing row has an attempt behind it. */
static const char by_type_sql[] =
    "SELECT {c.event_type}, {c.aggregate_type},"
    " count(*) FILTER (WHERE {c.published_at} IS NULL),"
    " count(*) FILTER (WHERE {c.published_at} IS NULL AND {c.attempts} > 0),"
    " count(*) FILTER (WHERE {c.published_at} IS NOT NULL),"
    " (array_agg({c.last_error} ORDER BY {c.id} DESC) FILTER"
    "   (WHERE {c.published_at} IS NULL AND {c.attempts} > 0))[1]"
    " FROM {table} WHERE ({c.published_at} IS NULL AND {c.dead_at} IS NULL)"
    "   OR {c.published_at} > now() - interval '1 minute'"
    " GROUP BY 1, 2";
/* clang-format on */

typedef struct per_output {
    long long waiting, failing, published_1m;
    const char *last_error; /* of the failing group seen first */
} per_output;

int poll_outputs_status(PGconn *conn, const relay_config *cfg, json_t *json)
{
    char *sql = sql_render(cfg, by_type_sql);
    PGresult *res = PQexec(conn, sql);
    free(sql);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        char err[1024];
        db_error(conn, res, err, sizeof err);
        fprintf(stderr, "outbox-relay: status: %s\n", err);
        PQclear(res);
        return -1;
    }
    per_output *out = calloc(cfg->output_count + 1, sizeof *out);
    per_output *unrouted = &out[cfg->output_count];
    for (int r = 0; r < PQntuples(res); r++) {
        obx_message m = {.event_type = PQgetvalue(res, r, 0),
                         .aggregate_type = PQgetvalue(res, r, 1)};
        const cfg_route *route = route_for(cfg, &m);
        if (route && route->drop)
            continue; /* marked done as soon as claimed: nothing waits for an output */
        per_output *o = route ? &out[route->output_index] : unrouted;
        o->waiting += atoll(PQgetvalue(res, r, 2));
        o->failing += atoll(PQgetvalue(res, r, 3));
        o->published_1m += atoll(PQgetvalue(res, r, 4));
        if (!o->last_error && !PQgetisnull(res, r, 5))
            o->last_error = PQgetvalue(res, r, 5);
    }
    json_t *list = json ? json_array() : NULL;
    if (!json)
        printf(
            "outputs:                waiting, failing (an attempt made), published last minute\n");
    for (size_t i = 0; i <= cfg->output_count; i++) {
        const per_output *o = &out[i];
        const char *name = i < cfg->output_count ? cfg->outputs[i].name : NULL;
        if (!name && !o->waiting && !o->published_1m)
            continue; /* no row without a route */
        if (list) {
            json_array_append_new(list, json_pack("{s:s?,s:I,s:I,s:I,s:s?}", "output", name,
                                                  "waiting", (json_int_t)o->waiting, "failing",
                                                  (json_int_t)o->failing, "published_last_minute",
                                                  (json_int_t)o->published_1m, "last_error",
                                                  o->last_error));
            continue;
        }
        printf("  %-20s  %lld, %lld, %lld", name ? name : "(no route)", o->waiting, o->failing,
               o->published_1m);
        if (o->last_error) {
            fputs("; last error: ", stdout);
            text_print_clean(stdout, o->last_error, 160);
        }
        putchar('\n');
    }
    if (list)
        json_object_set_new(json, "outputs", list);
    free(out);
    PQclear(res);
    return 0;
}
