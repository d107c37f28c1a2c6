/*
 * What the metrics endpoint and the probes report, without a server:
 * histogram buckets at their bounds, outcomes per output and per route,
 * in flight, /healthz with a stale heartbeat, /readyz for each reason, the
 * rendered text (_count equal to the +Inf bucket), and the series following
 * a new config generation (live reload) by output name and route position.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "event/outcome.h"
#include "event/route.h"
#include "ops/metrics_render.h"
#include "ops/metrics_sources.h"
#include "ops/probes.h"
#include "poll/poll_kind.h"
#include "telemetry/counters.h"

static cfg_output outputs[] = {{.name = "kafka"}, {.name = "mq\"tt"}};
static cfg_route routes[] = {
    {.event_type = "order.*", .aggregate_type = "*", .output = "kafka", .output_index = 0},
    {.event_type = "*", .aggregate_type = "*", .output = "mq\"tt", .output_index = 1},
};
static relay_config cfg = {.workers = 2,
                           .lease_ms = 30000,
                           .poll_interval_ms = 1000,
                           .outputs = outputs,
                           .output_count = 2,
                           .routes = routes,
                           .route_count = 2};

typedef struct fixture {
    relay_state st;
    config_gen gen; /* generation 0, its one user never released */
    output_health health[2];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->st.cfg = &cfg;
    f->st.src = &poll_kind;
    f->gen = (config_gen){.cfg = &cfg, .health = f->health, .users = 1};
    f->st.gen = &f->gen;
    pthread_mutex_init(&f->st.gen_lock, NULL);
    health_init(&f->health[0], "kafka");
    health_init(&f->health[1], "mq\"tt");
    f->st.metrics = counters_new(&cfg);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    counters_free(f->st.metrics);
    pthread_mutex_destroy(&f->st.gen_lock);
    health_destroy(&f->health[0]);
    health_destroy(&f->health[1]);
    free(f);
    return 0;
}

static long long bucket(histogram *h, int i)
{
    return atomic_load(&h->bucket[i]);
}

static void test_histogram_bounds(void **state)
{
    (void)state;
    histogram h = {0};
    histogram_observe(&h, 1000); /* on the bound: le="0.001" */
    histogram_observe(&h, 1001);
    histogram_observe(&h, -5); /* created_at a little ahead of this host */
    histogram_observe(&h, 3600000001LL);
    assert_int_equal(bucket(&h, 0), 2);
    assert_int_equal(bucket(&h, 1), 1);
    assert_int_equal(bucket(&h, STATS_BUCKETS), 1);
    assert_int_equal(atomic_load(&h.sum_us), 1000 + 1001 + 3600000001LL);
}

static obx_message msg(const char *event_type, long long created_us)
{
    return (obx_message){
        .event_type = event_type, .aggregate_type = "Order", .created_at_us = created_us};
}

/* As a source settles a message: the route it took (NULL and not offered
 * when it never became a message). */
static void observe(relay_metrics *m, const relay_config *c, size_t output, const obx_message *msg,
                    int outcome, int refused)
{
    counters_observe_completion(m, c, output, msg ? route_for(c, msg) : NULL, msg != NULL,
                                msg ? msg->created_at_us : 0, now_ms(), outcome, refused);
}

static void test_outcomes(void **state)
{
    fixture *f = *state;
    relay_metrics *m = f->st.metrics;
    obx_message order = msg("order.paid", counters_wall_us() - 2000000), user = msg("user.new", 0);
    for (int i = 0; i < 3; i++)
        counters_sent(m, &cfg, 0);
    counters_sent(m, &cfg, 1);
    assert_int_equal(atomic_load(&counters_output(m, "kafka")->in_flight), 3);
    observe(m, &cfg, 0, &order, OUTCOME_PUBLISHED, 0);
    observe(m, &cfg, 0, &order, OUTCOME_RETRY, 1);
    observe(m, &cfg, 0, &order, OUTCOME_DEFER, 1);
    observe(m, &cfg, 1, &user, OUTCOME_DEAD, 0);
    observe(m, &cfg, 1, NULL, OUTCOME_DEAD, 0);       /* never sent */
    observe(m, &cfg, 7, &user, OUTCOME_PUBLISHED, 0); /* no output 7 */
    output_stats *k = counters_output(m, "kafka"), *q = counters_output(m, "mq\"tt");
    assert_int_equal(atomic_load(&k->in_flight), 0);
    assert_int_equal(atomic_load(&q->in_flight), 0);
    assert_int_equal(atomic_load(&k->n.published), 1);
    assert_int_equal(atomic_load(&k->n.retried), 1);
    assert_int_equal(atomic_load(&k->n.deferred), 1);
    assert_int_equal(atomic_load(&k->n.refused), 2);
    assert_int_equal(atomic_load(&q->n.dead), 2);
    assert_int_equal(atomic_load(&counters_route(m, 1, "kafka")->n.published), 1);
    assert_int_equal(atomic_load(&counters_route(m, 2, "mq\"tt")->n.dead),
                     1); /* bad row: no route */
    /* latencies only for what was published: 2 s since created_at */
    assert_int_equal(bucket(&k->commit_to_ack, 10), 1); /* le="2.5" */
    long long publish_total = 0, q_total = 0;
    for (int i = 0; i <= STATS_BUCKETS; i++) {
        publish_total += bucket(&k->publish, i);
        q_total += bucket(&q->commit_to_ack, i);
    }
    assert_int_equal(publish_total, 1);
    assert_int_equal(q_total, 0);
    counters_observe_statement(m, "claim", 1500);
    counters_observe_statement(m, "no such statement", 1500);
    assert_int_equal(bucket(&m->statements[STMT_CLAIM], 1), 1);
}

static void test_healthz(void **state)
{
    fixture *f = *state;
    relay_metrics *m = f->st.metrics;
    char *body;
    assert_int_equal(probe_health(&f->st, &body), 200); /* no thread started yet */
    assert_string_equal(body, "{\"status\":\"ok\"}");
    free(body);
    counters_thread_register(m, 1); /* this thread plays worker 1 */
    assert_int_equal(probe_health(&f->st, &body), 200);
    free(body);
    atomic_store(&m->beats[1], now_ms() - m->stale_ms - 2000);
    assert_int_equal(probe_health(&f->st, &body), 503);
    assert_non_null(strstr(body, "\"worker-1: no progress for "));
    free(body);
    counters_beat();
    assert_int_equal(probe_health(&f->st, &body), 200);
    free(body);
    atomic_store(&f->st.failed, 1);
    assert_int_equal(probe_health(&f->st, &body), 503);
    free(body);
    counters_thread_register(NULL, 0);
}

static void poll_result(relay_metrics *m, int ok, const char *error, long long age_ms)
{
    backlog_snapshot *b = &m->backlog;
    b->polled = b->polled || ok;
    b->db_ok = ok;
    b->failures += !ok;
    snprintf(b->db_error, sizeof b->db_error, "%s", error);
    if (ok)
        b->polled_at_ms = now_ms() - age_ms;
}

static void expect_ready(fixture *f, int status, const char *reason)
{
    char *body;
    assert_int_equal(probe_ready(&f->st, &body), status);
    if (reason)
        assert_non_null(strstr(body, reason));
    free(body);
}

static void test_readyz(void **state)
{
    fixture *f = *state;
    relay_metrics *m = f->st.metrics;
    expect_ready(f, 503, "\"database: not checked yet\"");
    poll_result(m, 1, "", 0);
    expect_ready(f, 200, "{\"status\":\"ready\"}");
    /* libpq's message names the server (host, port): it stays in the log */
    poll_result(m, 0, "connection to server at \"db.internal\" (10.0.0.5), port 5432 failed", 0);
    expect_ready(f, 503, "\"database: the last check failed (the relay's log says why)\"");
    char *body;
    probe_ready(&f->st, &body);
    assert_null(strstr(body, "10.0.0.5"));
    assert_null(strstr(body, "5432"));
    free(body);
    poll_result(m, 1, "", 3600 * 1000);
    expect_ready(f, 503, "\"database: no successful poll for 3600 s\"");
    poll_result(m, 1, "", 0);
    health_down(&f->health[1], "test");
    expect_ready(f, 503, "\"output mq\\\"tt: unavailable\"");
    health_up(&f->health[1], 1);
    expect_ready(f, 200, NULL);
    atomic_store(&f->st.stop, 1);
    expect_ready(f, 503, "\"stopping\"");
}

static void test_render(void **state)
{
    fixture *f = *state;
    relay_metrics *m = f->st.metrics;
    for (int i = 0; i < 5; i++)
        histogram_observe(&counters_output(m, "mq\"tt")->publish, 20000 * i);
    poll_result(m, 1, "", 0);
    m->backlog.pending = 42;
    m->backlog.oldest_pending_s = 12.5;
    size_t len;
    char *body = metrics_render(&f->st, &len);
    assert_non_null(body);
    assert_int_equal(strlen(body), len);
    assert_non_null(strstr(body, "\noutbox_relay_output_up{output=\"mq\\\"tt\"} 1\n"));
    assert_non_null(strstr(
        body,
        "\noutbox_relay_publish_duration_seconds_bucket{output=\"mq\\\"tt\",le=\"0.05\"} 3\n"));
    assert_non_null(strstr(
        body,
        "\noutbox_relay_publish_duration_seconds_bucket{output=\"mq\\\"tt\",le=\"+Inf\"} 5\n"));
    assert_non_null(
        strstr(body, "\noutbox_relay_publish_duration_seconds_count{output=\"mq\\\"tt\"} 5\n"));
    assert_non_null(strstr(
        body, "\noutbox_relay_publish_duration_seconds_sum{output=\"mq\\\"tt\"} 0.200000\n"));
    assert_non_null(
        strstr(body, "\noutbox_relay_route_published_total{route=\"2\",output=\"mq\\\"tt\"} 0\n"));
    assert_non_null(strstr(body, "\noutbox_relay_pending_rows 42\n"));
    assert_non_null(strstr(body, "\noutbox_relay_oldest_pending_age_seconds 12.5\n"));
    assert_non_null(strstr(body, "# TYPE outbox_relay_statement_duration_seconds histogram\n"));
    free(body);
    /* without stats (the fuzz target's state): the totals and output_up only */
    relay_metrics *saved = f->st.metrics;
    f->st.metrics = NULL;
    body = metrics_render(&f->st, &len);
    assert_non_null(strstr(body, "outbox_relay_published_total 0\n"));
    assert_null(strstr(body, "outbox_relay_pending_rows"));
    free(body);
    f->st.metrics = saved;
}

/* A reload: "kafka" removed, "mq\"tt" kept at another index, "file" new, and
 * the routes reordered. Counts follow names and positions, not indexes, and
 * /metrics and /readyz show the running generation only. */
static cfg_output outputs2[] = {{.name = "file"}, {.name = "mq\"tt"}};
static cfg_route routes2[] = {
    {.event_type = "*", .aggregate_type = "*", .output = "mq\"tt", .output_index = 1},
};
static relay_config cfg2 = {.workers = 2,
                            .lease_ms = 30000,
                            .poll_interval_ms = 300000,
                            .outputs = outputs2,
                            .output_count = 2,
                            .routes = routes2,
                            .route_count = 1};

static void test_reload(void **state)
{
    fixture *f = *state;
    relay_metrics *m = f->st.metrics;
    obx_message user = msg("user.new", counters_wall_us());
    counters_sent(m, &cfg, 1); /* generation 0: mq"tt is output 1, route 2 */
    observe(m, &cfg, 1, &user, OUTCOME_PUBLISHED, 0);
    counters_sent(m, &cfg, 0);
    observe(m, &cfg, 0, &user, OUTCOME_DEAD, 0);
    output_health health2[2];
    health_init(&health2[0], "file");
    health_init(&health2[1], "mq\"tt");
    config_gen gen2 = {.number = 1, .cfg = &cfg2, .health = health2, .users = 1};
    f->st.gen = &gen2;
    counters_sent(m, &cfg2, 1); /* generation 1: mq"tt is output 1, route 1 */
    observe(m, &cfg2, 1, &user, OUTCOME_PUBLISHED, 0);
    assert_int_equal(atomic_load(&counters_output(m, "mq\"tt")->n.published), 2);
    assert_int_equal(atomic_load(&counters_output(m, "mq\"tt")->in_flight), 0);
    assert_int_equal(atomic_load(&counters_route(m, 1, "mq\"tt")->n.published), 1);
    assert_int_equal(atomic_load(&counters_route(m, 2, "mq\"tt")->n.published), 1);
    assert_int_equal(atomic_load(&counters_output(m, "file")->n.published), 0);
    size_t len;
    char *body = metrics_render(&f->st, &len);
    assert_non_null(strstr(body, "\noutbox_relay_output_published_total{output=\"mq\\\"tt\"} 2\n"));
    assert_non_null(strstr(body, "\noutbox_relay_output_published_total{output=\"file\"} 0\n"));
    assert_non_null(strstr(body, "\noutbox_relay_output_up{output=\"file\"} 1\n"));
    assert_non_null(
        strstr(body, "\noutbox_relay_route_published_total{route=\"1\",output=\"mq\\\"tt\"} 1\n"));
    assert_null(strstr(body, "route=\"2\""));
    assert_null(strstr(body, "output=\"kafka\""));
    assert_non_null(
        strstr(body, "outbox_relay_commit_to_ack_seconds_count{output=\"mq\\\"tt\"} 2\n"));
    free(body);
    /* the running generation's outputs for /readyz; its poll interval for /healthz */
    poll_result(m, 1, "", 0);
    health_down(&health2[0], "test");
    expect_ready(f, 503, "\"output file: unavailable\"");
    assert_int_equal(counters_stale_ms(m, &cfg2), 3 * 30000 + 300000);
    assert_int_equal(counters_stale_ms(m, &cfg), m->stale_ms);
    counters_thread_register(m, 0);
    atomic_store(&m->beats[0], now_ms() - m->stale_ms - 2000); /* stale only under generation 0 */
    char *hb;
    assert_int_equal(probe_health(&f->st, &hb), 200);
    free(hb);
    counters_thread_register(NULL, 0);
    f->st.gen = &f->gen;
    health_destroy(&health2[0]);
    health_destroy(&health2[1]);
}

/* Several sources' texts: each family declared once, every sample labelled
 * with its source, in the texts' order; a family only one source has kept. */
static void test_merge(void **state)
{
    (void)state;
    const char *a = "# HELP x_total X.\n# TYPE x_total counter\nx_total 1\n"
                    "# HELP h_seconds H.\n# TYPE h_seconds histogram\n"
                    "h_seconds_bucket{le=\"+Inf\"} 2\nh_seconds_count 2\n";
    const char *b = "# HELP x_total X.\n# TYPE x_total counter\nx_total 5\n"
                    "# HELP w_bytes W.\n# TYPE w_bytes gauge\nw_bytes{slot=\"s\"} 7\n"
                    "# HELP h_seconds H.\n# TYPE h_seconds histogram\n"
                    "h_seconds_bucket{le=\"+Inf\"} 3\nh_seconds_count 3\n";
    const char *texts[] = {a, b};
    const char *names[] = {"orders", "billing"};
    size_t len = 0;
    char *out = metrics_merge(texts, names, 2, &len);
    assert_non_null(out);
    assert_int_equal(len, strlen(out));
    assert_string_equal(out, "# HELP x_total X.\n# TYPE x_total counter\n"
                             "x_total{source=\"orders\"} 1\nx_total{source=\"billing\"} 5\n"
                             "# HELP h_seconds H.\n# TYPE h_seconds histogram\n"
                             "h_seconds_bucket{source=\"orders\",le=\"+Inf\"} 2\n"
                             "h_seconds_count{source=\"orders\"} 2\n"
                             "h_seconds_bucket{source=\"billing\",le=\"+Inf\"} 3\n"
                             "h_seconds_count{source=\"billing\"} 3\n"
                             "# HELP w_bytes W.\n# TYPE w_bytes gauge\n"
                             "w_bytes{source=\"billing\",slot=\"s\"} 7\n");
    free(out);
    out = metrics_merge(texts, names, 0, &len);
    assert_non_null(out);
    assert_int_equal(len, 0);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_histogram_bounds),
        cmocka_unit_test(test_merge),
        cmocka_unit_test_setup_teardown(test_outcomes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_healthz, setup, teardown),
        cmocka_unit_test_setup_teardown(test_readyz, setup, teardown),
        cmocka_unit_test_setup_teardown(test_render, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reload, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
