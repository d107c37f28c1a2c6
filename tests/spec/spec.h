/* A spec: the database's setup, sessions with named steps, and the
 * permutations (orders of steps) to run; README.md has the format. */
#ifndef OBX_SPEC_H
#define OBX_SPEC_H

#define SPEC_MAX_ARGS 8

typedef struct spec_step {
    char *name;
    int session;               /* index into spec.sessions */
    char *sql;                 /* raw SQL, or NULL for a relay statement */
    char *stmt;                /* the relay statement: claim, mark, record, renew, pending */
    char *args[SPEC_MAX_ARGS]; /* its words, e.g. "batch=10", "retry" */
    int nargs;
} spec_step;

typedef struct spec_session {
    char *name;
    char *setup; /* NULL: none */
    char *teardown;
} spec_session;

typedef struct spec_permutation {
    int *steps; /* indexes into spec.steps */
    int nsteps;
} spec_permutation;

typedef struct spec {
    char *config; /* relay settings (libconfig), NULL: the defaults */
    char **setup; /* run in order, each in its own transaction */
    int nsetup;
    char *teardown;
    spec_session *sessions;
    int nsessions;
    spec_step *steps;
    int nsteps;
    spec_permutation *perms;
    int nperms;
} spec;

/* Parses the file at path. Returns NULL and prints "path:line: why". */
spec *spec_parse(const char *path);
void spec_free(spec *s);

#endif
