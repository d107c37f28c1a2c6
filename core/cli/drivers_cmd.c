#include "cli/drivers_cmd.h"

#include <dirent.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "host/host.h"
#include "host/loader.h"
#include "host/options.h"

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
 * print: then every core setting's effective value; quiet: no line when
 * all is well (--json). */
int command_check_config(const relay_config *cfg, int print, int quiet)
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
    if (!quiet)
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

/* `drivers`: the drivers found, from --drivers-dir, the config's, or the default. */
int drivers_main(int argc, char **argv)
{
    static const struct option longopts[] = {{"config", required_argument, NULL, 'c'},
                                             {"drivers-dir", required_argument, NULL, 'D'},
                                             {"verbose", no_argument, NULL, 'v'},
                                             {NULL, 0, NULL, 0}};
    const char *config = NULL, *dir = NULL;
    int verbose = 0, opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "c:v", longopts, NULL)) != -1) {
        switch (opt) {
        case 'c': config = optarg; break;
        case 'D': dir = optarg; break;
        case 'v': verbose = 1; break;
        default:
            fprintf(stderr, "outbox-relay drivers: bad option; see outbox-relay drivers --help\n");
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "outbox-relay drivers: unexpected argument \"%s\"\n", argv[optind]);
        return 2;
    }
    size_t count = 0;
    relay_config **cfgs = NULL; /* every source loads from one drivers_dir */
    if (!dir && config && !(cfgs = command_load_all(config, NULL, "drivers", &count)))
        return 2;
    int rc = list_drivers(dir ? dir : cfgs ? cfgs[0]->drivers_dir : NULL, verbose);
    config_free_all(cfgs, count);
    return rc;
}
