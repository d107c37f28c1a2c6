#define _DEFAULT_SOURCE /* realpath, mkdtemp */
#include "relay_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "poll/poll_kind.h"
#include "telemetry/counters.h"

static char driver_dir[1024];

void relay_fixture_driver(const char *memory_so)
{
    char *path = memory_so ? realpath(memory_so, NULL) : NULL; /* the config is elsewhere */
    const char *slash = path ? strrchr(path, '/') : NULL;
    if (!slash || strcmp(slash, "/memory.so") != 0) {
        fprintf(stderr, "usage: give the path of the memory driver (.../memory.so)\n");
        exit(2);
    }
    snprintf(driver_dir, sizeof driver_dir, "%.*s", (int)(slash - path), path);
    free(path);
}

static const char config_text[] =
    "database = { conninfo = \"dbname=unused\"; };\n"
    "relay = { drivers_dir = \"%s\"; max_attempts = 3; batch_size = 8; ordering = \"aggregate\";\n"
    "  backoff = { initial_ms = 1000; max_ms = 8000; multiplier = 2.0; jitter = 0.0; }; };\n"
    "outputs = (\n"
    "  { name = \"plain\"; driver = \"memory\"; },\n"
    "  { name = \"late\"; driver = \"memory\"; options = { delay_ms = 3600000; }; },\n"
    "  { name = \"refusing\"; driver = \"memory\";\n"
    "    options = { refuse_event_type = \"refusing.no\"; }; },\n"
    "  { name = \"fatal\"; driver = \"memory\"; options = { fatal_after = 1; }; },\n"
    "  { name = \"down\"; driver = \"memory\"; options = { unavailable_file = \"%s\"; }; },\n"
    "  { name = \"flaky\"; driver = \"memory\";\n"
    "    options = { retriable_event_type = \"flaky.always\"; }; }\n"
    ");\n"
    "routes = (\n"
    "  { event_type = \"plain.*\"; output = \"plain\"; },\n"
    "  { event_type = \"late.*\"; output = \"late\"; },\n"
    "  { event_type = \"refusing.*\"; output = \"refusing\"; },\n"
    "  { event_type = \"fatal.*\"; output = \"fatal\"; },\n"
    "  { event_type = \"down.*\"; output = \"down\"; },\n"
    "  { event_type = \"flaky.*\"; output = \"flaky\"; }\n"
    ");\n";

static void write_file(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    assert_int_equal(fclose(fp), 0);
}

relay_fixture *relay_fixture_open(void)
{
    assert_true(driver_dir[0]);
    relay_fixture *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/obx-unit-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->down_file, sizeof f->down_file, "%s/down", f->dir);
    write_file(f->down_file, "");

    char text[sizeof config_text + 2048], path[128], err[1024] = "";
    snprintf(text, sizeof text, config_text, driver_dir, f->down_file);
    snprintf(path, sizeof path, "%s/relay.cfg", f->dir);
    write_file(path, text);
    relay_config *cfg = config_load(path, err, sizeof err);
    if (!cfg)
        fail_msg("config: %s", err);
    assert_int_equal(cfg->output_count, OUT_COUNT);
    config_gen *gen = gen_new(cfg, 1, 0, err, sizeof err);
    if (!gen)
        fail_msg("generation: %s", err);

    relay_state *st = &f->st;
    st->cfg = cfg;
    st->src = &poll_kind;
    st->gen = gen;
    atomic_init(&st->gen_number, 0);
    st->payload = PAYLOAD_JSON;
    pthread_mutex_init(&st->gen_lock, NULL);
    st->metrics = counters_new(cfg);
    return f;
}

void relay_fixture_close(relay_fixture *f)
{
    char path[128];
    counters_free(f->st.metrics);
    gen_release(f->st.gen);
    pthread_mutex_destroy(&f->st.gen_lock);
    unlink(f->down_file);
    snprintf(path, sizeof path, "%s/relay.cfg", f->dir);
    unlink(path);
    rmdir(f->dir);
    free(f);
}

obx_message fixture_message(const char *event_type, const char *aggregate_id, uint64_t token)
{
    return (obx_message){
        .token = token,
        .event_id = "00000000-0000-4000-8000-000000000001",
        .event_type = event_type,
        .aggregate_type = "Order",
        .aggregate_id = aggregate_id,
        .destination = "outbox.Order",
        .payload = "{}",
        .payload_len = 2,
        .content_type = "application/json",
        .attempt = 1,
    };
}
