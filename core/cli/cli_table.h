/* The commands as one table, like the settings table: each row's name,
 * synopsis, summary and option lines make `--help`, `COMMAND --help` and
 * the man page (conf/man/man-from-help.sh reads `--help --all`); its handler
 * runs it. */
#ifndef OBX_CLI_TABLE_H
#define OBX_CLI_TABLE_H

#include <stdio.h>

typedef struct cli_command {
    const char *name;
    const char *synopsis; /* after the name: its arguments */
    const char *summary;  /* what it does, lines of at most 50 characters */
    const char *options;  /* its option lines ("  --x   what"), or NULL */
    int (*main)(int argc, char **argv); /* argv[0] is the name; returns the exit code */
} cli_command;

/* The command of table (rows ended by one whose name is NULL) named name, or NULL. */
const cli_command *cli_find(const cli_command *table, const char *name);
/* `outbox-relay --help`: every command's synopsis and summary; with all, each
 * command's options after them (the man page). */
void cli_print_usage(FILE *f, const cli_command *table, int all);
/* `outbox-relay COMMAND --help`. */
void cli_print_command(FILE *f, const cli_command *c);
/* Is one of the arguments after the command -h or --help (before a "--")? */
int cli_wants_help(int argc, char **argv);

#endif
