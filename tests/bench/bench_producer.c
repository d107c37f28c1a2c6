/*
 * bench_producer: a steady producer for the latency run. Inserts RATE events
 * per second for SECONDS through the schema's outbox_enqueue, paced on a 1 ms
 * tick: each tick commits the events then due in one small transaction (1 at
 * 1,000/s, about 5 at 5,000/s). For every event it writes
 * "event_id<TAB>commit_us" to OUT, where commit_us is the wall clock (µs since
 * the epoch, CLOCK_REALTIME) when COMMIT returned: the row's commit time as
 * the application sees it.
 *
 *   bench_producer -d DSN -r RATE -s SECONDS -o OUT
 *
 * Prints "events seconds achieved_rate"; exits 1 when it fell more than 5 %
 * behind the rate (the figure would not be the requested load).
 */
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static long long wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

int main(int argc, char **argv)
{
    const char *dsn = NULL, *out = NULL;
    double rate = 1000, seconds = 30;
    int opt;
    while ((opt = getopt(argc, argv, "d:r:s:o:")) != -1) {
        switch (opt) {
        case 'd': dsn = optarg; break;
        case 'r': rate = atof(optarg); break;
        case 's': seconds = atof(optarg); break;
        case 'o': out = optarg; break;
        default: return 2;
        }
    }
    if (!dsn || !out || rate <= 0 || seconds <= 0) {
        fprintf(stderr, "usage: bench_producer -d DSN -r RATE -s SECONDS -o OUT\n");
        return 2;
    }
    PGconn *c = PQconnectdb(dsn);
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "bench_producer: %s", PQerrorMessage(c));
        return 1;
    }
    PGresult *r =
        PQprepare(c, "enq",
                  "SELECT outbox_enqueue('Order', 'agg-' || ((g + $1) % 1000), 'order.created',"
                  " jsonb_build_object('n', g + $1, 'pad', repeat('x', 150)))"
                  " FROM generate_series(1, $2::int) g",
                  0, NULL);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        fprintf(stderr, "bench_producer: prepare: %s", PQerrorMessage(c));
        return 1;
    }
    PQclear(r);
    FILE *f = fopen(out, "w");
    if (!f) {
        perror(out);
        return 1;
    }
    long long sent = 0, total = (long long)(rate * seconds);
    double t0 = mono_s();
    while (sent < total) {
        double el = mono_s() - t0;
        long long due = (long long)(rate * el) - sent;
        if (due > total - sent)
            due = total - sent;
        if (due <= 0) {
            /* sleep to the next event's time, at most 1 ms */
            double next = (sent + 1) / rate - el;
            usleep((useconds_t)(next > 0.001 ? 1000 : next > 0 ? next * 1e6 : 0));
            continue;
        }
        if (due > 100)
            due = 100; /* behind: catch up in small transactions, not one big one */
        char base[24], n[24];
        snprintf(base, sizeof base, "%lld", sent);
        snprintf(n, sizeof n, "%lld", due);
        const char *p[] = {base, n};
        r = PQexecPrepared(c, "enq", 2, p, NULL, NULL, 0); /* autocommit: one transaction */
        long long committed = wall_us();
        if (PQresultStatus(r) != PGRES_TUPLES_OK) {
            fprintf(stderr, "bench_producer: enqueue: %s", PQerrorMessage(c));
            return 1;
        }
        for (int i = 0; i < PQntuples(r); i++)
            fprintf(f, "%s\t%lld\n", PQgetvalue(r, i, 0), committed);
        sent += PQntuples(r);
        PQclear(r);
    }
    double secs = mono_s() - t0;
    fclose(f);
    PQfinish(c);
    printf("%lld %.3f %.0f\n", sent, secs, sent / secs);
    return sent / secs < rate * 0.95 ? 1 : 0;
}
