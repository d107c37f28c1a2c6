/*
 * fanout: the relay's own driver behind a fan-out route (core/config/
 * config_fanout.h). It "publishes" an event by copying it into the outbox
 * table of each target its destination lists ("a,b": tables <table>_to_a and
 * <table>_to_b), where a poll source per target relays it on. The copy's
 * commit is the acknowledgement.
 *
 * A copy is made once: the target tables' event_id is unique and a copy
 * made again (after a crash between the copy and the source's record) does
 * nothing. Each batch is one transaction, one INSERT per target; rows go in
 * batch order, so an aggregate's events get ids in its order in each target
 * (OBX_DRIVER_IN_ORDER). A payload that is not JSON is refused (the target
 * tables' payload is jsonb). A failed batch is copied again event by event,
 * so one bad event fails alone; a lost database or a missing target table
 * (init-db not run) makes the output unavailable (no attempt counted).
 */
#include <jansson.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "obx/driver.h"
#include "obx/driver_util.h"

static const obx_option fanout_options[] = {
    {"conninfo", OBX_OPT_STRING, OBX_OPT_REQUIRED | OBX_OPT_SECRET,
     "the source's database (set by the relay)"},
    {"schema", OBX_OPT_STRING, OBX_OPT_REQUIRED, "the source's schema"},
    {"table", OBX_OPT_STRING, OBX_OPT_REQUIRED,
     "the source's table: the targets' are <table>_to_<output>"},
    {NULL, 0, 0, NULL},
};

/* One event as the INSERT's parameters. */
enum {
    COL_EVENT_ID,
    COL_AGG_TYPE,
    COL_AGG_ID,
    COL_EVENT_TYPE,
    COL_PAYLOAD,
    COL_HEADERS,
    COL_CREATED_US,
    COLS
};

typedef struct row {
    const char *value[COLS];
    char *payload, *headers, created_us[24];
    obx_status status; /* OBX_OK: to copy; else refused with detail */
    char detail[160];
} row;

struct obx_instance {
    const obx_host *host;
    const char *conninfo, *schema, *table;
    PGconn *conn;
    obx_held held; /* aggregates with an event not copied in this batch */
};

static obx_instance *fanout_create(const obx_host *host, char *err, size_t err_size)
{
    obx_instance *inst = calloc(1, sizeof *inst);
    if (!inst || !host->get_string(host->host_ctx, "conninfo", &inst->conninfo) ||
        !host->get_string(host->host_ctx, "schema", &inst->schema) ||
        !host->get_string(host->host_ctx, "table", &inst->table)) {
        snprintf(err, err_size, "fanout: conninfo, schema and table are required");
        free(inst);
        return NULL;
    }
    inst->host = host;
    return inst; /* connects at the first batch */
}

/* The session, made when missing or lost; NULL when the database is away. */
static PGconn *session(obx_instance *inst)
{
    if (inst->conn && PQstatus(inst->conn) == CONNECTION_OK)
        return inst->conn;
    PQfinish(inst->conn);
    /* the conninfo's own settings win over these defaults */
    const char *keys[] = {"connect_timeout", "dbname", "fallback_application_name", NULL};
    const char *values[] = {"10", inst->conninfo, "outbox-relay fanout", NULL};
    inst->conn = PQconnectdbParams(keys, values, 1);
    if (PQstatus(inst->conn) != CONNECTION_OK) {
        /* libpq's message names the server, never the password */
        inst->host->log(inst->host->host_ctx, OBX_LOG_WARN, "cannot connect: %s",
                        PQerrorMessage(inst->conn));
        PQfinish(inst->conn);
        inst->conn = NULL;
        return NULL;
    }
    /* a copy never waits long for a lock: the source's batch waits on it;
     * no schema another role may CREATE in on the path (the relay's own
     * sessions' rule, core/db/db.c) */
    PQclear(PQexec(inst->conn,
                   "SET statement_timeout = '30s'; SET search_path = pg_catalog, pg_temp"));
    return inst->conn;
}

static int exec_ok(PGconn *conn, const char *sql)
{
    PGresult *res = PQexec(conn, sql);
    int ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    PQclear(res);
    return ok;
}

/* The row's parameters; a refusal (status) when it cannot be copied. */
static void row_of(const obx_message *m, row *r)
{
    memset(r, 0, sizeof *r);
    if (m->payload && strcmp(m->content_type, "application/json") != 0) {
        r->status = OBX_PERMANENT;
        snprintf(r->detail, sizeof r->detail,
                 "fan-out copies JSON payloads (its tables' payload is jsonb); this one is %s",
                 m->content_type);
        return;
    }
    json_t *headers = m->header_count ? json_object() : NULL;
    for (size_t i = 0; i < m->header_count; i++)
        json_object_set_new(headers, m->headers[i].key, json_string(m->headers[i].value));
    r->headers = headers ? json_dumps(headers, JSON_COMPACT) : NULL;
    json_decref(headers);
    if (m->payload && (r->payload = malloc(m->payload_len + 1))) {
        memcpy(r->payload, m->payload, m->payload_len);
        r->payload[m->payload_len] = '\0';
    }
    if ((m->payload && !r->payload) || (m->header_count && !r->headers)) {
        r->status = OBX_RETRIABLE;
        snprintf(r->detail, sizeof r->detail, "out of memory");
        return;
    }
    snprintf(r->created_us, sizeof r->created_us, "%lld", (long long)m->created_at_us);
    r->value[COL_EVENT_ID] = m->event_id;
    r->value[COL_AGG_TYPE] = m->aggregate_type;
    r->value[COL_AGG_ID] = m->aggregate_id;
    r->value[COL_EVENT_TYPE] = m->event_type;
    r->value[COL_PAYLOAD] = r->payload;
    r->value[COL_HEADERS] = r->headers;
    r->value[COL_CREATED_US] = r->created_us;
}

/* Does the comma-separated list name target? */
static int lists(const char *list, const char *target, size_t target_len)
{
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        if (len == target_len && strncmp(p, target, len) == 0)
            return 1;
        p += len + (p[len] == ',');
    }
    return 0;
}

/* INSERTs the chosen rows (pick[i]) whose destination lists target (tlen
 * bytes) into its table, in batch order. NULL on success, else the result. */
static PGresult *insert_into(obx_instance *inst, const char *target, size_t tlen,
                             const obx_message *msgs, row *rows, const unsigned char *pick,
                             size_t count)
{
    char table[512];
    snprintf(table, sizeof table, "%s_to_%.*s", inst->table, (int)tlen, target);
    char *qs = PQescapeIdentifier(inst->conn, inst->schema, strlen(inst->schema));
    char *qt = PQescapeIdentifier(inst->conn, table, strlen(table));
    char *sql = malloc(256 + strlen(qs ? qs : "") + strlen(qt ? qt : "") + count * 160);
    const char **params = malloc(count * COLS * sizeof *params);
    if (!sql || !params) {
        PQfreemem(qs);
        PQfreemem(qt);
        free(sql);
        free(params);
        return PQmakeEmptyPGresult(inst->conn, PGRES_FATAL_ERROR);
    }
    int len = sprintf(sql,
                      "INSERT INTO %s.%s (event_id, aggregate_type, aggregate_id, event_type, "
                      "payload, headers, created_at) VALUES ",
                      qs ? qs : "", qt ? qt : "");
    size_t k = 0;
    for (size_t j = 0; j < count; j++) {
        if (!pick[j] || !lists(msgs[j].destination, target, tlen))
            continue;
        int b = (int)(k * COLS);
        len += sprintf(sql + len,
                       "%s($%d::uuid, $%d, $%d, $%d, $%d::jsonb, $%d::jsonb, 'epoch'::timestamptz "
                       "+ $%d::bigint * interval '1 microsecond')",
                       k ? ", " : "", b + 1, b + 2, b + 3, b + 4, b + 5, b + 6, b + 7);
        memcpy(&params[k * COLS], rows[j].value, sizeof rows[j].value);
        k++;
    }
    sprintf(sql + len, " ON CONFLICT (event_id) DO NOTHING");
    PGresult *res = PQexecParams(inst->conn, sql, (int)(k * COLS), NULL, params, NULL, NULL, 0);
    PQfreemem(qs);
    PQfreemem(qt);
    free(sql);
    free(params);
    if (PQresultStatus(res) == PGRES_COMMAND_OK) {
        PQclear(res);
        return NULL;
    }
    return res;
}

/* Each target the chosen rows' destinations list, once, gets its INSERT, in
 * the open transaction. NULL on success, else the failed result. */
static PGresult *copy_rows(obx_instance *inst, const obx_message *msgs, row *rows,
                           const unsigned char *pick, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        if (!pick[i])
            continue;
        for (const char *t = msgs[i].destination; *t;) {
            size_t tlen = strcspn(t, ",");
            int done = 0; /* an earlier chosen row lists it: its INSERT has been made */
            for (size_t j = 0; j < i && !done; j++)
                done = pick[j] && lists(msgs[j].destination, t, tlen);
            PGresult *failed = done ? NULL : insert_into(inst, t, tlen, msgs, rows, pick, count);
            if (failed)
                return failed;
            t += tlen + (t[tlen] == ',');
        }
    }
    return NULL;
}

/* One transaction: the chosen rows copied, or the failed result. */
static PGresult *copy_in_transaction(obx_instance *inst, const obx_message *msgs, row *rows,
                                     const unsigned char *pick, size_t count)
{
    if (!exec_ok(inst->conn, "BEGIN"))
        return PQmakeEmptyPGresult(inst->conn, PGRES_FATAL_ERROR);
    PGresult *failed = copy_rows(inst, msgs, rows, pick, count);
    if (!failed) {
        PGresult *res = PQexec(inst->conn, "COMMIT");
        if (PQresultStatus(res) == PGRES_COMMAND_OK) {
            PQclear(res);
            return NULL;
        }
        return res;
    }
    exec_ok(inst->conn, "ROLLBACK");
    return failed;
}

/* The output's fault (the database away, a target table missing: init-db
 * not run), not the event's. */
static int output_fault(PGconn *conn, const PGresult *res)
{
    const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    return PQstatus(conn) != CONNECTION_OK || !state || strcmp(state, "42P01") == 0 ||
           strncmp(state, "08", 2) == 0 || strncmp(state, "57", 2) == 0;
}

static void complete_all(obx_instance *inst, const obx_message *msgs, const obx_status *accept,
                         size_t count, obx_status status, const char *detail)
{
    for (size_t i = 0; i < count; i++)
        if (accept[i] == OBX_OK)
            inst->host->complete(inst->host->host_ctx, msgs[i].token, status, 0, detail);
}

/* After a failed batch: each event in its own transaction, in order; one
 * that fails holds back the later ones of its aggregate. */
static void copy_one_by_one(obx_instance *inst, const obx_message *msgs, row *rows,
                            const obx_status *accept, size_t count)
{
    const obx_host *host = inst->host;
    unsigned char *pick = calloc(count, 1);
    obx_held_clear(&inst->held);
    for (size_t i = 0; i < count; i++) {
        if (accept[i] != OBX_OK)
            continue;
        uint64_t aggregate = obx_aggregate_hash(&msgs[i]);
        if (!pick || obx_held_has(&inst->held, aggregate) || !session(inst)) {
            host->complete(host->host_ctx, msgs[i].token, OBX_RETRIABLE, 0,
                           "not copied in order: an earlier event of its aggregate failed");
            continue;
        }
        memset(pick, 0, count);
        pick[i] = 1;
        PGresult *res = copy_in_transaction(inst, msgs, rows, pick, count);
        if (!res) {
            host->complete(host->host_ctx, msgs[i].token, OBX_OK, 0, NULL);
            continue;
        }
        const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
        /* a value the table refuses (class 22, 23) will never go in */
        int permanent = state && (strncmp(state, "22", 2) == 0 || strncmp(state, "23", 2) == 0);
        host->complete(host->host_ctx, msgs[i].token, permanent ? OBX_PERMANENT : OBX_RETRIABLE, 0,
                       PQresultErrorMessage(res));
        PQclear(res);
        obx_held_add(&inst->held, aggregate);
    }
    free(pick);
}

static obx_status fanout_publish_batch(obx_instance *inst, const obx_message *msgs, size_t count,
                                       obx_status *accept)
{
    const obx_host *host = inst->host;
    row *rows = calloc(count, sizeof *rows);
    unsigned char *pick = calloc(count, 1);
    if (!rows || !pick) {
        free(rows);
        free(pick);
        return OBX_FATAL;
    }
    obx_held_clear(&inst->held);
    int away = !session(inst);
    for (size_t i = 0; i < count; i++) {
        uint64_t aggregate = obx_aggregate_hash(&msgs[i]);
        if (away) {
            accept[i] = OBX_UNAVAILABLE;
            continue;
        }
        if (obx_held_has(&inst->held, aggregate)) {
            accept[i] = OBX_RETRIABLE;
            if (OBX_HOST_HAS(host, refuse))
                host->refuse(host->host_ctx, msgs[i].token, 0,
                             "not copied in order: an earlier event of its aggregate was refused");
            continue;
        }
        row_of(&msgs[i], &rows[i]);
        accept[i] = rows[i].status;
        pick[i] = accept[i] == OBX_OK;
        if (accept[i] != OBX_OK) {
            if (OBX_HOST_HAS(host, refuse))
                host->refuse(host->host_ctx, msgs[i].token, 0, rows[i].detail);
            obx_held_add(&inst->held, aggregate);
        }
    }
    PGresult *failed = away ? NULL : copy_in_transaction(inst, msgs, rows, pick, count);
    if (away) {
        /* accepted nothing: no completion */
    } else if (!failed) {
        complete_all(inst, msgs, accept, count, OBX_OK, NULL);
    } else if (output_fault(inst->conn, failed)) {
        host->log(host->host_ctx, OBX_LOG_WARN, "copy failed: %s", PQresultErrorMessage(failed));
        complete_all(inst, msgs, accept, count, OBX_UNAVAILABLE, PQresultErrorMessage(failed));
    } else {
        copy_one_by_one(inst, msgs, rows, accept, count);
    }
    PQclear(failed);
    for (size_t i = 0; i < count; i++) {
        free(rows[i].payload);
        free(rows[i].headers);
    }
    free(rows);
    free(pick);
    return OBX_OK;
}

/* Every completion is made inside publish_batch. */
static size_t fanout_flush(obx_instance *inst, int timeout_ms)
{
    (void)inst;
    (void)timeout_ms;
    return 0;
}

static void fanout_close(obx_instance *inst)
{
    PQfinish(inst->conn);
    inst->conn = NULL;
}

static void fanout_destroy(obx_instance *inst)
{
    fanout_close(inst);
    obx_held_free(&inst->held);
    free(inst);
}

static const obx_driver_def fanout_def = {
    OBX_DRIVER_DEF_HEAD,
    .name = "fanout",
    .version = "1.0.0",
    .description = "copies fan-out events into each target's outbox table (the relay's own)",
    .options = fanout_options,
    .create = fanout_create,
    .publish_batch = fanout_publish_batch,
    .poll = NULL,
    .flush = fanout_flush,
    .close = fanout_close,
    .destroy = fanout_destroy,
    .flags = OBX_DRIVER_IN_ORDER,
};

OBX_DRIVER_EXPORT const obx_driver_def *obx_driver_entry(void)
{
    return &fanout_def;
}
