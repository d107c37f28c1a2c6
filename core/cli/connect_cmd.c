#include "cli/connect_cmd.h"

#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db.h"
#include "db/schema.h"
#include "db/sql.h"
#include "host/host.h"
#include "host/loader.h"
#include "run/sources.h"

static int quiet; /* --json: stdout holds the JSON object alone */

/* What passed, on stdout (indented under its source's name). */
static void passed(const relay_config *cfg, const char *fmt, ...)
{
    if (quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    fputs(cfg->source_name ? "  " : "", stdout);
    vprintf(fmt, ap);
    va_end(ap);
}

/* One failure: a line on stderr, and the JSON check's error. */
static void failed(const relay_config *cfg, json_t *check, const char *what, const char *fmt, ...)
{
    char why[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    fprintf(stderr, "outbox-relay: check-config: %s%s%s%s: %s\n",
            cfg->source_name ? "source " : "", cfg->source_name ? cfg->source_name : "",
            cfg->source_name ? ", " : "", what, why);
    json_object_set_new(check, "ok", json_false());
    json_object_set_new(check, "error", json_string(why));
}

/* The privileges of entry "SUFFIX:PRIV,PRIV" the role lacks, as text in
 * missing ("" none); -1 with err when they cannot be read. */
static int lacking(PGconn *conn, const relay_config *cfg, const char *entry, char *table,
                   size_t table_size, char *missing, size_t missing_size, char *err,
                   size_t err_size)
{
    const char *colon = strchr(entry, ':');
    char suffix[64], name[SQL_NAME_MAX + 1];
    snprintf(suffix, sizeof suffix, "%.*s", colon ? (int)(colon - entry) : 0, entry);
    if (suffix[0])
        sql_derived_name(cfg, suffix, name, sizeof name);
    else
        snprintf(name, sizeof name, "%s", cfg->table);
    snprintf(table, table_size, "%s.%s", cfg->schema, name);
    const char *params[] = {cfg->schema, name, colon ? colon + 1 : ""};
    PGresult *res = PQexecParams(
        conn,
        "SELECT t IS NULL, (SELECT string_agg(p, ', ' ORDER BY n) FROM"
        " unnest(string_to_array($3::text, ',')) WITH ORDINALITY AS u(p, n)"
        " WHERE NOT has_table_privilege(t, p)) FROM to_regclass(format('%I.%I', $1::text,"
        " $2::text)) AS t",
        3, NULL, params, NULL, NULL, 0);
    int rc = -1;
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
        db_error(conn, res, err, err_size);
    } else if (PQgetvalue(res, 0, 0)[0] == 't') {
        snprintf(err, err_size, "table %s is missing: run `outbox-relay init-db -c %s`", table,
                 cfg->path);
    } else {
        snprintf(missing, missing_size, "%s", PQgetvalue(res, 0, 1));
        rc = 0;
    }
    PQclear(res);
    return rc;
}

/* The source's table privileges (source_kind.rights): one failure per table. */
static int check_rights(PGconn *conn, const relay_config *cfg, const char *role, json_t *check)
{
    const char *rights = source_for(cfg)->rights;
    char *list = strdup(rights ? rights : ""), *save = NULL;
    int ok = 1;
    for (char *e = strtok_r(list, " ", &save); e; e = strtok_r(NULL, " ", &save)) {
        char table[2 * SQL_NAME_MAX + 2], missing[256] = "", err[1024];
        if (lacking(conn, cfg, e, table, sizeof table, missing, sizeof missing, err, sizeof err)) {
            failed(cfg, check, "database", "%s", err);
            ok = 0;
        } else if (missing[0]) {
            failed(cfg, check, "database",
                   "role \"%s\" lacks %s on %s (the %s source needs %s there): GRANT %s ON %s TO "
                   "\"%s\"",
                   role, missing, table, source_for(cfg)->name, strchr(e, ':') + 1, missing,
                   table, role);
            ok = 0;
        }
    }
    free(list);
    return ok;
}

int connect_tables_check(PGconn *conn, const relay_config *cfg, char *err, size_t err_size)
{
    const char *rights = source_for(cfg)->rights;
    char *list = strdup(rights ? rights : ""), *save = NULL;
    int rc = 0;
    for (char *e = strtok_r(list, " ", &save); e && rc == 0; e = strtok_r(NULL, " ", &save)) {
        char table[2 * SQL_NAME_MAX + 2], missing[256];
        rc = lacking(conn, cfg, e, table, sizeof table, missing, sizeof missing, err, err_size);
    }
    free(list);
    return rc;
}

/* The database: reached with the config's role, the schema's version, the
 * privileges, what `run` checks before it starts. */
static int check_database(const relay_config *cfg, json_t *check)
{
    char err[1024], type[64] = "";
    json_object_set_new(check, "ok", json_true());
    PGconn *conn = db_connect(cfg, "outbox-relay check-config", err, sizeof err);
    if (!conn) {
        failed(cfg, check, "database", "%s", err);
        return 0;
    }
    PGresult *res = PQexec(conn, "SELECT current_user");
    char role[SQL_NAME_MAX + 1] = "?";
    if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
        snprintf(role, sizeof role, "%s", PQgetvalue(res, 0, 0));
    PQclear(res);
    json_object_set_new(check, "role", json_string(role));
    int ok = 1;
    if (schema_check(conn, cfg, err, sizeof err) < 0) {
        failed(cfg, check, "database", "%s", err);
        ok = 0;
    } else {
        json_object_set_new(check, "schema_version", json_integer(SCHEMA_VERSION));
        /* the source's objects and what it needs of the server first: a
         * missing object is init-db's to make, not a privilege to grant */
        const source_kind *src = source_for(cfg);
        if (schema_payload_type(conn, cfg, type, sizeof type, err, sizeof err) < 0 ||
            (src->preflight && src->preflight(conn, cfg, type, err, sizeof err) < 0)) {
            failed(cfg, check, "database", "%s", err);
            ok = 0;
        } else {
            ok = check_rights(conn, cfg, role, check);
        }
    }
    PQfinish(conn);
    if (ok)
        passed(cfg, "database: ok (role %s, schema version %d, %s source)\n", role,
               SCHEMA_VERSION, source_for(cfg)->name);
    return ok;
}

/* The host a probed instance gets: what its driver logs is kept, not
 * printed, and the last warning or error becomes the failure's reason. */
typedef struct probe_host {
    host_ctx h; /* first: the driver's host_ctx points here */
    pthread_mutex_t mu;
    char warning[512], any[512];
} probe_host;

static void keep_log(void *arg, obx_log_level level, const char *fmt, ...)
{
    probe_host *ph = arg;
    if (!fmt)
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&ph->mu);
    snprintf(level <= OBX_LOG_WARN ? ph->warning : ph->any, sizeof ph->warning, "%s", line);
    pthread_mutex_unlock(&ph->mu);
}

static void no_completion(void *arg, uint64_t token, obx_status status, int code,
                          const char *detail)
{
    (void)arg, (void)token, (void)status, (void)code, (void)detail;
}

/* One output: its instance created and probed. */
static int check_output(const relay_config *cfg, const cfg_output *out, json_t *check)
{
    char err[1024];
    json_object_set_new(check, "name", json_string(out->name));
    json_object_set_new(check, "driver", json_string(out->driver));
    json_object_set_new(check, "ok", json_true());
    char what[256];
    snprintf(what, sizeof what, "output %s (%s)", out->name, out->driver);
    loaded_driver *drv = host_load_output(cfg, out, err, sizeof err);
    if (!drv) {
        failed(cfg, check, what, "%s", err);
        return 0;
    }
    probe_host *ph = calloc(1, sizeof *ph);
    pthread_mutex_init(&ph->mu, NULL);
    host_init(&ph->h, drv, out, no_completion, NULL);
    ph->h.host.log = keep_log;
    int ok = 1;
    obx_instance *inst = drv->def.create(&ph->h.host, err, sizeof err);
    if (!inst) {
        failed(cfg, check, what, "its driver refused its configuration: %s",
               err[0] ? err : "no reason given");
        ok = 0;
    } else if (!drv->def.probe) {
        json_object_set_new(check, "probed", json_false());
        passed(cfg, "%s: not checked (the driver has no probe)\n", what);
    } else {
        json_object_set_new(check, "probed", json_true());
        obx_status st = drv->def.probe(inst, CONNECT_PROBE_TIMEOUT_MS);
        if (st != OBX_OK) {
            pthread_mutex_lock(&ph->mu);
            const char *why = ph->warning[0] ? ph->warning : ph->any;
            failed(cfg, check, what, "its broker cannot be reached or refused the login: %s",
                   why[0] ? why : "no answer in time");
            pthread_mutex_unlock(&ph->mu);
            ok = 0;
        } else {
            passed(cfg, "%s: ok (its broker answered)\n", what);
        }
    }
    if (inst)
        drv->def.destroy(inst);
    loader_close(drv);
    pthread_mutex_destroy(&ph->mu);
    free(ph);
    return ok;
}

int command_check_connect(relay_config *const *cfgs, size_t count, int json)
{
    json_t *report = json_object(), *sources = json_array();
    int ok = 1;
    quiet = json;
    for (size_t i = 0; i < count; i++) {
        const relay_config *cfg = cfgs[i];
        json_t *one = json_object(), *db = json_object(), *outs = json_array();
        json_object_set_new(one, "source",
                            cfg->source_name ? json_string(cfg->source_name) : json_null());
        json_object_set_new(one, "kind", json_string(source_for(cfg)->name));
        if (cfg->source_name && !quiet)
            printf("source %s:\n", cfg->source_name);
        ok &= check_database(cfg, db);
        for (size_t k = 0; k < cfg->output_count; k++) {
            json_t *o = json_object();
            ok &= check_output(cfg, &cfg->outputs[k], o);
            json_array_append_new(outs, o);
        }
        json_object_set_new(one, "database", db);
        json_object_set_new(one, "outputs", outs);
        json_array_append_new(sources, one);
    }
    json_object_set_new(report, "config", json_string(cfgs[0]->path));
    json_object_set_new(report, "ok", json_boolean(ok));
    json_object_set_new(report, "sources", sources);
    fflush(stdout);
    if (json) {
        char *text = json_dumps(report, JSON_COMPACT);
        puts(text);
        free(text);
    }
    json_decref(report);
    return ok ? 0 : 1;
}
