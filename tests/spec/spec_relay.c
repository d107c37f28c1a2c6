/* Steps that run the relay's own prepared statements (core/poll/queries.c)
 * with the parameters the engine passes: "claim", "mark" and "record" of
 * the rows the session's last claim took, "renew", "pending". */
#include <stdlib.h>
#include <string.h>

#include "db/pgarray.h"
#include "event/outcome.h"
#include "poll/queries.h"
#include "spec_run.h"

/* The value of word "key=value" among the step's, or NULL. */
static const char *arg(const spec_step *st, const char *key)
{
    size_t n = strlen(key);
    for (int a = 0; a < st->nargs; a++)
        if (strncmp(st->args[a], key, n) == 0 && st->args[a][n] == '=')
            return st->args[a] + n + 1;
    return NULL;
}

static int has_word(const spec_step *st, const char *word)
{
    for (int a = 0; a < st->nargs; a++)
        if (strcmp(st->args[a], word) == 0)
            return 1;
    return 0;
}

/* claim [batch=N] [run=N] [heads=N] [after=ID | after=TYPE/ID]: the batch
 * defaults to the config's; run and heads to the batch (a driver that
 * keeps order); after to none (from the first row). */
static int send_claim(spec_ctx *ctx, spec_conn *c, const spec_step *st)
{
    static char batch[16], payload[16], heads[16], after_buf[128];
    const relay_config *cfg = ctx->cfg;
    snprintf(batch, sizeof batch, "%s", arg(st, "batch") ? arg(st, "batch") : "");
    if (!batch[0])
        snprintf(batch, sizeof batch, "%d", cfg->batch_size);
    snprintf(payload, sizeof payload, "%d", cfg->max_payload_bytes);
    snprintf(heads, sizeof heads, "%s", arg(st, "heads") ? arg(st, "heads") : batch);
    const char *params[CLAIM_PARAMS] = {batch, payload};
    const char *after = arg(st, "after");
    int n = CLAIM_PARAMS_UNORDERED;
    if (cfg->ordering == ORDERING_AGGREGATE) {
        n = CLAIM_PARAMS;
        if (after) { /* TYPE/ID */
            snprintf(after_buf, sizeof after_buf, "%s", after);
            char *slash = strchr(after_buf, '/');
            if (slash)
                *slash++ = '\0';
            params[CLAIM_AFTER_TYPE] = after_buf;
            params[CLAIM_AFTER_ID] = slash ? slash : "";
        }
        params[CLAIM_RUN] = arg(st, "run") ? arg(st, "run") : batch;
        params[CLAIM_HEADS] = heads;
    } else {
        params[CLAIM_AFTER_ROW] = after;
    }
    if (c->claimed)
        batch_free(&c->b);
    batch_init(&c->b, atoi(batch));
    c->claimed = 1;
    return PQsendQueryPrepared(c->conn, "claim", n, params, NULL, NULL, 0);
}

/* mark: every row of the last claim, where the claim read it (ctid), with
 * retention's delete; as record.c calls it. */
static int send_mark(spec_ctx *ctx, spec_conn *c)
{
    pgarray ids;
    pgarray_init(&ids);
    for (int i = 0; c->claimed && i < c->b.count; i++) {
        const batch_row *r = &c->b.rows[i];
        pgarray_add(&ids, r->tid_text ? r->tid_text : r->id_text, r->tid_text != NULL);
    }
    const char *params[] = {pgarray_text(&ids), ctx->cfg->retention == RETAIN_DELETE ? "t" : "f"};
    int sent = PQsendQueryPrepared(c->conn, "mark", 2, params, NULL, NULL, 0);
    pgarray_free(&ids);
    return sent;
}

static int outcome_of(const char *word)
{
    static const char *const names[OUTCOME_COUNT] = {[OUTCOME_PUBLISHED] = "published",
                                                     [OUTCOME_RETRY] = "retry",
                                                     [OUTCOME_DEAD] = "dead",
                                                     [OUTCOME_RELEASE] = "release",
                                                     [OUTCOME_DEFER] = "defer"};
    for (int o = 0; o < OUTCOME_COUNT; o++)
        if (strcmp(word, names[o]) == 0)
            return o;
    return -1;
}

/* record OUTCOME [delay=MS] [relock]: every row of the last claim with one
 * outcome; relock as after the claim's transaction ended. */
static int send_record(spec_ctx *ctx, spec_conn *c, const spec_step *st)
{
    int outcome = st->nargs ? outcome_of(st->args[0]) : -1;
    if (outcome < 0) {
        fprintf(ctx->out, "\nrecord wants an outcome: published, retry, dead, release, defer");
        return 0;
    }
    const char *delay = arg(st, "delay") ? arg(st, "delay") : "0";
    char code[16];
    snprintf(code, sizeof code, "%d", outcome);
    pgarray ids, outcomes, delays, errors;
    pgarray_init(&ids);
    pgarray_init(&outcomes);
    pgarray_init(&delays);
    pgarray_init(&errors);
    for (int i = 0; c->claimed && i < c->b.count; i++) {
        pgarray_add(&ids, c->b.rows[i].id_text, 0);
        pgarray_add(&outcomes, code, 0);
        pgarray_add(&delays, delay, 0);
        pgarray_add(&errors, outcome == OUTCOME_PUBLISHED ? "" : "spec", 1);
    }
    const char *params[] = {pgarray_text(&ids),
                            pgarray_text(&outcomes),
                            pgarray_text(&delays),
                            pgarray_text(&errors),
                            ctx->cfg->retention == RETAIN_DELETE ? "t" : "f",
                            has_word(st, "relock") ? "t" : "f"};
    int sent = PQsendQueryPrepared(c->conn, "record", 6, params, NULL, NULL, 0);
    pgarray_free(&ids);
    pgarray_free(&outcomes);
    pgarray_free(&delays);
    pgarray_free(&errors);
    return sent;
}

int spec_relay_send(spec_ctx *ctx, spec_conn *c, const spec_step *st)
{
    if (strcmp(st->stmt, "claim") == 0)
        return send_claim(ctx, c, st);
    if (strcmp(st->stmt, "mark") == 0)
        return send_mark(ctx, c);
    if (strcmp(st->stmt, "record") == 0)
        return send_record(ctx, c, st);
    if (strcmp(st->stmt, "renew") == 0 || strcmp(st->stmt, "pending") == 0)
        return PQsendQueryPrepared(c->conn, st->stmt, 0, NULL, NULL, NULL, 0);
    fprintf(ctx->out, "\nunknown relay statement %s", st->stmt);
    return 0;
}

/* The batch as the engine holds it (batch.c: by id, runs cut), one row per
 * event: id, aggregate, event type. */
static void print_batch(spec_ctx *ctx, const spec_conn *c)
{
    fprintf(ctx->out, "id|aggregate_id|event_type\n");
    for (int i = 0; i < c->b.count; i++) {
        const batch_row *r = &c->b.rows[i];
        fprintf(ctx->out, "%s|%s|%s\n", r->id_text, r->aggregate_id,
                PQgetvalue(c->b.res, r->res_row, ROW_EVENT_TYPE));
    }
}

void spec_relay_print(spec_ctx *ctx, spec_conn *c, const spec_step *st, PGresult *res)
{
    int ok = PQresultStatus(res) == PGRES_TUPLES_OK;
    if (ok && strcmp(st->stmt, "claim") == 0) {
        batch_take(&c->b, res); /* owns res from now on */
        print_batch(ctx, c);
        return;
    }
    spec_print_result(ctx->out, res);
    /* record.c's check of a mark's ids: each must be of the batch */
    if (ok && strcmp(st->stmt, "mark") == 0 && queries_mark_returns_ids(ctx->cfg))
        for (int r = 0; r < PQntuples(res); r++)
            if (!c->claimed || !batch_has(&c->b, atoll(PQgetvalue(res, r, 0))))
                fprintf(ctx->out, "marked %s: not of the batch (record.c rolls back)\n",
                        PQgetvalue(res, r, 0));
    PQclear(res);
}
