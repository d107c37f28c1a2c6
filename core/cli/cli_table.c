#include "cli/cli_table.h"

#include <string.h>

#define DESC_COL 31 /* where a summary starts in --help */

const cli_command *cli_find(const cli_command *table, const char *name)
{
    for (const cli_command *c = table; c->name; c++)
        if (!strcmp(c->name, name))
            return c;
    return NULL;
}

/* Writes text's lines, each indented to col. */
static void indented(FILE *f, const char *text, int col)
{
    while (*text) {
        const char *end = strchr(text, '\n');
        int n = end ? (int)(end - text) : (int)strlen(text);
        fprintf(f, "%*s%.*s\n", col, "", n, text);
        text += n + (end != NULL);
    }
}

/* "  name synopsis" and the summary from DESC_COL: on the same line when the
 * synopsis' first line leaves room, else below it. */
static void entry(FILE *f, const cli_command *c)
{
    const char *syn = c->synopsis, *nl = strchr(syn, '\n');
    int first = nl ? (int)(nl - syn) : (int)strlen(syn);
    int used = 2 + (int)strlen(c->name) + (first ? 1 + first : 0);
    fprintf(f, "  %s%s%.*s", c->name, first ? " " : "", first, syn);
    const char *sum = c->summary;
    if (!nl && used + 2 <= DESC_COL) {
        const char *end = strchr(sum, '\n');
        int n = end ? (int)(end - sum) : (int)strlen(sum);
        fprintf(f, "%*s%.*s\n", DESC_COL - used, "", n, sum);
        sum = end ? end + 1 : sum + n;
    } else {
        fputc('\n', f);
        if (nl) /* the synopsis' other lines, under its first */
            indented(f, nl + 1, 3 + (int)strlen(c->name));
    }
    indented(f, sum, DESC_COL);
}

void cli_print_usage(FILE *f, const cli_command *table, int all)
{
    fputs("usage: outbox-relay COMMAND [options]\n\n"
          "Publishes transactional-outbox rows from PostgreSQL to brokers, at least once.\n\n"
          "Commands:\n",
          f);
    for (const cli_command *c = table; c->name; c++)
        entry(f, c);
    fputs("\nOptions:\n"
          "  --outbox NAME                with a config that lists sources: only that one\n"
          "                               (run, status, init-db, check-config, pause and\n"
          "                               resume take every source without it; requeue,\n"
          "                               purge and replay need it)\n"
          "  -h, --help                   this text (after a command: that command's)\n"
          "  -V, --version                version, commit and driver ABI\n"
          "\n"
          "Exit codes: 0 success; 1 runtime failure (database unreachable, a failed check);\n"
          "2 usage or configuration error; 130 a second signal forced the exit.\n",
          f);
    for (const cli_command *c = table; all && c->name; c++)
        if (c->options)
            fprintf(f, "\nOptions of %s:\n%s", c->name, c->options);
}

void cli_print_command(FILE *f, const cli_command *c)
{
    const char *syn = c->synopsis, *nl = strchr(syn, '\n');
    int first = nl ? (int)(nl - syn) : (int)strlen(syn);
    fprintf(f, "usage: outbox-relay %s %.*s\n", c->name, first, syn);
    if (nl)
        indented(f, nl + 1, 21 + (int)strlen(c->name));
    fputc('\n', f);
    indented(f, c->summary, 0);
    if (c->options) {
        fputs("\nOptions:\n", f);
        fputs(c->options, f);
    }
    fputs("  -h, --help                   this text\n", f);
}

int cli_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
            return 1;
    return 0;
}
