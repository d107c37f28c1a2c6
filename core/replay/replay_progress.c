#include "replay/replay_progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db.h"
#include "db/own_tables.h"
#include "db/sql.h"
#include "db/sql_run.h"

/* SQL text reads best as written. */
/* clang-format off */
/* The times are parsed even when the name exists: a typo is an error either way. */
static const char begin_sql[] =
    "WITH a AS (SELECT coalesce($1, 'replay-' || left(md5($2), 12)) AS name,"
    "   $3::timestamptz AS since, coalesce($4::timestamptz, now()) AS until),"
    " i AS (INSERT INTO {schema}.outbox_relay_replay (name, args, since, until, max_id)"
    "   SELECT name, $2, since, until, (SELECT coalesce(max({c.id}), 0) FROM {table}) FROM a"
    "   ON CONFLICT (name) DO NOTHING)"
    " SELECT a.name, r.args = $2, r.since::text, r.until::text, r.max_id, r.done_through,"
    "  r.replayed, r.failed, r.finished_at IS NOT NULL"
    " FROM a LEFT JOIN {schema}.outbox_relay_replay r ON r.name = a.name";

static const char save_sql[] =
    "UPDATE {schema}.outbox_relay_replay SET done_through = $2, replayed = $3, failed = $4,"
    " updated_at = now(), finished_at = CASE WHEN $5 THEN now() END WHERE name = $1";
/* clang-format on */

/* The statement sees no row of its own insert: read it again. */
static int begin_once(PGconn *conn, const relay_config *cfg, const char *const *params,
                      replay_progress *p, char *err, size_t err_size)
{
    int bad = 0, rc;
    PGresult *res = sql_run(conn, cfg, begin_sql, 4, params, PGRES_TUPLES_OK, &bad, err, err_size);
    if (!res) {
        rc = bad ? 2 : 1; /* 2: a time that does not parse */
    } else if (PQgetisnull(res, 0, 1)) {
        rc = -1; /* inserted just now */
    } else if (PQgetvalue(res, 0, 1)[0] != 't') {
        snprintf(err, err_size,
                 "replay \"%s\" was started with other arguments; give the same ones to go on "
                 "with it, or another --name",
                 PQgetvalue(res, 0, 0));
        rc = 2;
    } else {
        snprintf(p->name, sizeof p->name, "%s", PQgetvalue(res, 0, 0));
        snprintf(p->since, sizeof p->since, "%s", PQgetvalue(res, 0, 2));
        snprintf(p->until, sizeof p->until, "%s", PQgetvalue(res, 0, 3));
        p->max_id = atoll(PQgetvalue(res, 0, 4));
        p->done_through = atoll(PQgetvalue(res, 0, 5));
        p->replayed = atoll(PQgetvalue(res, 0, 6));
        p->failed = atoll(PQgetvalue(res, 0, 7));
        p->finished = PQgetvalue(res, 0, 8)[0] == 't';
        rc = 0;
    }
    PQclear(res);
    return rc;
}

int replay_progress_begin(PGconn *conn, const relay_config *cfg, const char *name, const char *args,
                          const char *since, const char *until, replay_progress *p, char *err,
                          size_t err_size)
{
    /* init-db's table (db/own_tables.c): one another role made is refused unread */
    int ready = own_table_ready(conn, cfg, OWN_REPLAY_TABLE, err, err_size);
    if (ready == 0)
        snprintf(err, err_size,
                 "%s.%s is missing: run `outbox-relay init-db -c %s` (it makes the table; "
                 "replay no longer does)",
                 cfg->schema, OWN_REPLAY_TABLE, cfg->path);
    int rc = ready > 0 ? 0 : 1;
    const char *params[] = {name, args, since, until};
    if (rc == 0 && (rc = begin_once(conn, cfg, params, p, err, err_size)) < 0)
        rc = begin_once(conn, cfg, params, p, err, err_size);
    return rc < 0 ? 1 : rc;
}

int replay_progress_save(PGconn *conn, const relay_config *cfg, const replay_progress *p, char *err,
                         size_t err_size)
{
    char done[24], replayed[24], failed[24];
    snprintf(done, sizeof done, "%lld", p->done_through);
    snprintf(replayed, sizeof replayed, "%lld", p->replayed);
    snprintf(failed, sizeof failed, "%lld", p->failed);
    const char *params[] = {p->name, done, replayed, failed, p->finished ? "true" : "false"};
    PGresult *res = sql_run(conn, cfg, save_sql, 5, params, PGRES_COMMAND_OK, NULL, err, err_size);
    PQclear(res);
    return res ? 0 : -1;
}
