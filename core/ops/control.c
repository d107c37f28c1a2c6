#include "ops/control.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/text.h"
#include "db/db.h"
#include "db/own_tables.h"
#include "db/sql.h"

/* SQL text reads best as written. */
/* clang-format off */
static const char pause_sql[] =
    "INSERT INTO {schema}.outbox_relay_control (table_name, scope, name, reason)"
    " VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING";
static const char resume_sql[] =
    "DELETE FROM {schema}.outbox_relay_control WHERE table_name = $1 AND scope = $2 AND name = $3";
static const char read_sql[] =
    "SELECT scope, name, to_char(paused_at, 'YYYY-MM-DD HH24:MI:SSOF'), paused_by,"
    " coalesce(reason, '') FROM {schema}.outbox_relay_control WHERE table_name = $1"
    " ORDER BY scope DESC, name";
/* clang-format on */

/* Runs one of the statements above with params; NULL with err on failure.
 * absent: set to 1 when the table does not exist (then no error), to
 * OWN_REFUSED when it is not init-db's (db/own_tables.c): one another role
 * made is refused unread. */
static PGresult *run(PGconn *conn, const relay_config *cfg, const char *tmpl, int n,
                     const char *const *params, int *absent, char *err, size_t err_size)
{
    int ready = own_table_ready(conn, cfg, OWN_CONTROL_TABLE, err, err_size);
    if (ready <= 0) {
        if (ready == 0 && absent)
            *absent = 1;
        else if (ready == OWN_REFUSED && absent)
            *absent = OWN_REFUSED; /* with err */
        else if (ready == 0)
            snprintf(err, err_size,
                     "%s.%s is missing: run `outbox-relay init-db -c %s` (it makes the "
                     "table; pause no longer does)",
                     cfg->schema, OWN_CONTROL_TABLE, cfg->path);
        return NULL;
    }
    char *sql = sql_render(cfg, tmpl);
    PGresult *res = PQexecParams(conn, sql, n, NULL, params, NULL, NULL, 0);
    free(sql);
    ExecStatusType status = PQresultStatus(res);
    if (status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK)
        return res;
    const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    if (absent && state && strcmp(state, "42P01") == 0) /* dropped meanwhile: nothing paused */
        *absent = 1;
    else
        db_error(conn, res, err, err_size);
    PQclear(res);
    return NULL;
}

int control_read(PGconn *conn, const relay_config *cfg, pauses *p, int *changed, char *err,
                 size_t err_size)
{
    const char *params[] = {cfg->table};
    int absent = 0;
    PGresult *res = run(conn, cfg, read_sql, 1, params, &absent, err, err_size);
    if (!res && absent != 1)
        return absent == OWN_REFUSED ? OWN_REFUSED : -1;
    int rows = res ? PQntuples(res) : 0, source = 0;
    size_t count = 0;
    const char **names = calloc((size_t)rows + 1, sizeof *names);
    for (int r = 0; r < rows; r++) {
        if (strcmp(PQgetvalue(res, r, 0), CONTROL_SOURCE) == 0)
            source = 1;
        else
            names[count++] = PQgetvalue(res, r, 1);
    }
    /* the same list as before? (names come ordered) */
    size_t size = 1;
    for (size_t i = 0; i < count; i++)
        size += strlen(names[i]) + 1;
    char *now = calloc(size, 1);
    for (size_t i = 0; i < count; i++)
        strcat(strcat(now, names[i]), "\n");
    pthread_mutex_lock(&p->lock);
    *changed = atomic_load(&p->source) != source || strcmp(p->outputs ? p->outputs : "", now) != 0;
    pthread_mutex_unlock(&p->lock);
    if (*changed)
        pauses_set(p, source, names, count);
    free(now);
    free(names);
    PQclear(res);
    return 0;
}

void control_log(pauses *p)
{
    char names[512] = "";
    pthread_mutex_lock(&p->lock);
    text_copy(names, sizeof names, p->outputs ? p->outputs : "");
    pthread_mutex_unlock(&p->lock);
    for (char *nl = strchr(names, '\n'); nl; nl = strchr(nl, '\n'))
        *nl = nl[1] ? ' ' : '\0';
    if (atomic_load(&p->source))
        log_warn("paused by an operator: the source (nothing is sent until `outbox-relay resume "
                 "--source`)");
    else if (names[0])
        log_warn("paused by an operator: output %s (its events wait; no attempt is counted)",
                 names);
    else
        log_info("nothing is paused by an operator now");
}

int control_set(PGconn *conn, const relay_config *cfg, const char *scope, const char *name,
                int pause, const char *reason, char *err, size_t err_size)
{
    const char *params[] = {cfg->table, scope, name, reason};
    int absent = 0;
    PGresult *res = run(conn, cfg, pause ? pause_sql : resume_sql, pause ? 4 : 3, params,
                        pause ? NULL : &absent, err, err_size);
    if (!res)
        return absent == 1 ? 0 : -1;
    int done = atoi(PQcmdTuples(res)) > 0;
    PQclear(res);
    return done;
}

int control_print(PGconn *conn, const relay_config *cfg, FILE *out, char *err, size_t err_size)
{
    const char *params[] = {cfg->table};
    int absent = 0;
    PGresult *res = run(conn, cfg, read_sql, 1, params, &absent, err, err_size);
    if (!res)
        return absent == 1 ? 0 : -1;
    /* names, role and reason are the table's text: on a terminal their
     * control characters are shown, not obeyed */
    for (int r = 0; r < PQntuples(res); r++) {
        int source = strcmp(PQgetvalue(res, r, 0), CONTROL_SOURCE) == 0;
        fputs("paused:                 ", out);
        if (source)
            fputs("the source (nothing is sent)", out);
        else {
            fputs("output ", out);
            text_print_clean(out, PQgetvalue(res, r, 1), 200);
        }
        fprintf(out, " since %s by ", PQgetvalue(res, r, 2));
        text_print_clean(out, PQgetvalue(res, r, 3), 200);
        if (PQgetvalue(res, r, 4)[0]) {
            fputs(" (", out);
            text_print_clean(out, PQgetvalue(res, r, 4), 500);
            fputc(')', out);
        }
        fputc('\n', out);
    }
    PQclear(res);
    return 0;
}

/* A pause row as JSON: paused, since, by, reason (null when none given). */
static json_t *pause_json(PGresult *res, int r)
{
    const char *reason = PQgetvalue(res, r, 4);
    return json_pack("{s:b,s:s,s:s,s:s?}", "paused", 1, "since", PQgetvalue(res, r, 2), "by",
                     PQgetvalue(res, r, 3), "reason", reason[0] ? reason : NULL);
}

int control_json(PGconn *conn, const relay_config *cfg, json_t *json, char *err, size_t err_size)
{
    const char *params[] = {cfg->table};
    int absent = 0;
    PGresult *res = run(conn, cfg, read_sql, 1, params, &absent, err, err_size);
    if (!res && absent != 1)
        return -1;
    json_t *source = NULL, *outputs = json_object();
    for (int r = 0; res && r < PQntuples(res); r++) {
        if (strcmp(PQgetvalue(res, r, 0), CONTROL_SOURCE) == 0)
            source = pause_json(res, r);
        else
            json_object_set_new(outputs, PQgetvalue(res, r, 1), pause_json(res, r));
    }
    /* every configured output, paused or not; a paused name no output has
     * any more (a pause outlives a config change) stays listed */
    for (size_t i = 0; i < cfg->output_count; i++)
        if (!json_object_get(outputs, cfg->outputs[i].name))
            json_object_set_new(outputs, cfg->outputs[i].name, json_pack("{s:b}", "paused", 0));
    /* the source's per-output entries say it too */
    json_t *list = json_object_get(json, "outputs"), *entry;
    size_t at;
    json_array_foreach(list, at, entry)
    {
        json_t *name = json_object_get(entry, "output");
        json_t *pause =
            json_is_string(name) ? json_object_get(outputs, json_string_value(name)) : NULL;
        json_object_set_new(entry, "paused",
                            json_boolean(pause && json_is_true(json_object_get(pause, "paused"))));
    }
    json_object_set_new(json, "pauses",
                        json_pack("{s:o,s:o}", "source",
                                  source ? source : json_pack("{s:b}", "paused", 0), "outputs",
                                  outputs));
    PQclear(res);
    return 0;
}
