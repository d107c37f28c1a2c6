/*
 * chaos_load: the chaos suite's load generator.
 *
 *   chaos_load -d DSN -o PREFIX [-c CONNS] [-a AGGREGATES] [-p PAUSE_MS]
 *
 * CONNS processes (default 4) each run transactions until SIGTERM: one
 * aggregate per transaction, 1-5 events through outbox_enqueue, the payload's
 * "seq" drawn from chaos_seq while the aggregate's row there is locked (so the
 * committed sequence of an aggregate has no gap), 10% rolled back, 10% held
 * open 20-300 ms before COMMIT (so commits land out of id order). Each process
 * appends one line per event to PREFIX.N once its transaction's fate is known:
 *
 *   C|R <tab> event_id <tab> aggregate <tab> seq <tab> unix ms of the outcome
 *
 * C committed, R rolled back. A COMMIT whose reply was lost is resolved after
 * reconnecting (txid_status, then the row itself); only then is the line
 * written. Needs the
 * table chaos_seq(agg text primary key, seq bigint) filled by the caller.
 */
#include <libpq-fe.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_EVENTS 5

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
    (void)sig;
    stop = 1;
}

static long long unix_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Connects, retrying every 200 ms (PostgreSQL may be restarting). */
static PGconn *connect_retry(const char *dsn, int even_when_stopping)
{
    for (;;) {
        PGconn *c = PQconnectdb(dsn);
        if (PQstatus(c) == CONNECTION_OK)
            return c;
        PQfinish(c);
        if (stop && !even_when_stopping)
            return NULL;
        sleep_ms(200);
    }
}

/* Runs a command with parameters; returns the result if its status is want. */
static PGresult *run(PGconn *c, const char *sql, int n, const char *const *params,
                     ExecStatusType want)
{
    PGresult *r = PQexecParams(c, sql, n, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(r) == want)
        return r;
    PQclear(r);
    return NULL;
}

/* The fate of a transaction whose COMMIT got no clear answer: 1 committed,
 * 0 aborted. txid_status says when it is over (not "in progress"); its row
 * then says how: after a crash the server may hand the same txid to a new
 * transaction (an id whose records never reached the WAL is not remembered),
 * so txid_status alone can answer "committed" for a transaction that was
 * lost. Keeps asking, on fresh connections, until both answered. */
static int resolve(const char *dsn, PGconn **conn, const char *txid, const char *event_id)
{
    for (;;) {
        if (PQstatus(*conn) != CONNECTION_OK) {
            PQfinish(*conn);
            *conn = connect_retry(dsn, 1);
        }
        const char *p[] = {txid, event_id};
        PGresult *r = run(*conn,
                          "SELECT txid_status($1::bigint),"
                          " EXISTS (SELECT 1 FROM outbox WHERE event_id = $2::uuid)",
                          2, p, PGRES_TUPLES_OK);
        if (r) {
            int over = strcmp(PQgetvalue(r, 0, 0), "in progress") != 0;
            int row = !strcmp(PQgetvalue(r, 0, 1), "t");
            PQclear(r);
            if (over)
                return row;
        } else {
            PQreset(*conn);
        }
        sleep_ms(100);
    }
}

struct txn {
    char txid[32], agg[32], ids[MAX_EVENTS][40];
    long long seq[MAX_EVENTS];
    int n, enqueued;
};

static void record(FILE *out, const struct txn *t, int committed)
{
    long long at = unix_ms();
    for (int i = 0; i < t->enqueued; i++)
        fprintf(out, "%c\t%s\t%s\t%lld\t%lld\n", committed ? 'C' : 'R', t->ids[i], t->agg,
                t->seq[i], at);
    fflush(out);
}

/* One transaction; returns 0 when the connection must be re-made. */
static int one_txn(const char *dsn, PGconn **conn, FILE *out, int aggregates)
{
    PGconn *c = *conn;
    struct txn t = {.n = 1 + rand() % MAX_EVENTS};
    int rollback = rand() % 10 == 0, hold_ms = rand() % 10 == 0 ? 20 + rand() % 280 : 0;
    PGresult *r;

    snprintf(t.agg, sizeof t.agg, "a%d", rand() % aggregates);
    if (!(r = run(c, "BEGIN", 0, NULL, PGRES_COMMAND_OK)))
        return 0;
    PQclear(r);
    if (!(r = run(c, "SELECT txid_current()", 0, NULL, PGRES_TUPLES_OK)))
        return 0;
    snprintf(t.txid, sizeof t.txid, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    char count[8];
    snprintf(count, sizeof count, "%d", t.n);
    const char *lock[] = {count, t.agg};
    /* the row lock on the aggregate is held to the end: seqs follow commit order */
    if (!(r = run(c, "UPDATE chaos_seq SET seq = seq + $1::int WHERE agg = $2 RETURNING seq", 2,
                  lock, PGRES_TUPLES_OK)) ||
        PQntuples(r) != 1) {
        PQclear(r);
        return 0;
    }
    long long top = atoll(PQgetvalue(r, 0, 0));
    PQclear(r);
    for (int i = 0; i < t.n; i++) {
        char payload[160];
        t.seq[i] = top - t.n + 1 + i;
        snprintf(payload, sizeof payload, "{\"agg\": \"%s\", \"seq\": %lld, \"txid\": %s}", t.agg,
                 t.seq[i], t.txid);
        const char *p[] = {t.agg, payload};
        if (!(r = run(c, "SELECT outbox_enqueue('Chaos', $1, 'chaos.event', $2::jsonb)", 2, p,
                      PGRES_TUPLES_OK)))
            break;
        snprintf(t.ids[i], sizeof t.ids[i], "%s", PQgetvalue(r, 0, 0));
        PQclear(r);
        t.enqueued++;
    }
    if (t.enqueued < t.n) { /* never committed: the server aborts it */
        record(out, &t, 0);
        return PQstatus(c) == CONNECTION_OK && (r = run(c, "ROLLBACK", 0, NULL, PGRES_COMMAND_OK))
                   ? (PQclear(r), 1)
                   : 0;
    }
    if (hold_ms)
        sleep_ms(hold_ms);
    if (rollback) {
        record(out, &t, 0);
        if (!(r = run(c, "ROLLBACK", 0, NULL, PGRES_COMMAND_OK)))
            return 0;
        PQclear(r);
        return 1;
    }
    if ((r = run(c, "COMMIT", 0, NULL, PGRES_COMMAND_OK))) {
        PQclear(r);
        record(out, &t, 1);
        return 1;
    }
    record(out, &t, resolve(dsn, conn, t.txid, t.ids[0]));
    return PQstatus(*conn) == CONNECTION_OK;
}

static int worker(const char *dsn, const char *prefix, int index, int aggregates, int pause_ms)
{
    char path[4096];
    snprintf(path, sizeof path, "%s.%d", prefix, index);
    FILE *out = fopen(path, "a");
    if (!out) {
        perror(path);
        return 2;
    }
    srand((unsigned)(getpid() ^ time(NULL)));
    PGconn *conn = connect_retry(dsn, 0);
    while (!stop && conn) {
        if (!one_txn(dsn, &conn, out, aggregates)) {
            PQfinish(conn);
            conn = connect_retry(dsn, 0);
        }
        if (pause_ms)
            sleep_ms(rand() % (2 * pause_ms + 1));
    }
    PQfinish(conn);
    fclose(out);
    return 0;
}

int main(int argc, char **argv)
{
    const char *dsn = NULL, *prefix = NULL;
    int conns = 4, aggregates = 200, pause_ms = 10, opt;
    while ((opt = getopt(argc, argv, "d:o:c:a:p:")) != -1) {
        switch (opt) {
        case 'd': dsn = optarg; break;
        case 'o': prefix = optarg; break;
        case 'c': conns = atoi(optarg); break;
        case 'a': aggregates = atoi(optarg); break;
        case 'p': pause_ms = atoi(optarg); break;
        default:
            fprintf(stderr, "usage: chaos_load -d DSN -o PREFIX [-c N] [-a N] [-p MS]\n");
            return 2;
        }
    }
    if (!dsn || !prefix || conns < 1 || aggregates < 1) {
        fprintf(stderr, "chaos_load: -d DSN and -o PREFIX are required\n");
        return 2;
    }
    struct sigaction sa = {.sa_handler = on_term};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    pid_t kids[64];
    if (conns > 64)
        conns = 64;
    for (int i = 0; i < conns; i++) {
        kids[i] = fork();
        if (kids[i] == 0)
            _exit(worker(dsn, prefix, i, aggregates, pause_ms));
    }
    int rc = 0;
    while (!stop)
        pause();
    for (int i = 0; i < conns; i++) {
        int st;
        kill(kids[i], SIGTERM);
        if (waitpid(kids[i], &st, 0) > 0 && (!WIFEXITED(st) || WEXITSTATUS(st)))
            rc = 1;
    }
    return rc;
}
