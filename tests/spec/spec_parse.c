/* The spec file's reader: "quoted names", { blocks } of SQL kept as
 * written, bare words, and # comments to the end of a line. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec.h"

typedef enum { TOK_END, TOK_NAME, TOK_BLOCK, TOK_WORD } tok_kind;

typedef struct reader {
    const char *path;
    const char *p;
    int line;
    tok_kind kind;
    char *text; /* the current token's text (malloc'd) */
    int tok_line;
} reader;

static int fail(reader *r, const char *why)
{
    fprintf(stderr, "%s:%d: %s\n", r->path, r->tok_line, why);
    return -1;
}

static void skip_space(reader *r)
{
    for (;;) {
        if (*r->p == '\n')
            r->line++;
        if (isspace((unsigned char)*r->p))
            r->p++;
        else if (*r->p == '#')
            while (*r->p && *r->p != '\n')
                r->p++;
        else
            return;
    }
}

static char *copy(const char *from, size_t len)
{
    char *s = malloc(len + 1);
    memcpy(s, from, len);
    s[len] = '\0';
    return s;
}

/* A block ends at the brace that balances its first; braces inside SQL
 * strings ('{}'), quoted identifiers and -- comments do not count. */
static int read_block(reader *r)
{
    const char *start = ++r->p;
    int depth = 1;
    char quote = 0;
    for (; *r->p; r->p++) {
        char c = *r->p;
        if (c == '\n')
            r->line++;
        if (quote) {
            if (c == quote)
                quote = 0;
        } else if (c == '\'' || c == '"') {
            quote = c;
        } else if (c == '-' && r->p[1] == '-') {
            while (r->p[1] && r->p[1] != '\n')
                r->p++;
        } else if (c == '{') {
            depth++;
        } else if (c == '}' && --depth == 0) {
            break;
        }
    }
    if (!*r->p)
        return fail(r, "a { block } does not end");
    /* trimmed: the text is printed as the step's */
    const char *end = r->p++;
    while (start < end && isspace((unsigned char)*start))
        start++;
    while (end > start && isspace((unsigned char)end[-1]))
        end--;
    r->text = copy(start, (size_t)(end - start));
    r->kind = TOK_BLOCK;
    return 0;
}

/* Reads the next token into r->kind / r->text. */
static int next(reader *r)
{
    free(r->text);
    r->text = NULL;
    skip_space(r);
    r->tok_line = r->line;
    if (!*r->p) {
        r->kind = TOK_END;
        return 0;
    }
    if (*r->p == '{')
        return read_block(r);
    if (*r->p == '"') {
        const char *start = ++r->p;
        while (*r->p && *r->p != '"' && *r->p != '\n')
            r->p++;
        if (*r->p != '"')
            return fail(r, "a \"name\" does not end on its line");
        r->text = copy(start, (size_t)(r->p++ - start));
        r->kind = TOK_NAME;
        return 0;
    }
    const char *start = r->p;
    while (*r->p && !isspace((unsigned char)*r->p) && !strchr("{}\"#", *r->p))
        r->p++;
    if (r->p == start)
        return fail(r, "unexpected character");
    r->text = copy(start, (size_t)(r->p - start));
    r->kind = TOK_WORD;
    return 0;
}

static int is_word(const reader *r, const char *w)
{
    return r->kind == TOK_WORD && strcmp(r->text, w) == 0;
}

static int is_keyword(const reader *r)
{
    static const char *const words[] = {"config",  "setup",       "teardown",
                                        "session", "permutation", "step"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (is_word(r, words[i]))
            return 1;
    return 0;
}

/* Takes the current token's text (a block) or fails. */
static int take_block(reader *r, char **out, const char *what)
{
    if (next(r) < 0)
        return -1;
    if (r->kind != TOK_BLOCK) {
        char why[128];
        snprintf(why, sizeof why, "%s wants a { block }", what);
        return fail(r, why);
    }
    free(*out);
    *out = r->text;
    r->text = NULL;
    return next(r);
}

static int find_step(const spec *s, const char *name)
{
    for (int i = 0; i < s->nsteps; i++)
        if (strcmp(s->steps[i].name, name) == 0)
            return i;
    return -1;
}

/* step "name" { SQL } | step "name" STATEMENT WORD... */
static int parse_step(reader *r, spec *s)
{
    if (next(r) < 0)
        return -1;
    if (r->kind != TOK_NAME)
        return fail(r, "step wants a \"name\"");
    if (find_step(s, r->text) >= 0)
        return fail(r, "two steps have this name");
    s->steps = realloc(s->steps, (size_t)(s->nsteps + 1) * sizeof *s->steps);
    spec_step *st = &s->steps[s->nsteps++];
    memset(st, 0, sizeof *st);
    st->name = r->text;
    st->session = s->nsessions - 1;
    r->text = NULL;
    if (next(r) < 0)
        return -1;
    if (r->kind == TOK_BLOCK) {
        st->sql = r->text;
        r->text = NULL;
        return next(r);
    }
    if (r->kind != TOK_WORD || is_keyword(r))
        return fail(r, "a step is a { SQL block } or a relay statement");
    st->stmt = r->text;
    r->text = NULL;
    for (;;) {
        if (next(r) < 0)
            return -1;
        if (r->kind != TOK_WORD || is_keyword(r))
            return 0;
        if (st->nargs == SPEC_MAX_ARGS)
            return fail(r, "too many words for a relay statement");
        st->args[st->nargs++] = r->text;
        r->text = NULL;
    }
}

static int parse_session(reader *r, spec *s)
{
    if (next(r) < 0)
        return -1;
    if (r->kind != TOK_NAME)
        return fail(r, "session wants a \"name\"");
    s->sessions = realloc(s->sessions, (size_t)(s->nsessions + 1) * sizeof *s->sessions);
    spec_session *se = &s->sessions[s->nsessions++];
    memset(se, 0, sizeof *se);
    se->name = r->text;
    r->text = NULL;
    if (next(r) < 0)
        return -1;
    for (;;) {
        int rc;
        if (is_word(r, "setup"))
            rc = take_block(r, &se->setup, "setup");
        else if (is_word(r, "teardown"))
            rc = take_block(r, &se->teardown, "teardown");
        else if (is_word(r, "step"))
            rc = parse_step(r, s);
        else
            return 0;
        if (rc < 0)
            return -1;
    }
}

static int parse_permutation(reader *r, spec *s)
{
    s->perms = realloc(s->perms, (size_t)(s->nperms + 1) * sizeof *s->perms);
    spec_permutation *p = &s->perms[s->nperms++];
    memset(p, 0, sizeof *p);
    for (;;) {
        if (next(r) < 0)
            return -1;
        if (r->kind != TOK_NAME)
            return p->nsteps ? 0 : fail(r, "permutation wants step names");
        int i = find_step(s, r->text);
        if (i < 0)
            return fail(r, "permutation names an unknown step");
        p->steps = realloc(p->steps, (size_t)(p->nsteps + 1) * sizeof *p->steps);
        p->steps[p->nsteps++] = i;
    }
}

static int parse_all(reader *r, spec *s)
{
    if (next(r) < 0)
        return -1;
    while (r->kind != TOK_END) {
        int rc;
        if (is_word(r, "config")) {
            rc = take_block(r, &s->config, "config");
        } else if (is_word(r, "setup")) {
            s->setup = realloc(s->setup, (size_t)(s->nsetup + 1) * sizeof *s->setup);
            s->setup[s->nsetup] = NULL;
            rc = take_block(r, &s->setup[s->nsetup++], "setup");
        } else if (is_word(r, "teardown")) {
            rc = take_block(r, &s->teardown, "teardown");
        } else if (is_word(r, "session")) {
            rc = parse_session(r, s);
        } else if (is_word(r, "permutation")) {
            rc = parse_permutation(r, s);
        } else {
            return fail(r, "expected config, setup, teardown, session or permutation");
        }
        if (rc < 0)
            return -1;
    }
    if (!s->nperms)
        return fail(r, "no permutation");
    return 0;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *text = malloc((size_t)n + 1);
    size_t got = fread(text, 1, (size_t)n, f);
    text[got] = '\0';
    fclose(f);
    return text;
}

spec *spec_parse(const char *path)
{
    char *text = slurp(path);
    if (!text) {
        perror(path);
        return NULL;
    }
    spec *s = calloc(1, sizeof *s);
    reader r = {.path = path, .p = text, .line = 1};
    int rc = parse_all(&r, s);
    free(r.text);
    free(text);
    if (rc < 0) {
        spec_free(s);
        return NULL;
    }
    return s;
}

void spec_free(spec *s)
{
    if (!s)
        return;
    free(s->config);
    for (int i = 0; i < s->nsetup; i++)
        free(s->setup[i]);
    free(s->setup);
    free(s->teardown);
    for (int i = 0; i < s->nsessions; i++) {
        free(s->sessions[i].name);
        free(s->sessions[i].setup);
        free(s->sessions[i].teardown);
    }
    free(s->sessions);
    for (int i = 0; i < s->nsteps; i++) {
        free(s->steps[i].name);
        free(s->steps[i].sql);
        free(s->steps[i].stmt);
        for (int a = 0; a < s->steps[i].nargs; a++)
            free(s->steps[i].args[a]);
    }
    free(s->steps);
    for (int i = 0; i < s->nperms; i++)
        free(s->perms[i].steps);
    free(s->perms);
    free(s);
}
