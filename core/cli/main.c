/* outbox-relay: the command line. */
#include <getopt.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "cli/cli_table.h"
#include "cli/commands.h"
#include "cli/connect_cmd.h"
#include "cli/drivers_cmd.h"
#include "cli/purge_cmd.h"
#include "cli/status_cmd.h"
#include "config/config.h"
#include "conformance/conformance.h"
#include "ops/reload.h"
#include "replay/replay_cmd.h"
#include "run/engine.h"
#include "run/sources.h"

/* Options shared by the commands. */
typedef struct cli {
    const char *config;
    const char *drivers_dir;
    int drain, json, all, verbose, reset_slot, print, inbox, connect, print_sql;
    const char *from;            /* init-db --from now|beginning */
    int watch;                   /* status --watch: seconds between reports, 0: once */
    int dead;                    /* status --dead N: dead events listed (-1: not given, -2: bad) */
    const char *dead_arg;        /* its argument */
    const char *output, *reason; /* pause, resume: --output NAME, --reason TEXT */
    const char *outbox;          /* --outbox NAME: one source of the config's sources */
    int source;                  /* pause, resume: --source */
    int first_arg;               /* index of the first positional argument after options */
} cli;

static int parse_options(int argc, char **argv, cli *c)
{
    static const struct option longopts[] = {{"config", required_argument, NULL, 'c'},
                                             {"drain", no_argument, NULL, 'd'},
                                             {"json", no_argument, NULL, 'j'},
                                             {"all", no_argument, NULL, 'a'},
                                             {"drivers-dir", required_argument, NULL, 'D'},
                                             {"verbose", no_argument, NULL, 'v'},
                                             {"watch", optional_argument, NULL, 'w'},
                                             {"reset-slot", no_argument, NULL, 'R'},
                                             {"print", no_argument, NULL, 'P'},
                                             {"inbox", no_argument, NULL, 'I'},
                                             {"output", required_argument, NULL, 'O'},
                                             {"source", no_argument, NULL, 'S'},
                                             {"reason", required_argument, NULL, 'r'},
                                             {"outbox", required_argument, NULL, 'b'},
                                             {"connect", no_argument, NULL, 'C'},
                                             {"dead", required_argument, NULL, 'X'},
                                             {"print-sql", no_argument, NULL, 'Q'},
                                             {"from", required_argument, NULL, 'F'},
                                             {NULL, 0, NULL, 0}};
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "c:v", longopts, NULL)) != -1) {
        switch (opt) {
        case 'c': c->config = optarg; break;
        case 'd': c->drain = 1; break;
        case 'j': c->json = 1; break;
        case 'a': c->all = 1; break;
        case 'D': c->drivers_dir = optarg; break;
        case 'v': c->verbose = 1; break;
        case 'w': c->watch = !optarg ? -1 : atoi(optarg) > 0 ? atoi(optarg) : -2; break;
        case 'R': c->reset_slot = 1; break;
        case 'P': c->print = 1; break;
        case 'I': c->inbox = 1; break;
        case 'O': c->output = optarg; break;
        case 'S': c->source = 1; break;
        case 'r': c->reason = optarg; break;
        case 'b': c->outbox = optarg; break;
        case 'C': c->connect = 1; break;
        case 'Q': c->print_sql = 1; break;
        case 'F': c->from = optarg; break;
        case 'X': {
            char *end;
            long n = strtol(optarg, &end, 10);
            c->dead = *end || end == optarg || n < 0 || n > 100000 ? -2 : (int)n;
            c->dead_arg = optarg;
            break;
        }
        default: return -1;
        }
    }
    c->first_arg = optind;
    return 0;
}

static relay_config *load_config(const cli *c, const char *command)
{
    return command_load_config(c->config, c->outbox, command);
}

/* init-db, check-config, pause and resume: on each source in turn, each
 * under its name when there are several; the worst exit code. */
static int each_source(const cli *c, const char *command, relay_config **cfgs, size_t count)
{
    int rc = 0;
    for (size_t i = 0; i < count; i++) {
        const relay_config *cfg = cfgs[i];
        int quiet = c->json && !strcmp(command, "check-config");
        if (cfg->source_name && count > 1 && !quiet)
            printf(c->print_sql ? "-- source %s\n" : "source %s: ", cfg->source_name);
        int one;
        if (!strcmp(command, "init-db"))
            one = command_init_db(cfg, &(init_db_options){c->reset_slot, c->inbox, c->print_sql,
                                                          !c->from ? ADOPT_ASK
                                                          : !strcmp(c->from, "now")
                                                              ? ADOPT_FROM_NOW
                                                              : ADOPT_FROM_BEGINNING});
        else if (!strcmp(command, "check-config"))
            one = command_check_config(cfg, c->print, quiet);
        else
            one = command_pause(cfg, !strcmp(command, "pause"), c->output, c->source, c->reason);
        fflush(stdout);
        rc = one > rc ? one : rc;
    }
    return rc;
}

static int replay_cmd(int argc, char **argv)
{
    return replay_main(argc, argv, source_for);
}

/* The commands that share one set of options (cli): each refuses the
 * options that are not its own. */
static int shared_main(int argc, char **argv)
{
    const char *command = argv[0];
    cli c = {.dead = -1};
    if (parse_options(argc, argv, &c) < 0) {
        fprintf(stderr, "outbox-relay %s: bad option; see outbox-relay %s --help\n", command,
                command);
        return 2;
    }
    int positional = argc - c.first_arg;
    char **args = argv + c.first_arg;
    /* status --watch SECONDS: the seconds come as the positional argument */
    if (!strcmp(command, "status") && c.watch == -1 && positional == 1 && atoi(args[0]) > 0) {
        c.watch = atoi(args[0]);
        positional = 0;
    }
    if (c.watch == -1)
        c.watch = 2;
    if (c.watch < 0 || (c.watch && strcmp(command, "status") != 0)) {
        fprintf(stderr, "outbox-relay %s: --watch takes seconds > 0, with status only\n", command);
        return 2;
    }
    if ((c.inbox || c.reset_slot || c.print_sql || c.from) && strcmp(command, "init-db") != 0) {
        fprintf(stderr, "outbox-relay %s: --%s is an option of init-db\n", command,
                c.inbox        ? "inbox"
                : c.reset_slot ? "reset-slot"
                : c.print_sql  ? "print-sql"
                               : "from");
        return 2;
    }
    if (c.from && strcmp(c.from, "now") != 0 && strcmp(c.from, "beginning") != 0) {
        fprintf(stderr, "outbox-relay init-db: --from takes now or beginning, not \"%s\"\n",
                c.from);
        return 2;
    }
    int pausing = !strcmp(command, "pause") || !strcmp(command, "resume");
    if ((c.output || c.source || c.reason) && !pausing) {
        fprintf(stderr,
                "outbox-relay %s: --output, --source and --reason go with pause and resume\n",
                command);
        return 2;
    }
    if (c.reason && strcmp(command, "pause") != 0) {
        fprintf(stderr, "outbox-relay resume: --reason goes with pause\n");
        return 2;
    }
    if (c.dead == -2) {
        fprintf(stderr, "outbox-relay %s: --dead takes a count from 0 to 100000, not \"%s\"\n",
                command, c.dead_arg);
        return 2;
    }
    if (c.dead >= 0 && strcmp(command, "status") != 0) {
        fprintf(stderr, "outbox-relay %s: --dead is an option of status\n", command);
        return 2;
    }
    int checking = !strcmp(command, "check-config");
    if (c.connect && !checking) {
        fprintf(stderr, "outbox-relay %s: --connect is an option of check-config\n", command);
        return 2;
    }
    if (checking && c.json && (!c.connect || c.print)) {
        fprintf(stderr, "outbox-relay check-config: --json goes with --connect, not --print\n");
        return 2;
    }
    if (positional > 0 && strcmp(command, "requeue") != 0) {
        fprintf(stderr, "outbox-relay %s: unexpected argument \"%s\"\n", command, args[0]);
        return 2;
    }
    if (!strcmp(command, "requeue")) {
        relay_config *cfg = load_config(&c, command);
        if (!cfg)
            return 2;
        int rc = command_requeue(cfg, c.all, args, positional);
        config_free(cfg);
        return rc;
    }
    size_t count = 0;
    relay_config **cfgs = command_load_all(c.config, c.outbox, command, &count);
    if (!cfgs)
        return 2;
    if (!strcmp(command, "run"))
        return engine_run(cfgs, count, c.drain); /* it takes cfgs */
    int rc;
    if (!strcmp(command, "reload"))
        rc = reload_signal_relays(cfgs[0]->path);
    else if (!strcmp(command, "status"))
        rc = command_status(cfgs, count, c.json, c.watch, c.dead < 0 ? STATUS_DEAD_LISTED : c.dead);
    else
        rc = each_source(&c, command, cfgs, count);
    if (rc == 0 && c.connect) /* the config is sound: then the servers */
        rc = command_check_connect(cfgs, count, c.json);
    config_free_all(cfgs, count);
    return rc;
}

/* Option lines every command that reads a config takes. */
#define OPT_CONFIG "  -c, --config FILE            the config file\n"
#define OPT_OUTBOX                                                                                 \
    "  --outbox NAME                with a config that lists sources: only that one\n"

/* clang-format off */
static const cli_command cli_commands[] = {
    {"run", "-c FILE [--drain]",
     "relay until SIGTERM/SIGINT; --drain exits 0 once\nnothing is pending or in flight",
     OPT_CONFIG OPT_OUTBOX
     "  --drain                      exit 0 once nothing is pending or in flight\n",
     shared_main},
    {"reload", "-c FILE",
     "check FILE, then make the relays running it re-read\nit (SIGHUP; found by their -c in /proc)",
     OPT_CONFIG, shared_main},
    {"init-db", "-c FILE [--from now|beginning] [--print-sql] [--reset-slot] [--inbox]",
     "create or upgrade the outbox schema (idempotent)",
     OPT_CONFIG OPT_OUTBOX
     "  --from now|beginning         a table that already holds rows: mark them published\n"
     "                               (now) or send every one (beginning); required then\n"
     "  --print-sql                  print the SQL it would run (for a migration tool);\n"
     "                               runs it in a transaction it rolls back: changes nothing\n"
     "  --reset-slot                 WAL mode: drop and re-create the replication slot\n"
     "  --inbox                      also the consumer inbox: outbox_inbox_accept(consumer,\n"
     "                               event_id) is true once per event (docs/consumers.md)\n",
     shared_main},
    {"check-config", "-c FILE [--print | --connect [--json]]",
     "load the config and its drivers, validate options,\ncreate each output's driver instance once;\n--connect: then reach the database (schema\nversion, the role's privileges) and each output's\nbroker. Exit 2: a config error, 1: a check failed",
     OPT_CONFIG OPT_OUTBOX
     "  --print                      show every core setting's value, marking defaults\n"
     "  --connect                    also connect: database, schema, privileges, brokers\n"
     "  --json                       with --connect: the report as one JSON object\n",
     shared_main},
    {"status", "-c FILE [--json] [--watch [SECONDS]] [--dead N]",
     "pending, in flight, dead, oldest pending age,\naggregates held back, the first dead events",
     OPT_CONFIG OPT_OUTBOX
     "  --json                       one JSON object\n"
     "  --dead N                     list the first N dead events (10; 0: none)\n"
     "  --watch [SECONDS]            refresh every SECONDS (2)\n",
     shared_main},
    {"requeue", "-c FILE --all | EVENT_ID...",
     "put dead events back to pending",
     OPT_CONFIG OPT_OUTBOX
     "  --all                        every dead event\n",
     shared_main},
    {"pause", "-c FILE --output NAME | --source [--reason TEXT]",
     "stop sending to an output (its events wait, no\nattempt counted) or sending at all, in every relay\non the table, until resume; seen within a second",
     OPT_CONFIG OPT_OUTBOX
     "  --output NAME                the output to pause\n"
     "  --source                     the whole source\n"
     "  --reason TEXT                shown by status\n",
     shared_main},
    {"resume", "-c FILE --output NAME | --source",
     "undo pause",
     OPT_CONFIG OPT_OUTBOX
     "  --output NAME                the output to resume\n"
     "  --source                     the whole source\n",
     shared_main},
    {"replay", "-c FILE --since TIME [--until TIME] [--aggregate TYPE/ID ...]\n[--route N ...] [--to OUTPUT] [--rate N] [--name NAME]",
     "publish again the published events created in\n[since, until) (PostgreSQL timestamptz; until: now),\nas run would (or all to OUTPUT), in id order per\naggregate, at most N a second (1000), rows untouched;\nstopped (SIGINT/SIGTERM, a crash), the same command\n(or --name) sends the rest. Exit 0 once all is sent",
     OPT_CONFIG OPT_OUTBOX
     "  --since TIME, --until TIME   the window of created_at (timestamptz; until: now)\n"
     "  --aggregate TYPE/ID          only this aggregate's events (repeatable)\n"
     "  --route N                    only the events route N (from 1) takes (repeatable)\n"
     "  --to OUTPUT                  every event to OUTPUT instead of its routes\n"
     "  --rate N                     at most N events a second (1000)\n"
     "  --name NAME                  the name its progress is kept under\n",
     replay_cmd},
    {"purge", "-c FILE (--id EVENT_ID... | --older-than INTERVAL | --route N\n| --all) [--dry-run]",
     "remove dead events (poll: rows with dead_at set;\nwal, cursor: the dead-letter table) by event id, age\n(dead longer than INTERVAL, e.g. '7 days') or route\n(the events route N, from 1, would take), in one\ntransaction; --dry-run lists them, removes nothing",
     OPT_CONFIG OPT_OUTBOX
     "  --id EVENT_ID...             these dead events\n"
     "  --older-than INTERVAL        dead longer than INTERVAL\n"
     "  --route N                    the events route N would take\n"
     "  --all                        every dead event\n"
     "  --dry-run                    list them, remove nothing\n",
     purge_main},
    {"drivers", "[-c FILE] [--drivers-dir DIR] [-v]",
     "list the drivers found, their version, ABI, options",
     OPT_CONFIG
     "  --drivers-dir DIR            look in DIR (default: the config's, or the installed one)\n"
     "  -v, --verbose                each driver's options\n",
     drivers_main},
    {"check-driver", "DRIVER.so|NAME [-c FILE] [-o OUTPUT] [--drivers-dir DIR]\n[--destination D] [--bad-output NAME] [--timeout SEC]",
     "run the driver conformance checks",
     OPT_CONFIG
     "  -o OUTPUT                    which output (default: the first whose driver matches)\n"
     "  --drivers-dir DIR            where to find DRIVER by name\n"
     "  --destination D              the test messages' destination (conformance.test)\n"
     "  --bad-output NAME            an output whose options create must refuse\n"
     "  --timeout SEC                how long to wait for completions (30)\n",
     conformance_main},
    {NULL, NULL, NULL, NULL, NULL},
};
/* clang-format on */

int main(int argc, char **argv)
{
    /* Before libpq or a driver starts OpenSSL: its clean-up at exit would
     * free what a driver's library threads (paho's) may still use over TLS
     * while the process ends. The kernel frees it all anyway. */
    OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL);
    if (argc < 2) {
        cli_print_usage(stderr, cli_commands, 0);
        return 2;
    }
    const char *command = argv[1];
    if (!strcmp(command, "-h") || !strcmp(command, "--help") || !strcmp(command, "help")) {
        if (argc > 2 && cli_find(cli_commands, argv[2])) { /* help COMMAND */
            cli_print_command(stdout, cli_find(cli_commands, argv[2]));
            return 0;
        }
        cli_print_usage(stdout, cli_commands, argc > 2 && !strcmp(argv[2], "--all"));
        return 0;
    }
    if (!strcmp(command, "-V") || !strcmp(command, "--version")) {
        printf("outbox-relay %s (commit %s, driver ABI %d.%d)\n", OBX_VERSION, OBX_COMMIT,
               OBX_ABI_MAJOR, OBX_ABI_MINOR);
        return 0;
    }
    const cli_command *c = cli_find(cli_commands, command);
    if (!c) {
        fprintf(stderr, "outbox-relay: unknown command \"%s\"; see outbox-relay --help\n", command);
        return 2;
    }
    if (cli_wants_help(argc - 1, argv + 1)) {
        cli_print_command(stdout, c);
        return 0;
    }
    return c->main(argc - 1, argv + 1);
}
