/* outbox-relay: the command line. */
#include <dirent.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "config.h"
#include "conformance.h"
#include "engine.h"
#include "host.h"
#include "loader.h"
#include "log.h"
#include "options.h"
#include "purge_cmd.h"
#include "reload.h"
#include "replay_cmd.h"
#include "status_cmd.h"

static const char usage_text[] =
    "usage: outbox-relay COMMAND [options]\n"
    "\n"
    "Publishes transactional-outbox rows from PostgreSQL to brokers, at least once.\n"
    "\n"
    "Commands:\n"
    "  run -c FILE [--drain]        relay until SIGTERM/SIGINT; --drain exits 0 once\n"
    "                               nothing is pending or in flight\n"
    "  reload -c FILE               check FILE, then make the relays running it re-read\n"
    "                               it (SIGHUP; found by their -c in /proc)\n"
    "  init-db -c FILE              create or upgrade the outbox schema (idempotent)\n"
    "          [--reset-slot]       WAL mode: drop and re-create the replication slot\n"
    "          [--inbox]            also the consumer inbox: outbox_inbox_accept(consumer,\n"
    "                               event_id) is true once per event (README: Consumer inbox)\n"
    "  check-config -c FILE         load the config and its drivers, validate options,\n"
    "               [--print]       create each output's driver instance once; --print\n"
    "                               shows every core setting's value, marking defaults\n"
    "  status -c FILE [--json] [--watch [SECONDS]]\n"
    "                               pending, in flight, dead, oldest pending age,\n"
    "                               aggregates held back; --watch refreshes (2 s)\n"
    "  requeue -c FILE --all | EVENT_ID...\n"
    "                               put dead events back to pending\n"
    "  pause -c FILE --output NAME | --source [--reason TEXT]\n"
    "                               stop sending to an output (its events wait, no\n"
    "                               attempt counted) or sending at all, in every relay\n"
    "                               on the table, until resume; seen within a second\n"
    "  resume -c FILE --output NAME | --source\n"
    "                               undo pause\n"
    "  replay -c FILE --since TIME [--until TIME] [--aggregate TYPE/ID ...]\n"
    "         [--route N ...] [--to OUTPUT] [--rate N] [--name NAME]\n"
    "                               publish again the published events created in\n"
    "                               [since, until) (PostgreSQL timestamptz; until: now),\n"
    "                               as run would (or all to OUTPUT), in id order per\n"
    "                               aggregate, at most N a second (1000), rows untouched;\n"
    "                               stopped (SIGINT/SIGTERM, a crash), the same command\n"
    "                               (or --name) sends the rest. Exit 0 once all is sent\n"
    "  purge -c FILE (--id EVENT_ID... | --older-than INTERVAL | --route N\n"
    "        | --all) [--dry-run]\n"
    "                               remove dead events (poll: rows with dead_at set;\n"
    "                               wal, cursor: the dead-letter table) by event id, age\n"
    "                               (dead longer than INTERVAL, e.g. '7 days') or route\n"
    "                               (the events route N, from 1, would take), in one\n"
    "                               transaction; --dry-run lists them, removes nothing\n"
    "  drivers [-c FILE] [--drivers-dir DIR] [-v]\n"
    "                               list the drivers found, their version, ABI, options\n"
    "  check-driver DRIVER [-c FILE] [-o OUTPUT] [--drivers-dir DIR]\n"
    "               [--destination D] [--bad-output NAME] [--timeout SEC]\n"
    "                               run the driver conformance checks\n"
    "\n"
    "Options:\n"
    "  --outbox NAME                with a config that lists sources: only that one\n"
    "                               (run, status, init-db, check-config, pause and\n"
    "                               resume take every source without it; requeue,\n"
    "                               purge and replay need it)\n"
    "  -h, --help                   this text\n"
    "  -V, --version                version and driver ABI\n"
    "\n"
    "Exit codes: 0 success; 1 runtime failure (database unreachable, a failed check);\n"
    "2 usage or configuration error; 130 a second signal forced the exit.\n";

/* Options shared by the commands. */
typedef struct cli {
    const char *config;
    const char *drivers_dir;
    int drain, json, all, verbose, reset_slot, print, inbox;
    int watch;                   /* status --watch: seconds between reports, 0: once */
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
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "c:vh", longopts, NULL)) != -1) {
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
        case 'h': fputs(usage_text, stdout); exit(0);
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

static void ignore_completion(void *arg, uint64_t token, obx_status status, int code,
                              const char *detail)
{
    (void)arg, (void)token, (void)status, (void)code, (void)detail;
}

/* Lets the driver judge its options and native properties: create, destroy. */
static int try_create(const cfg_output *out, const loaded_driver *drv)
{
    host_ctx host;
    char err[1024] = "";
    host_init(&host, drv, out, ignore_completion, NULL);
    obx_instance *inst = drv->def.create(&host.host, err, sizeof err);
    if (!inst) {
        fprintf(stderr, "outbox-relay: output %s: driver %s refused its configuration: %s\n",
                out->name, drv->def.name, err[0] ? err : "no reason given");
        return -1;
    }
    drv->def.destroy(inst);
    return 0;
}

/* check-config: everything run checks before it touches the database;
 * print: then every core setting's effective value. */
static int check_config(const relay_config *cfg, int print)
{
    for (size_t i = 0; i < cfg->output_count; i++) {
        char err[1024];
        loaded_driver *drv = host_load_output(cfg, &cfg->outputs[i], err, sizeof err);
        if (!drv) {
            fprintf(stderr, "outbox-relay: config error: %s\n", err);
            return 2;
        }
        int rc = try_create(&cfg->outputs[i], drv);
        loader_close(drv);
        if (rc < 0)
            return 2;
    }
    printf("%s: ok (%zu outputs, %zu routes, table %s.%s)\n", cfg->path, cfg->output_count,
           cfg->route_count, cfg->schema, cfg->table);
    if (print)
        config_print_settings(stdout, cfg);
    return 0;
}

static void print_driver(const loaded_driver *drv, int verbose)
{
    const obx_driver_def *d = &drv->def;
    printf("%-10s %-8s ABI %u.%u  %s\n    %s\n", d->name, d->version ? d->version : "-",
           d->abi_major, d->abi_minor, d->description ? d->description : "", drv->path);
    char bug[512];
    if (options_check_specs(d, bug, sizeof bug) < 0)
        printf("    refused by the host: its option specs are wrong: %s\n", bug);
    if (verbose)
        options_print_table(stdout, d);
}

static int list_drivers(const char *dir, int verbose)
{
    if (!dir)
        dir = loader_default_dir();
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "outbox-relay: cannot open drivers directory %s\n", dir);
        return 1;
    }
    printf("drivers in %s (relay ABI %d.%d):\n", dir, OBX_ABI_MAJOR, OBX_ABI_MINOR);
    int found = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 4 || strcmp(e->d_name + len - 3, ".so") != 0)
            continue;
        char name[256], err[1024];
        snprintf(name, sizeof name, "%.*s", (int)(len - 3), e->d_name);
        loaded_driver *drv = loader_open(dir, name, err, sizeof err);
        if (drv) {
            print_driver(drv, verbose);
            loader_close(drv);
            found++;
        } else {
            printf("%-10s refused: %s\n", name, err);
        }
    }
    closedir(d);
    return found ? 0 : 1;
}

/* init-db, check-config, pause and resume: on each source in turn, each
 * under its name when there are several; the worst exit code. */
static int each_source(const cli *c, const char *command, relay_config **cfgs, size_t count)
{
    int rc = 0;
    for (size_t i = 0; i < count; i++) {
        const relay_config *cfg = cfgs[i];
        if (cfg->source_name && count > 1)
            printf("source %s: ", cfg->source_name);
        int one;
        if (!strcmp(command, "init-db"))
            one = command_init_db(cfg, c->reset_slot, c->inbox);
        else if (!strcmp(command, "check-config"))
            one = check_config(cfg, c->print);
        else
            one = command_pause(cfg, !strcmp(command, "pause"), c->output, c->source, c->reason);
        fflush(stdout);
        rc = one > rc ? one : rc;
    }
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage_text, stderr);
        return 2;
    }
    const char *command = argv[1];
    if (!strcmp(command, "-h") || !strcmp(command, "--help") || !strcmp(command, "help")) {
        fputs(usage_text, stdout);
        return 0;
    }
    if (!strcmp(command, "-V") || !strcmp(command, "--version")) {
        printf("outbox-relay %s (driver ABI %d.%d)\n", OBX_VERSION, OBX_ABI_MAJOR, OBX_ABI_MINOR);
        return 0;
    }
    if (!strcmp(command, "check-driver"))
        return conformance_main(argc - 1, argv + 1);
    if (!strcmp(command, "purge"))
        return purge_main(argc - 1, argv + 1);
    if (!strcmp(command, "replay"))
        return replay_main(argc - 1, argv + 1);

    cli c = {0};
    if (parse_options(argc - 1, argv + 1, &c) < 0) {
        fprintf(stderr, "outbox-relay %s: bad option; see outbox-relay --help\n", command);
        return 2;
    }
    int positional = argc - 1 - c.first_arg;
    char **args = argv + 1 + c.first_arg;
    if (!strcmp(command, "drivers")) {
        const char *dir = c.drivers_dir;
        size_t count = 0;
        relay_config **cfgs = NULL; /* every source loads from one drivers_dir */
        if (!dir && c.config && !(cfgs = command_load_all(c.config, NULL, command, &count)))
            return 2;
        int rc = list_drivers(dir ? dir : cfgs ? cfgs[0]->drivers_dir : NULL, c.verbose);
        config_free_all(cfgs, count);
        return rc;
    }
    int known = !strcmp(command, "run") || !strcmp(command, "init-db") ||
                !strcmp(command, "check-config") || !strcmp(command, "status") ||
                !strcmp(command, "requeue") || !strcmp(command, "reload") ||
                !strcmp(command, "pause") || !strcmp(command, "resume");
    if (!known) {
        fprintf(stderr, "outbox-relay: unknown command \"%s\"; see outbox-relay --help\n", command);
        return 2;
    }
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
    if ((c.inbox || c.reset_slot) && strcmp(command, "init-db") != 0) {
        fprintf(stderr, "outbox-relay %s: --%s is an option of init-db\n", command,
                c.inbox ? "inbox" : "reset-slot");
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
        rc = command_status(cfgs, count, c.json, c.watch);
    else
        rc = each_source(&c, command, cfgs, count);
    config_free_all(cfgs, count);
    return rc;
}
