/*
 * spec-runner SPEC EXPECTED OUTDIR: runs every permutation of SPEC on a
 * fresh database spec_<name> (PGHOST, PGPORT, PGUSER from the environment),
 * writes what it printed to OUTDIR/<name>.out and to stdout, and compares it
 * with EXPECTED: a difference is shown as a unified diff and fails (exit 1).
 */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spec.h"
#include "spec_run.h"

/* The spec's name: its file name without ".spec". */
static void spec_name(const char *path, char *out, size_t cap)
{
    char *copy = strdup(path);
    snprintf(out, cap, "%s", basename(copy));
    free(copy);
    char *dot = strrchr(out, '.');
    if (dot)
        *dot = '\0';
}

/* The relay config the statements are rendered for: the spec's settings
 * in a file config_load reads, as the relay would. */
static relay_config *load_config(const spec *s, const char *db, const char *outdir)
{
    char path[4096], err[1024];
    snprintf(path, sizeof path, "%s/%s.cfg", outdir, db);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return NULL;
    }
    fprintf(f,
            "database = { conninfo = \"dbname=%s\"; };\n"
            "relay = { %s };\n"
            "outputs = ( { name = \"mem\"; driver = \"memory\"; } );\n",
            db, s->config ? s->config : "");
    fclose(f);
    relay_config *cfg = config_load(path, err, sizeof err);
    if (!cfg)
        fprintf(stderr, "config: %s\n", err);
    return cfg;
}

static void drop_database(const char *db)
{
    PGconn *pg = PQconnectdb("dbname=postgres");
    char sql[512]; /* db is at most 299 bytes */
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s WITH (FORCE)", db);
    PQclear(PQexec(pg, sql));
    PQfinish(pg);
}

static int run_all(spec_ctx *ctx, const char *out_path)
{
    char *text = NULL;
    size_t len = 0;
    ctx->out = open_memstream(&text, &len);
    int rc = 0;
    for (int p = 0; rc == 0 && p < ctx->s->nperms; p++)
        rc = spec_run_permutation(ctx, p);
    fclose(ctx->out);
    fwrite(text, 1, len, stdout);
    FILE *f = fopen(out_path, "w");
    if (f) {
        fwrite(text, 1, len, f);
        fclose(f);
    }
    free(text);
    return f ? rc : -1;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s SPEC EXPECTED OUTDIR\n", argv[0]);
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    char name[256], db[300], out_path[4096];
    spec_name(argv[1], name, sizeof name);
    /* TEST_DB_PREFIX: as tests/lib.sh's fresh_db, runs sharing a server keep to their names */
    const char *prefix = getenv("TEST_DB_PREFIX");
    snprintf(db, sizeof db, "%sspec_%s", prefix ? prefix : "", name);
    snprintf(out_path, sizeof out_path, "%s/%s.out", argv[3], name);
    spec *s = spec_parse(argv[1]);
    relay_config *cfg = s ? load_config(s, db, argv[3]) : NULL;
    if (!cfg) {
        spec_free(s);
        return 2;
    }
    spec_ctx ctx = {.s = s, .db = db, .cfg = cfg};
    ctx.conns = calloc((size_t)s->nsessions, sizeof *ctx.conns);
    int rc = run_all(&ctx, out_path);
    drop_database(db);
    free(ctx.conns);
    config_free(cfg);
    spec_free(s);
    if (rc < 0 || ctx.errors) {
        fprintf(stderr, "FAIL %s: the runner could not run it (see above)\n", name);
        return 2;
    }
    char cmd[9000];
    snprintf(cmd, sizeof cmd, "diff -u '%s' '%s'", argv[2], out_path);
    if (system(cmd) != 0) {
        fprintf(stderr, "FAIL %s: output differs from %s\n", name, argv[2]);
        return 1;
    }
    printf("ok %s\n", name);
    return 0;
}
