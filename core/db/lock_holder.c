#include "db/lock_holder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db.h"

const char *const lock_kind_names[LOCK_KINDS] = {"cursor", "partitions", "dead_forward"};

/* SQL text reads best as written. */
/* clang-format off */
/* pg_locks spells an advisory key as classid, objid (unsigned) and
 * objsubid: two int4 keys as themselves and 2, one bigint as its high and
 * low halves and 1. A lock of a prepared transaction has no pid (-1). */
static const char two_keys_sql[] =
    "SELECT v.k1::bigint & 4294967295, v.k2::bigint & 4294967295, 2 FROM (VALUES (%s)) v(k1, k2)";
static const char one_key_sql[] =
    "SELECT (v.k >> 32) & 4294967295, v.k & 4294967295, 1 FROM (VALUES ((%s)::bigint)) v(k)";
static const char find_tmpl[] =
    "SELECT coalesce(l.pid, -1), coalesce(a.usename::text, ''), coalesce(a.datname::text, ''),"
    " coalesce(a.application_name, ''), a.usename IS NOT DISTINCT FROM session_user"
    " FROM (%s) k(c, o, s) JOIN pg_catalog.pg_locks l ON l.locktype = 'advisory' AND l.granted"
    "  AND l.classid::bigint = k.c AND l.objid::bigint = k.o AND l.objsubid = k.s"
    "  AND l.database = (SELECT d.oid FROM pg_catalog.pg_database d"
    "   WHERE d.datname = pg_catalog.current_database())"
    " LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid"
    " WHERE l.pid IS DISTINCT FROM pg_catalog.pg_backend_pid()"
    /* a holder that is not a relay first */
    " ORDER BY a.usename IS NOT DISTINCT FROM session_user, l.pid LIMIT 1";
/* clang-format on */

int lock_holder_find(PGconn *conn, const char *key, int two_keys, int nparams,
                     const char *const *params, lock_holder *h, char *err, size_t err_size)
{
    memset(h, 0, sizeof *h);
    size_t cap = strlen(key) + sizeof two_keys_sql;
    char *keys = malloc(cap);
    snprintf(keys, cap, two_keys ? two_keys_sql : one_key_sql, key);
    cap = strlen(keys) + sizeof find_tmpl;
    char *sql = malloc(cap);
    snprintf(sql, cap, find_tmpl, keys);
    free(keys);
    PGresult *res = PQexecParams(conn, sql, nparams, NULL, params, NULL, NULL, 0);
    free(sql);
    int ok = PQresultStatus(res) == PGRES_TUPLES_OK;
    if (!ok) {
        db_error(conn, res, err, err_size);
    } else if (PQntuples(res) == 1) {
        h->pid = atoi(PQgetvalue(res, 0, 0));
        snprintf(h->role, sizeof h->role, "%s", PQgetvalue(res, 0, 1));
        snprintf(h->database, sizeof h->database, "%s", PQgetvalue(res, 0, 2));
        snprintf(h->application, sizeof h->application, "%s", PQgetvalue(res, 0, 3));
        h->relay = PQgetvalue(res, 0, 4)[0] == 't';
    }
    PQclear(res);
    return ok ? 0 : -1;
}

void lock_holder_text(const lock_holder *h, char *out, size_t size)
{
    if (h->pid < 0)
        snprintf(out, size, "a prepared transaction (database %s)", h->database);
    else
        snprintf(out, size, "pid %d (role %s, database %s, application \"%s\")", h->pid,
                 h->role[0] ? h->role : "unknown", h->database, h->application);
}

static void take(lock_squats *s)
{
    int free_ = 0;
    while (!atomic_compare_exchange_weak(&s->busy, &free_, 1))
        free_ = 0;
}

static void give(lock_squats *s)
{
    atomic_store(&s->busy, 0);
}

int lock_squat_note(lock_squats *s, lock_kind kind, const lock_holder *h)
{
    if (!s)
        return 0;
    int squat = h && h->pid && !h->relay, rc = 0;
    take(s);
    if (squat && s->pid[kind] != h->pid) {
        lock_holder_text(h, s->who[kind], sizeof s->who[kind]);
        s->pid[kind] = h->pid;
        rc = 1;
    } else if (!squat && s->pid[kind]) {
        s->pid[kind] = 0;
        rc = -1;
    }
    give(s);
    return rc;
}

int lock_squat_read(lock_squats *s, lock_kind kind, char *who, size_t size)
{
    take(s);
    int squat = s->pid[kind] != 0;
    if (squat)
        snprintf(who, size, "%s", s->who[kind]);
    give(s);
    return squat;
}
