/*
 * check-driver: loads any driver against a recording fake host and checks
 * the contract of include/obx/driver.h. Every check builds its own instance
 * and ledger, so a failure names the behaviour at fault.
 *
 * Message memory is poisoned and freed as soon as publish_batch returns: a
 * driver that keeps pointers into it reads garbage (and AddressSanitizer or
 * valgrind says where).
 */
#include "conformance/conformance.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "conformance/conformance_run.h"

/* ---- command line ---- */

static void cf_usage(void)
{
    fprintf(stderr,
            "usage: outbox-relay check-driver DRIVER.so|NAME [-c CONFIG] [-o OUTPUT]\n"
            "           [--drivers-dir DIR] [--bad-output NAME] [--destination D] [--timeout SEC]\n"
            "  Loads the driver against a recording host and checks the completion contract.\n"
            "  -c CONFIG        driver options come from this config's output\n"
            "  -o OUTPUT        which output (default: the first whose driver matches)\n"
            "  --bad-output N   an output whose options create must refuse\n"
            "  --destination D  destination of the test messages (default conformance.test)\n"
            "  --timeout SEC    how long to wait for completions (default 30)\n");
}

/* "memory", "./x.so", "/abs/x.so" or "x.so" in the current directory. */
static const char *cf_driver_arg(const char *arg, char *buf, size_t size)
{
    size_t len = strlen(arg);
    if (!strchr(arg, '/') && len > 3 && strcmp(arg + len - 3, ".so") == 0) {
        if (access(arg, R_OK) == 0) {
            snprintf(buf, size, "./%s", arg);
        } else {
            snprintf(buf, size, "%.*s", (int)(len - 3), arg);
        }
        return buf;
    }
    return arg;
}

int conformance_main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'},
        {"output", required_argument, NULL, 'o'},
        {"drivers-dir", required_argument, NULL, 'd'},
        {"bad-output", required_argument, NULL, 'b'},
        {"destination", required_argument, NULL, 't'},
        {"timeout", required_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *config = NULL, *output = NULL, *dir = NULL, *bad_output = NULL;
    cf_run run = {.destination = "conformance.test", .timeout_ms = 30000};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "c:o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'c': config = optarg; break;
        case 'o': output = optarg; break;
        case 'd': dir = optarg; break;
        case 'b': bad_output = optarg; break;
        case 't': run.destination = optarg; break;
        case 'T': run.timeout_ms = atoi(optarg) * 1000; break;
        case 'h': cf_usage(); return 0;
        default: cf_usage(); return 2;
        }
    }
    if (optind != argc - 1 || run.timeout_ms <= 0) {
        cf_usage();
        return 2;
    }
    log_setup(OBX_LOG_WARN, LOG_FORMAT_TEXT);

    char err[1024];
    relay_config fake_cfg = {.path = "(check-driver)"};
    if (config) {
        run.cfg = config_load(config, err, sizeof err);
        if (!run.cfg) {
            fprintf(stderr, "check-driver: %s\n", err);
            return 2;
        }
        if (!dir)
            dir = run.cfg->drivers_dir;
    }
    char name_buf[4096];
    const char *driver = cf_driver_arg(argv[optind], name_buf, sizeof name_buf);
    loaded_driver *drv = loader_open(dir, driver, err, sizeof err);
    if (!drv) {
        printf("FAIL load: %s\n", err);
        config_free(run.cfg);
        return 1;
    }
    run.drv = drv;
    run.def = &drv->def;
    printf("PASS load: %s\n", drv->path);

    int status = 0;
    if (run.cfg) {
        for (size_t i = 0; i < run.cfg->output_count && !run.output; i++) {
            const cfg_output *o = &run.cfg->outputs[i];
            if (output ? strcmp(o->name, output) == 0 : strcmp(o->driver, drv->def.name) == 0)
                run.output = o;
        }
        if (!run.output) {
            fprintf(stderr, "check-driver: %s: no output %s%s\n", config,
                    output ? "named " : "using driver ", output ? output : drv->def.name);
            status = 2;
            goto out;
        }
        if (host_validate_options(run.cfg, run.output, drv, err, sizeof err) != 0) {
            printf("FAIL options: %s\n", err);
            status = 1;
            goto out;
        }
    } else {
        run.cfg = &fake_cfg; /* no options: the driver's defaults */
    }

    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    run.rand_state = (unsigned)(now.tv_nsec ^ getpid());
    pthread_mutex_init(&run.threads_lock, NULL);
    run.host_threads[run.host_thread_count++] = pthread_self();
    cf_current = &run;

    check_definition(&run);
    check_option_specs(&run);
    check_unknown_option(&run);
    check_create_failure(&run, bad_output);

    cf_instance *ci = cf_new(&run);
    if (cf_create(&run, ci, "create") == 0) {
        cf_pass(&run, "create", NULL);
        check_batches(&run, ci);
        check_publish_bound(&run, ci);
        check_flush(&run, ci);
        check_close(&run, ci, "close_in_flight", 0);
        check_close_twice(&run, ci);
        cf_destroy(&run, ci);

        cf_instance *d = cf_new(&run);
        if (cf_create(&run, d, "destroy_in_flight") == 0)
            check_close(&run, d, "destroy_in_flight", 1);
        cf_destroy(&run, d);
        free(d);

        check_two_instances(&run);
        check_thread_handover(&run);
        check_probe(&run);
        check_threads(&run);
        check_refusals(&run);
    }
    free(ci);
    status = run.failed ? 1 : 0;
    printf("RESULT: driver %s %s the conformance checks\n", drv->def.name,
           status ? "FAILS" : "passes");
out:
    loader_close(drv);
    if (run.cfg != &fake_cfg)
        config_free(run.cfg);
    return status;
}
