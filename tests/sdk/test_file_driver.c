/*
 * The file driver's 1.1 outcomes, through the real host table: a message it
 * cannot encode is refused PERMANENT with a reason given through
 * host->refuse (so it counts an attempt and ends dead, not retried forever);
 * a failed write (/dev/full) completes OBX_UNAVAILABLE with the errno.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/log.h"
#include "host/host.h"
#include "host/loader.h"

#if !defined(FILE_CFG) || !defined(DRIVERS_DIR)
#error FILE_CFG and DRIVERS_DIR must be defined
#endif

typedef struct seen {
    int completions, refusals;
    obx_status status[8];
    int code[8];
    char reason[8][128];
} seen;

static void on_complete(void *arg, uint64_t token, obx_status status, int code, const char *d)
{
    (void)d;
    seen *s = arg;
    s->completions++;
    s->status[token] = status;
    s->code[token] = code;
}

static void on_refuse(void *arg, uint64_t token, int code, const char *detail)
{
    (void)code;
    seen *s = arg;
    s->refusals++;
    snprintf(s->reason[token], sizeof s->reason[token], "%s", detail ? detail : "");
}

static relay_config *cfg;
static loaded_driver *drv;

/* Publishes msgs through output NAME; fills accept and what the host saw. */
static void publish(const char *name, obx_message *msgs, size_t n, obx_status *accept, seen *s)
{
    const cfg_output *out = NULL;
    for (size_t i = 0; i < cfg->output_count; i++)
        if (strcmp(cfg->outputs[i].name, name) == 0)
            out = &cfg->outputs[i];
    assert_non_null(out);
    char err[1024];
    if (host_validate_options(cfg, out, drv, err, sizeof err) != 0)
        fail_msg("%s", err);
    host_ctx ctx;
    host_init(&ctx, drv, out, on_complete, s);
    ctx.on_refuse = on_refuse;
    obx_instance *inst = drv->def.create(&ctx.host, err, sizeof err);
    if (!inst)
        fail_msg("create: %s", err);
    assert_int_equal(drv->def.publish_batch(inst, msgs, n, accept), OBX_OK);
    drv->def.destroy(inst);
}

static obx_message message(uint64_t token, const char *event_type, const obx_header *h)
{
    return (obx_message){.token = token,
                         .event_id = "0b6f1c9e-1d2f-4e55-9c1b-2f6d3a1c8e01",
                         .event_type = event_type,
                         .aggregate_type = "Order",
                         .aggregate_id = "order-1",
                         .destination = "orders",
                         .payload = "{\"a\":1}",
                         .payload_len = 7,
                         .content_type = "application/json",
                         .headers = h,
                         .header_count = h ? 1 : 0,
                         .attempt = 1};
}

static void test_unencodable_refused_with_reason(void **state)
{
    (void)state;
    static const obx_header bad_key = {"tr\xc3\x28"
                                       "ce",
                                       "x"};
    obx_message msgs[3] = {message(0, "order.created", NULL), message(1, "order.\xff", NULL),
                           message(2, "order.paid", &bad_key)};
    msgs[2].aggregate_id = "order-2"; /* not behind message 1 (see the next test) */
    obx_status accept[3];
    seen s = {0};
    publish("refusals", msgs, 3, accept, &s);
    assert_int_equal(accept[0], OBX_OK);
    assert_int_equal(accept[1], OBX_PERMANENT);
    assert_int_equal(accept[2], OBX_PERMANENT);
    assert_int_equal(s.refusals, 2);
    assert_string_equal(s.reason[1], "event_type is not valid UTF-8");
    assert_string_equal(s.reason[2], "a header key is not valid UTF-8");
    assert_int_equal(s.completions, 1);
    assert_int_equal(s.status[0], OBX_OK);
}

/* In order: behind a refused event, the later ones of its aggregate are
 * refused too (retriable), never written ahead of it; other aggregates are. */
static void test_later_events_of_a_refused_aggregate_refused(void **state)
{
    (void)state;
    obx_message msgs[4] = {message(0, "order.\xff", NULL), message(1, "order.paid", NULL),
                           message(2, "order.created", NULL), message(3, "order.shipped", NULL)};
    msgs[2].aggregate_id = "order-2";
    obx_status accept[4];
    seen s = {0};
    publish("refusals", msgs, 4, accept, &s);
    assert_int_equal(accept[0], OBX_PERMANENT);
    assert_int_equal(accept[1], OBX_RETRIABLE);
    assert_int_equal(accept[2], OBX_OK);
    assert_int_equal(accept[3], OBX_RETRIABLE);
    assert_int_equal(s.refusals, 3);
    assert_string_equal(s.reason[1],
                        "not written in order: an earlier event of its aggregate was refused");
    assert_int_equal(s.completions, 1);
    assert_int_equal(s.status[2], OBX_OK);
}

static void test_write_failure_is_unavailable(void **state)
{
    (void)state;
    obx_message msgs[2] = {message(0, "order.created", NULL), message(1, "order.paid", NULL)};
    obx_status accept[2];
    seen s = {0};
    publish("full", msgs, 2, accept, &s);
    assert_int_equal(accept[0], OBX_OK);
    assert_int_equal(accept[1], OBX_OK);
    assert_int_equal(s.refusals, 0);
    assert_int_equal(s.completions, 2);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(s.status[i], OBX_UNAVAILABLE);
        assert_int_equal(s.code[i], ENOSPC);
    }
}

static int setup(void **state)
{
    (void)state;
    char err[1024];
    log_setup(OBX_LOG_WARN, LOG_FORMAT_TEXT);
    cfg = config_load(FILE_CFG, err, sizeof err);
    drv = cfg ? loader_open(DRIVERS_DIR, "file", err, sizeof err) : NULL;
    if (!drv)
        fprintf(stderr, "%s\n", err);
    return drv ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    loader_close(drv);
    config_free(cfg);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unencodable_refused_with_reason),
        cmocka_unit_test(test_later_events_of_a_refused_aggregate_refused),
        cmocka_unit_test(test_write_failure_is_unavailable),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
