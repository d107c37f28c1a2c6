/* Running a spec's permutations against a fresh database. */
#ifndef OBX_SPEC_RUN_H
#define OBX_SPEC_RUN_H

#include <stdio.h>

#include <libpq-fe.h>

#include "config/config.h"
#include "poll/batch.h"
#include "spec.h"

/* One session: its own connection, with the relay's statements prepared. */
typedef struct spec_conn {
    PGconn *conn;
    int pid;
    int waiting;      /* the step it waits in, or -1 */
    long waiting_seq; /* when it began waiting (completions are checked in that order) */
    batch b;          /* what its last claim took */
    int claimed;      /* b holds a claim */
} spec_conn;

typedef struct spec_ctx {
    const spec *s;
    const char *db; /* the spec's database */
    const relay_config *cfg;
    char payload_type[64];
    PGconn *control; /* asks whether a session waits for another */
    spec_conn *conns;
    char pids[512]; /* "{pid,pid,...}" of every session */
    FILE *out;
    int errors; /* the runner's own failures (not a difference of output) */
} spec_ctx;

/* Runs permutation p; its output goes to ctx->out. Returns 0, or -1 when
 * the runner could not set it up. */
int spec_run_permutation(spec_ctx *ctx, int p);

/* The relay statements (spec_relay.c): sends step st's statement on c,
 * and prints its result once complete. */
int spec_relay_send(spec_ctx *ctx, spec_conn *c, const spec_step *st);
void spec_relay_print(spec_ctx *ctx, spec_conn *c, const spec_step *st, PGresult *res);

/* Prints a result as the spec's output shows it (rows, or the error). */
void spec_print_result(FILE *out, const PGresult *res);

#endif
