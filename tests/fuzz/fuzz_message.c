/*
 * Fuzz target: turning an event's fields into a message (payload check, the
 * headers column, routing, destination templates), through message_build as
 * both sources call it, then route_render.
 *
 * Input: one byte choosing the payload kind, then NUL-separated fields:
 *   payload, headers, destination, event_type, aggregate_type, aggregate_id, template
 * (a missing payload, headers or destination is SQL NULL).
 *
 * Besides crashes it checks the JSON scanner against jansson: both accept
 * and reject the same documents (jansson also refuses numbers beyond 64 bits
 * or a double, the reason the scanner exists) and decode strings the same.
 */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event/message.h"
#include "event/route.h"
#include "fuzz_config_text.h"

static relay_config *cfg;

static void load_config(void)
{
    static const char text[] =
        "database = { conninfo = \"dbname=fuzz\"; };\n"
        "outputs = ( { name = \"a\"; driver = \"memory\"; }, { name = \"b\"; driver = \"memory\"; "
        "} );\n"
        "routes = ( { event_type = \"order.*\"; output = \"a\";\n"
        "             destination = \"orders.${aggregate_type}.${event_type}\"; },\n"
        "           { aggregate_type = \"X?\"; output = \"b\"; destination = "
        "\"x.${aggregate_id}\"; },\n"
        "           { output = \"b\"; destination = \"all\"; } );\n";
    cfg = fuzz_config_text("fuzz_message config", text);
}

/* jansson refuses valid JSON the scanner takes: numbers beyond 64 bits or a
 * double (on purpose), \u0000 in an object key (jansson's own limit). */
static int jansson_limit(const json_error_t *e)
{
    return strstr(e->text, "too big") || strstr(e->text, "overflow") ||
           strstr(e->text, "NUL byte in object key");
}

/* The scanner and jansson agree on the headers object. */
static void check_headers(const char *text, int ok, const char *err, const obx_message *m)
{
    json_error_t je;
    json_t *j = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (ok) {
        if (!j) {
            if (jansson_limit(&je))
                return;
            fprintf(stderr, "scanner took headers jansson refuses (%s): %s\n", je.text, text);
            abort();
        }
        if (json_object_size(j) == m->header_count) { /* no duplicate keys */
            for (size_t i = 0; i < m->header_count; i++) {
                json_t *v = json_object_get(j, m->headers[i].key);
                if (!v ||
                    (json_is_string(v) && strcmp(json_string_value(v), m->headers[i].value))) {
                    fprintf(stderr, "header %zu (%s) differs from jansson's: %s\n", i,
                            m->headers[i].key, text);
                    abort();
                }
            }
        }
    } else if (j && strncmp(err, "headers are not valid JSON", 26) == 0 && json_is_object(j)) {
        /* jansson took it: only a NUL in a key or string may make the scanner refuse */
        const char *k;
        json_t *v;
        int nul = 0;
        json_object_foreach(j, k, v) nul |=
            json_is_string(v) && strlen(json_string_value(v)) != json_string_length(v);
        if (!nul && !strstr(err, "NUL")) {
            fprintf(stderr, "scanner refused headers jansson takes (%s): %s\n", err, text);
            abort();
        }
    }
    json_decref(j);
}

static void check_payload(const char *text, size_t len, int ok, const char *err)
{
    json_error_t je;
    json_t *j = json_loadb(text, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    int scanner_ok = ok || strncmp(err, "payload is not valid JSON", 25) != 0;
    if (scanner_ok && !j && !jansson_limit(&je)) {
        fprintf(stderr, "scanner took a payload jansson refuses (%s)\n", je.text);
        abort();
    }
    if (!scanner_ok && j && !strstr(err, "nested too deeply")) {
        fprintf(stderr, "scanner refused a payload jansson takes (%s)\n", err);
        abort();
    }
    json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!cfg)
        load_config();
    if (size < 1)
        return 0;
    payload_kind kind = (payload_kind)(data[0] % 3);
    const char *field[7] = {NULL, NULL, NULL, "order.created", "Order", "1", "t.${event_id}"};
    char *copy = malloc(size);
    memcpy(copy, data + 1, size - 1);
    copy[size - 1] = '\0';
    for (size_t i = 0, at = 0; i < 7 && at < size; i++) {
        field[i] = copy + at;
        at += strlen(copy + at) + 1;
    }
    event_fields f = {
        .event_id = "0b6f1c9e-1d2f-4e55-9c1b-2f6d3a1c8e01",
        .event_type = field[3],
        .aggregate_type = field[4],
        .aggregate_id = field[5],
        .payload = field[0],
        .headers = field[1],
        .destination = field[2],
        .payload_len = field[0] ? strlen(field[0]) : 0,
        .created_at_us = 1700000000000000LL,
        .attempt = 1,
    };

    arena a = {0};
    obx_message msg;
    const cfg_route *route = NULL;
    char err[512] = "";
    message_source src = {cfg, kind, &a};
    int ok = message_build(&src, &f, &msg, &route, err, sizeof err) == 0;
    if (ok) {
        if (!route || route->output_index >= cfg->output_count || !msg.destination ||
            !*msg.destination)
            abort();
        for (size_t i = 0; i < msg.header_count; i++)
            if (!msg.headers[i].key || !msg.headers[i].value)
                abort();
        const char *out = NULL;
        char rerr[512];
        if (route_render(field[6], &msg, &a, &out, rerr, sizeof rerr) == 0 && !out)
            abort();
    }
    if (kind == PAYLOAD_TEXT && field[0])
        check_payload(field[0], strlen(field[0]), ok, err);
    int headers_reached = ok || strncmp(err, "header", 6) == 0;
    if (field[1] && headers_reached)
        check_headers(field[1], ok, err, &msg);
    arena_free(&a);
    free(copy);
    return 0;
}
