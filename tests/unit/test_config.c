/*
 * config_load on small files: the defaults, every setting read, environment
 * expansion, and each error naming FILE:LINE without printing a secret.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "config/config.h"
#include "obx/driver.h"

static char dir[256];
static char path[512];
static char err[1024];

static int make_dir(void **state)
{
    (void)state;
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/obx-unit-config-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    return mkdtemp(dir) ? 0 : -1;
}

static int remove_dir(void **state)
{
    (void)state;
    unlink(path);
    return rmdir(dir);
}

/* Writes text to the test's file and loads it. */
static relay_config *load(const char *text)
{
    snprintf(path, sizeof path, "%s/relay.conf", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    err[0] = '\0';
    return config_load(path, err, sizeof err);
}

static relay_config *load_ok(const char *text)
{
    relay_config *cfg = load(text);
    if (!cfg)
        fail_msg("refused: %s", err);
    return cfg;
}

/* Loading text fails with "PATH:LINE: " followed by text containing want. */
static void expect_error(const char *text, int line, const char *want)
{
    relay_config *cfg = load(text);
    if (cfg) {
        config_free(cfg);
        fail_msg("loaded, expected an error at line %d about \"%s\"", line, want);
    }
    char prefix[600];
    snprintf(prefix, sizeof prefix, "%s:%d: ", path, line);
    if (strncmp(err, prefix, strlen(prefix)) != 0 || !strstr(err + strlen(prefix), want))
        fail_msg("error \"%s\", want \"%s...%s...\"", err, prefix, want);
}

#define MINIMAL                                                                                    \
    "database = { conninfo = \"dbname=app\"; };\n"                                                 \
    "outputs = ( { name = \"out\"; driver = \"memory\"; } );\n"

static void test_defaults(void **state)
{
    (void)state;
    relay_config *cfg = load_ok(MINIMAL);
    assert_string_equal(cfg->path, path);
    assert_string_equal(cfg->conninfo, "dbname=app");
    assert_string_equal(cfg->schema, "public");
    assert_string_equal(cfg->table, "outbox");
    assert_string_equal(cfg->col.id, "id");
    assert_string_equal(cfg->col.payload, "payload");
    assert_string_equal(cfg->col.last_error, "last_error");
    assert_int_equal(cfg->workers, 1);
    assert_int_equal(cfg->batch_size, 500);
    assert_int_equal(cfg->lease_ms, 30000);
    assert_int_equal(cfg->poll_interval_ms, 1000);
    assert_int_equal(cfg->shutdown_timeout_ms, 10000);
    assert_int_equal(cfg->ordering, ORDERING_AGGREGATE);
    assert_int_equal(cfg->on_dead, DEAD_SKIP);
    assert_int_equal(cfg->max_attempts, 10);
    assert_int_equal(cfg->backoff_initial_ms, 500);
    assert_int_equal(cfg->backoff_max_ms, 300000);
    assert_true(cfg->backoff_multiplier == 2.0);
    assert_true(cfg->backoff_jitter == 0.2);
    assert_int_equal(cfg->retention, RETAIN_MARK);
    assert_int_equal(cfg->retention_hours, 168);
    assert_int_equal(cfg->max_payload_bytes, 1 << 20);
    assert_null(cfg->drivers_dir);
    assert_int_equal(cfg->log_level, OBX_LOG_INFO);
    assert_int_equal(cfg->log_format, LOG_FORMAT_TEXT);
    assert_null(cfg->metrics_listen);
    assert_int_equal(cfg->output_count, 1);
    assert_string_equal(cfg->outputs[0].name, "out");
    assert_string_equal(cfg->outputs[0].driver, "memory");
    assert_int_equal(cfg->outputs[0].line, 2);
    assert_int_equal(cfg->outputs[0].option_count, 0);
    /* no routes: everything to the first output */
    assert_int_equal(cfg->route_count, 1);
    assert_string_equal(cfg->routes[0].event_type, "*");
    assert_string_equal(cfg->routes[0].aggregate_type, "*");
    assert_int_equal(cfg->routes[0].output_index, 0);
    assert_string_equal(cfg->routes[0].destination, "outbox.${aggregate_type}");
    config_free(cfg);
}

static void test_every_setting_read(void **state)
{
    (void)state;
    relay_config *cfg = load_ok(
        "database = { conninfo = \"host=db\"; schema = \"app\"; table = \"events\";\n"
        "  columns = { payload = \"body\"; event_type = \"kind\"; }; };\n"
        "relay = { workers = 4; batch_size = 50; lease_seconds = 7; poll_interval_ms = 20;\n"
        "  shutdown_timeout_ms = 0; ordering = \"none\"; on_dead = \"block\"; max_attempts = 3;\n"
        "  retention = \"delete\"; retention_hours = 0; max_payload_bytes = 4096;\n"
        "  drivers_dir = \"/opt/drivers\";\n"
        "  backoff = { initial_ms = 10; max_ms = 10; multiplier = 1.5; jitter = 0; }; };\n"
        "log = { level = \"debug\"; format = \"json\"; };\n"
        "metrics = { listen = \"127.0.0.1:9100\"; };\n"
        "outputs = ( { name = \"a\"; driver = \"kafka\"; }, { name = \"b\"; driver = \"mqtt\"; } "
        ");\n");
    assert_string_equal(cfg->schema, "app");
    assert_string_equal(cfg->table, "events");
    assert_string_equal(cfg->col.payload, "body");
    assert_string_equal(cfg->col.event_type, "kind");
    assert_string_equal(cfg->col.headers, "headers");
    assert_int_equal(cfg->workers, 4);
    assert_int_equal(cfg->batch_size, 50);
    assert_int_equal(cfg->lease_ms, 7000);
    assert_int_equal(cfg->poll_interval_ms, 20);
    assert_int_equal(cfg->shutdown_timeout_ms, 0);
    assert_int_equal(cfg->ordering, ORDERING_NONE);
    assert_int_equal(cfg->on_dead, DEAD_BLOCK);
    assert_int_equal(cfg->max_attempts, 3);
    assert_int_equal(cfg->retention, RETAIN_DELETE);
    assert_int_equal(cfg->retention_hours, 0);
    assert_int_equal(cfg->max_payload_bytes, 4096);
    assert_string_equal(cfg->drivers_dir, "/opt/drivers");
    assert_int_equal(cfg->backoff_initial_ms, 10);
    assert_int_equal(cfg->backoff_max_ms, 10);
    assert_true(cfg->backoff_multiplier == 1.5);
    assert_true(cfg->backoff_jitter == 0.0); /* an integer where a number goes */
    assert_int_equal(cfg->log_level, OBX_LOG_DEBUG);
    assert_int_equal(cfg->log_format, LOG_FORMAT_JSON);
    assert_string_equal(cfg->metrics_listen, "127.0.0.1:9100");
    assert_int_equal(cfg->output_count, 2);
    assert_string_equal(cfg->outputs[1].driver, "mqtt");
    config_free(cfg);
}

static void test_output_options_and_properties(void **state)
{
    (void)state;
    relay_config *cfg = load_ok("database = { conninfo = \"x\"; };\n"
                                "outputs = ( { name = \"k\"; driver = \"kafka\";\n"
                                "  options = {\n"
                                "    brokers = \"b:9092\";\n"
                                "    max_in_flight = 8;\n"
                                "    ratio = 0.5;\n"
                                "    idempotent = true;\n"
                                "    big = 10000000000L;\n"
                                "  };\n"
                                "  properties = ( [\"linger.ms\", \"5\"], [\"acks\", \"all\"] );\n"
                                "  one_per_aggregate = true;\n"
                                "} );\n");
    const cfg_output *o = &cfg->outputs[0];
    assert_int_equal(o->one_per_aggregate, 1);
    assert_int_equal(o->option_count, 5);
    const cfg_value *v = config_output_option(o, "brokers");
    assert_non_null(v);
    assert_int_equal(v->type, OBX_OPT_STRING);
    assert_string_equal(v->s, "b:9092");
    assert_int_equal(v->line, 4);
    v = config_output_option(o, "max_in_flight");
    assert_int_equal(v->type, OBX_OPT_INT);
    assert_int_equal(v->i, 8);
    v = config_output_option(o, "ratio");
    assert_int_equal(v->type, OBX_OPT_DOUBLE);
    assert_true(v->d == 0.5);
    v = config_output_option(o, "idempotent");
    assert_int_equal(v->type, OBX_OPT_BOOL);
    assert_int_equal(v->b, 1);
    v = config_output_option(o, "big");
    assert_int_equal(v->type, OBX_OPT_INT);
    assert_true(v->i == 10000000000LL);
    assert_int_equal(v->line, 8);
    assert_null(config_output_option(o, "absent"));
    assert_int_equal(o->property_count, 2);
    assert_string_equal(o->properties[0].key, "linger.ms");
    assert_string_equal(o->properties[0].value, "5");
    assert_string_equal(o->properties[1].key, "acks");
    assert_string_equal(o->properties[1].value, "all");
    config_free(cfg);
}

static void test_routes(void **state)
{
    (void)state;
    relay_config *cfg =
        load_ok("database = { conninfo = \"x\"; };\n"
                "outputs = ( { name = \"a\"; driver = \"memory\"; },\n"
                "            { name = \"b\"; driver = \"memory\"; } );\n"
                "routes = (\n"
                "  { event_type = \"order.*\"; output = \"b\";\n"
                "    destination = \"orders.${aggregate_id}.${event_type}.${event_id}\"; },\n"
                "  { aggregate_type = \"User\"; output = \"a\"; destination = \"users\"; },\n"
                "  { output = \"a\"; }\n"
                ");\n");
    assert_int_equal(cfg->route_count, 3);
    const cfg_route *r = cfg->routes;
    assert_string_equal(r[0].event_type, "order.*");
    assert_string_equal(r[0].aggregate_type, "*");
    assert_int_equal(r[0].output_index, 1);
    assert_string_equal(r[0].destination, "orders.${aggregate_id}.${event_type}.${event_id}");
    assert_int_equal(r[0].line, 5);
    assert_string_equal(r[1].event_type, "*");
    assert_string_equal(r[1].aggregate_type, "User");
    assert_int_equal(r[1].output_index, 0);
    assert_string_equal(r[2].destination, "outbox.${aggregate_type}");
    config_free(cfg);
}

/* With one output, a route may leave it out. */
static void test_route_defaults_to_the_only_output(void **state)
{
    (void)state;
    relay_config *cfg = load_ok(MINIMAL "routes = ( { destination = \"all\"; } );\n");
    assert_string_equal(cfg->routes[0].output, "out");
    assert_int_equal(cfg->routes[0].output_index, 0);
    config_free(cfg);
}

static void test_environment_expansion(void **state)
{
    (void)state;
    setenv("OBX_UNIT_HOST", "db.internal", 1);
    setenv("OBX_UNIT_EMPTY", "", 1);
    unsetenv("OBX_UNIT_UNSET");
    relay_config *cfg = load_ok(
        "database = { conninfo = \"host=${OBX_UNIT_HOST} port=${OBX_UNIT_UNSET:-5432}\";\n"
        "  table = \"${OBX_UNIT_EMPTY:-outbox2}\"; schema = \"${OBX_UNIT_HOST:-unused}\"; };\n"
        "outputs = ( { name = \"o\"; driver = \"memory\";\n"
        "  options = { url = \"amqp://${OBX_UNIT_HOST}\"; blank = \"${OBX_UNIT_UNSET:-}\";\n"
        "    key_template = \"${OBX_UNIT_HOST}/${aggregate_type}-${destination}\"; };\n"
        "  properties = ( [\"bootstrap\", \"${OBX_UNIT_HOST}:9092\"] ); } );\n"
        "routes = ( { destination = \"${OBX_UNIT_HOST}.${aggregate_type}\"; } );\n");
    assert_string_equal(cfg->conninfo, "host=db.internal port=5432");
    assert_string_equal(cfg->table, "outbox2"); /* empty counts as unset */
    assert_string_equal(cfg->schema, "db.internal");
    assert_string_equal(config_output_option(&cfg->outputs[0], "url")->s, "amqp://db.internal");
    assert_string_equal(config_output_option(&cfg->outputs[0], "blank")->s, "");
    /* a driver option's message fields are the driver's to fill (a template) */
    assert_string_equal(config_output_option(&cfg->outputs[0], "key_template")->s,
                        "db.internal/${aggregate_type}-${destination}");
    assert_string_equal(cfg->outputs[0].properties[0].value, "db.internal:9092");
    /* row fields in a destination are left for the router */
    assert_string_equal(cfg->routes[0].destination, "db.internal.${aggregate_type}");
    config_free(cfg);
}

static void test_environment_errors(void **state)
{
    (void)state;
    unsetenv("OBX_UNIT_UNSET");
    expect_error("database = {\n conninfo = \"host=${OBX_UNIT_UNSET}\"; };\n", 2,
                 "setting \"conninfo\": environment variable OBX_UNIT_UNSET is not set");
    expect_error("database = { conninfo = \"x\"; };\n"
                 "outputs = ( { name = \"o\"; driver = \"memory\";\n"
                 "  options = {\n"
                 "    url = \"${OBX_UNIT_UNSET\"; }; } );\n",
                 4, "unterminated ${");
    expect_error("database = { conninfo = \"x\"; };\n"
                 "outputs = ( { name = \"o\"; driver = \"memory\";\n"
                 "  options = {\n"
                 "    key_template = \"${aggregate_id}.${OBX_UNIT_UNSET}\"; }; } );\n",
                 4, "setting \"key_template\": environment variable OBX_UNIT_UNSET is not set");
}

/* Errors name the file and line; a secret in the config is never echoed. */
static void test_errors_name_file_and_line(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int line;
        const char *want;
    } cases[] = {
        {"database = { conninfo = \"x\"; ;\n", 1, "syntax error"},
        {MINIMAL "\n\nbogus = 1;\n", 5, "unknown setting \"bogus\" in the top level"},
        {"database = {\n};\n"
         "outputs = ( { name = \"o\"; driver = \"m\"; } );\n",
         1, "database.conninfo is required"},
        {MINIMAL "relay = {\n workers = 0; };\n", 4, "\"workers\" must be between 1 and 256"},
        {MINIMAL "relay = {\n workers = \"2\"; };\n", 4, "\"workers\" must be an integer"},
        {MINIMAL "relay = { batch_size = 100001; };\n", 3, "must be between 1 and 100000"},
        {MINIMAL "relay = { polling = 1; };\n", 3, "unknown setting \"polling\" in relay"},
        {MINIMAL "relay = { partitions = {\n interval = \"1 month\"; }; };\n", 4,
         "relay.partitions.interval \"1 month\": expected a count and a unit, such as \"1 day\""},
        {MINIMAL "relay = { partitions = { interval = \"1 day\";\n keep = \"7\"; }; };\n", 4,
         "relay.partitions.keep \"7\": expected a count and a unit"},
        {MINIMAL "relay = { partitions = {\n ahead = 3; }; };\n", 3,
         "relay.partitions needs interval"},
        {MINIMAL "relay = { partitions = { interval = \"1 day\";\n ahead = 0; }; };\n", 4,
         "\"ahead\" must be between 1 and 1000"},
        {MINIMAL "relay = { source = \"wal\";\n partitions = { interval = \"1 day\"; keep = \"2 "
                 "days\"; }; };\n",
         4, "relay.partitions.keep needs source = \"poll\""},
        {MINIMAL "relay = {\n cursor = { shards = 2; }; };\n", 4,
         "relay.cursor needs source = \"cursor\""},
        {MINIMAL "relay = { source = \"cursor\";\n cursor = { shards = 3; }; };\n", 4,
         "relay.cursor.shards must be a power of two"},
        {MINIMAL "relay = { source = \"cursor\";\n cursor = { shards = 4; shard = 4; }; };\n", 4,
         "relay.cursor.shard must be below shards"},
        {MINIMAL "relay = { source = \"cursor\"; cursor = {\n shards = 2048; }; };\n", 4,
         "\"shards\" must be between 1 and 1024"},
        {MINIMAL "relay = {\n ordering = \"random\"; };\n", 4,
         "\"ordering\" is \"random\"; expected one of \"aggregate\", \"none\""},
        {MINIMAL "relay = { backoff = {\n jitter = 1.5; }; };\n", 4,
         "\"jitter\" must be between 0 and 1"},
        {MINIMAL "relay = { backoff = {\n multiplier = \"2\"; }; };\n", 4, "must be a number"},
        {MINIMAL "relay = { backoff = {\n initial_ms = 500; max_ms = 100; }; };\n", 3,
         "max_ms is below initial_ms"},
        {MINIMAL "relay = { backoff = { factor = 2; }; };\n", 3,
         "unknown setting \"factor\" in relay.backoff"},
        {MINIMAL "log = { level = \"trace\"; };\n", 3, "expected one of \"error\", \"warn\""},
        {MINIMAL "metrics = { port = 1; };\n", 3, "unknown setting \"port\" in metrics"},
        {"database = { conninfo = \"x\";\n table = \"\"; };\n", 2,
         "database.table must be 1 to 63 characters"},
        {"database = { conninfo = \"x\";\n schema = "
         "\"a234567890123456789012345678901234567890123456789012345678901234\"; };\n",
         2, "database.schema must be 1 to 63 characters"},
        {"database = { conninfo = \"x\";\n table = \"a\\nb\"; };\n", 2,
         "contains a control character"},
        {"database = { conninfo = \"x\";\n columns = \"id\"; };\n", 2,
         "database.columns must be a group"},
        {"database = { conninfo = \"x\"; columns = {\n ident = \"x\"; }; };\n", 2,
         "unknown setting \"ident\" in database.columns"},
        {"database = { conninfo = \"x\"; columns = {\n payload = \"\"; }; };\n", 2,
         "column name must be 1 to 63 characters"},
        {"database = { conninfo = \"x\"; };\noutputs = ( );\n", 2,
         "outputs must be a non-empty list"},
        {"database = { conninfo = \"x\"; };\noutputs = (\n { name = \"o\"; } );\n", 3,
         "output needs both name and driver"},
        {"database = { conninfo = \"x\"; };\noutputs = (\n \"o\" );\n", 3,
         "each output must be a group"},
        {"database = { conninfo = \"x\"; };\n"
         "outputs = ( { name = \"o\"; driver = \"m\"; },\n"
         " {\n name = \"o\"; driver = \"m\"; } );\n",
         4, "output name \"o\" is used twice"},
        {"database = { conninfo = \"x\"; };\n"
         "outputs = ( { name = \"o\"; driver = \"m\";\n topic = \"t\"; } );\n",
         3, "unknown setting \"topic\" in output"},
        {"database = { conninfo = \"x\"; };\n"
         "outputs = ( { name = \"o\"; driver = \"m\";\n options = ( 1 ); } );\n",
         3, "options must be a group"},
        {"database = { conninfo = \"x\"; };\n"
         "outputs = ( { name = \"o\"; driver = \"m\"; options = {\n hosts = [ \"a\" ]; }; } );\n",
         3, "option \"hosts\" must be a string, number or boolean"},
        {"database = { conninfo = \"x\"; };\n"
         "outputs = ( { name = \"o\"; driver = \"m\";\n properties = \"acks=all\"; } );\n",
         3, "properties must be a list"},
        {"database = { conninfo = \"x\"; };\n"
         "outputs = ( { name = \"o\"; driver = \"m\"; properties = (\n [\"acks\"] ); } );\n",
         3, "each property must be a [\"key\", \"value\"] pair of strings"},
        {MINIMAL "routes = ( );\n", 3, "routes must be a non-empty list"},
        {MINIMAL "routes = (\n { output = \"nowhere\"; } );\n", 4,
         "route names output \"nowhere\", which is not defined"},
        /* neither a row field nor a set environment variable */
        {MINIMAL "routes = ( {\n destination = \"t.${payload}\"; } );\n", 4,
         "setting \"destination\": ${payload} is neither a row field"},
        {MINIMAL "routes = ( {\n output = \"out\"; to = \"x\"; } );\n", 4,
         "unknown setting \"to\" in route"},
        {MINIMAL "routes = ( { output = \"out\";\n headers = ( \"a\" ); } );\n", 4,
         "route headers must be a group of name = \"glob\" pairs"},
        {MINIMAL "routes = ( { output = \"out\"; headers = {\n tier = 1; }; } );\n", 4,
         "route header tier must be a string (a glob on its value)"},
        {MINIMAL "routes = (\n { event_type = \"debug.*\"; drop = true; output = \"out\"; } );\n",
         4, "a route with drop = true takes no output and no destination"},
        {MINIMAL "routes = ( {\n drop = \"yes\"; } );\n", 4,
         "setting \"drop\" must be true or false"},
        {MINIMAL "routes = ( { output = \"out\";\n dead_letter = { output = \"nope\"; }; } );\n", 4,
         "dead_letter names output \"nope\", which is not defined"},
        {MINIMAL "routes = ( { output = \"out\";\n dead_letter = { destination = \"d\"; }; } );\n",
         4, "dead_letter needs an output"},
        {MINIMAL "routes = ( { output = \"out\";\n drop_headers = { a = \"b\"; }; } );\n", 4,
         "drop_headers must be a list of globs on header names"},
        {MINIMAL "routes = ( { output = \"out\";\n rename_headers = [ \"a\" ]; } );\n", 4,
         "rename_headers must be a group of name = \"value\" pairs"},
        {MINIMAL "routes = ( { output = \"out\"; set_headers = {\n a = 1; }; } );\n", 4,
         "set_headers: each entry must be a non-empty string"},
        {MINIMAL "routes = ( { output = \"out\"; set_headers = {\n a = \"${payload}\"; }; } );\n",
         4, "set_headers \"${payload}\": unknown field; use ${event_type}"},
        {MINIMAL "dead_letter = {\n destination = \"d\"; };\n", 3, "dead_letter needs an output"},
        {MINIMAL "dead_letter = { destination = \"d\";\n output = \"gone\"; };\n", 4,
         "dead_letter names output \"gone\", which is not defined"},
        {MINIMAL "dead_letter = ( \"out\" );\n", 3, "dead_letter must be a group"},
        {MINIMAL "dead_letter = { output = \"out\";\n destination = \"d.${payload}\"; };\n", 4,
         "setting \"destination\": ${payload} is neither a row field"},
        {"database = { conninfo = \"x\"; };\n"
         "outputs = ( { name = \"a\"; driver = \"m\"; }, { name = \"b\"; driver = \"m\"; } );\n"
         "routes = (\n { destination = \"d\"; } );\n",
         4, "route needs an output (there are several)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_error(cases[i].text, cases[i].line, cases[i].want);
}

/* relay.partitions: spans kept as PostgreSQL interval text; keep follows
 * retention_hours when unset; no section, no partitions. */
static void test_partitions(void **state)
{
    (void)state;
    relay_config *cfg = load_ok(MINIMAL "relay = { partitions = { interval = \"2 days\";"
                                        " ahead = 5; keep = \"1 week\"; }; };\n");
    assert_string_equal(cfg->partition_interval, "2 days");
    assert_int_equal(cfg->partition_ahead, 5);
    assert_string_equal(cfg->partition_keep, "1 week");
    config_free(cfg);
    cfg = load_ok(MINIMAL
                  "relay = { retention_hours = 48; partitions = { interval = \"1 hour\"; }; };\n");
    assert_string_equal(cfg->partition_interval, "1 hour");
    assert_int_equal(cfg->partition_ahead, 3);
    assert_string_equal(cfg->partition_keep, "48 hours");
    config_free(cfg);
    cfg = load_ok(MINIMAL
                  "relay = { retention_hours = 0; partitions = { interval = \"1 day\"; }; };\n");
    assert_null(cfg->partition_keep);
    config_free(cfg);
    cfg = load_ok(MINIMAL);
    assert_null(cfg->partition_interval);
    config_free(cfg);
}

static void test_missing_file(void **state)
{
    (void)state;
    char missing[600];
    snprintf(missing, sizeof missing, "%s/absent.conf", dir);
    assert_null(config_load(missing, err, sizeof err));
    char want[700];
    snprintf(want, sizeof want, "%s: cannot read config file", missing);
    assert_string_equal(err, want);
}

static void test_secrets_not_in_errors(void **state)
{
    (void)state;
    expect_error("database = { conninfo = \"password=hunter2\";\n schema = \"\"; };\n", 2,
                 "database.schema");
    assert_null(strstr(err, "hunter2"));
    expect_error("database = {\n conninfo = 5; };\n", 2, "\"conninfo\" must be a string");
    setenv("OBX_UNIT_SECRET", "hunter2", 1);
    expect_error("database = { conninfo = \"password=${OBX_UNIT_SECRET}\"; };\n"
                 "relay = {\n workers = -1; };\n"
                 "outputs = ( { name = \"o\"; driver = \"m\"; } );\n",
                 3, "workers");
    assert_null(strstr(err, "hunter2"));
}

/* A config anyone may write is refused: it chooses the drivers loaded. */
static void test_world_writable_refused(void **state)
{
    (void)state;
    relay_config *cfg = load_ok(MINIMAL);
    config_free(cfg);
    assert_int_equal(chmod(path, 0666), 0);
    err[0] = '\0';
    assert_null(config_load(path, err, sizeof err));
    assert_non_null(strstr(err, "the config file is writable by every user (mode 666)"));
    assert_int_equal(chmod(path, 0644), 0);
}

/* @include is read beside the config file, not from the working directory. */
static void test_include_beside_the_file(void **state)
{
    (void)state;
    char part[600];
    snprintf(part, sizeof part, "%s/part.cfg", dir);
    FILE *f = fopen(part, "w");
    assert_non_null(f);
    fputs("relay = { workers = 7; };\n", f);
    fclose(f);
    char here[1024];
    assert_non_null(getcwd(here, sizeof here));
    assert_int_equal(chdir("/"), 0);
    relay_config *cfg = load(MINIMAL "@include \"part.cfg\"\n");
    assert_int_equal(chdir(here), 0);
    unlink(part);
    if (!cfg)
        fail_msg("refused: %s", err);
    assert_int_equal(cfg->workers, 7);
    config_free(cfg);
}

/* A file the config includes that anyone may write is refused as the
 * config itself would be, at any depth. */
static void test_world_writable_include_refused(void **state)
{
    (void)state;
    char outer[600], inner[600];
    snprintf(outer, sizeof outer, "%s/outer.cfg", dir);
    snprintf(inner, sizeof inner, "%s/inner.cfg", dir);
    FILE *f = fopen(outer, "w");
    assert_non_null(f);
    fputs("  @include \"inner.cfg\"\n", f);
    fclose(f);
    f = fopen(inner, "w");
    assert_non_null(f);
    fputs("relay = { workers = 7; };\n", f);
    fclose(f);
    assert_int_equal(chmod(inner, 0666), 0);
    relay_config *cfg = load(MINIMAL "@include \"outer.cfg\"\n");
    assert_null(cfg);
    assert_non_null(strstr(err, "inner.cfg: the config file is writable by every user (mode 666)"));
    assert_int_equal(chmod(inner, 0644), 0);
    cfg = load(MINIMAL "@include \"outer.cfg\"\n");
    if (!cfg)
        fail_msg("refused: %s", err);
    assert_int_equal(cfg->workers, 7);
    config_free(cfg);
    unlink(outer);
    unlink(inner);
}

/* sources: each entry's database and relay settings over the top level's,
 * the rest shared; config_load takes one by name. */
static void test_sources(void **state)
{
    (void)state;
    static const char text[] =
        "database = { conninfo = \"dbname=app\"; table = \"events\"; };\n"
        "relay = { workers = 3; batch_size = 50; };\n"
        "outputs = ( { name = \"out\"; driver = \"memory\"; } );\n"
        "sources = (\n"
        "  { name = \"orders\"; },\n"
        "  { name = \"billing\"; database = { conninfo = \"dbname=billing\"; };\n"
        "    relay = { workers = 1; source = \"wal\"; }; }\n"
        ");\n";
    assert_null(load(text)); /* two sources: config_load wants a name */
    assert_non_null(strstr(err, "lists 2 sources (orders, billing): choose one with --outbox"));
    size_t count = 0;
    relay_config **all = config_load_all(path, &count, err, sizeof err);
    if (!all)
        fail_msg("refused: %s", err);
    assert_int_equal(count, 2);
    assert_string_equal(all[0]->source_name, "orders");
    assert_string_equal(all[0]->conninfo, "dbname=app");
    assert_int_equal(all[0]->workers, 3);
    assert_int_equal(all[0]->source, SOURCE_POLL);
    assert_string_equal(all[1]->source_name, "billing");
    assert_string_equal(all[1]->conninfo, "dbname=billing");
    assert_string_equal(all[1]->table, "events"); /* not overridden: the top level's */
    assert_int_equal(all[1]->workers, 1);
    assert_int_equal(all[1]->batch_size, 50);
    assert_int_equal(all[1]->source, SOURCE_WAL);
    assert_string_equal(all[1]->wal_slot, "events_relay"); /* derived after the override */
    assert_int_equal(all[1]->output_count, 1);
    config_free_all(all, count);
    relay_config *one = config_load_source(path, "billing", err, sizeof err);
    assert_non_null(one);
    assert_string_equal(one->conninfo, "dbname=billing");
    config_free(one);
    assert_null(config_load_source(path, "nosuch", err, sizeof err));
    assert_non_null(strstr(err, "no source named \"nosuch\" (its sources: orders, billing)"));
    /* a file without sources: one config, no name */
    relay_config *plain = load_ok(MINIMAL);
    assert_null(plain->source_name);
    config_free(plain);
}

static void test_sources_refused(void **state)
{
    (void)state;
    expect_error(MINIMAL "sources = ();\n", 3, "sources must be a non-empty list");
    expect_error(MINIMAL "sources = ( { name = \"a\"; log = { level = \"debug\"; }; } );\n", 3,
                 "unknown setting \"log\" in a source of sources");
    expect_error(MINIMAL "sources = ( { relay = { workers = 2; }; } );\n", 3, "has no name");
    expect_error(MINIMAL "sources = ( { name = \"a\";\n relay = { workers = 0; }; } );\n", 4,
                 "setting \"workers\" must be between 1 and 256");
    expect_error(MINIMAL "sources = ( { name = \"a\"; },\n { name = \"a\"; database = { conninfo = "
                         "\"dbname=b\"; }; } );\n",
                 4, "sources a and a have the same name");
    expect_error(MINIMAL "sources = ( { name = \"a\"; },\n { name = \"b\"; } );\n", 4,
                 "sources a and b relay the same table");
    expect_error(MINIMAL "sources = ( { name = \"a\"; relay = { source = \"wal\"; }; },\n { name = "
                         "\"b\"; database = { table = \"t2\"; }; relay = { source = \"wal\"; wal = "
                         "{ slot = \"outbox_relay\"; }; }; } );\n",
                 4, "name the same slot");
    expect_error(MINIMAL "sources = ( { name = \"a b\"; } );\n", 3, "source name \"a b\"");
    expect_error(MINIMAL "sources = ( { name = \"a\"; relay = { source = \"cursor\"; cursor = { "
                         "shards = 2; }; }; },\n { name = \"b\"; relay = { source = \"cursor\"; "
                         "cursor = { shards = 4; shard = 1; }; }; } );\n",
                 4, "sources a and b relay the same table");
}

/* Two shards of a cursor's layout in one file share the table. */
static void test_cursor_shards_share_a_table(void **state)
{
    (void)state;
    relay_config *one =
        load(MINIMAL "relay = { source = \"cursor\"; };\n"
                     "sources = ( { name = \"s0\"; relay = { cursor = { shards = 2; "
                     "}; }; },\n { name = \"s1\"; relay = { cursor = { shards = 2; "
                     "shard = 1; }; }; } );\n");
    assert_null(one); /* two sources: config_load wants a name */
    size_t count = 0;
    relay_config **all = config_load_all(path, &count, err, sizeof err);
    if (!all)
        fail_msg("refused: %s", err);
    assert_int_equal(count, 2);
    assert_int_equal(all[0]->cursor_shards, 2);
    assert_int_equal(all[0]->cursor_shard, 0);
    assert_int_equal(all[1]->cursor_shard, 1);
    config_free_all(all, count);
}

/* Fan-out: the source copies through the fanout output, each target gets a
 * poll source over its own table with the routes that name it. */
static void test_fanout(void **state)
{
    (void)state;
    static const char text[] =
        "database = { conninfo = \"dbname=app\"; };\n"
        "relay = { source = \"wal\"; };\n"
        "outputs = ( { name = \"k\"; driver = \"memory\"; }, { name = \"r\"; driver = \"memory\"; "
        "},\n"
        "            { name = \"m\"; driver = \"memory\"; } );\n"
        "routes = ( { event_type = \"a.*\"; output = [\"k\", \"r\"]; destination = "
        "\"t.${event_type}\";\n"
        "             drop_headers = [\"x-*\"]; },\n"
        "           { event_type = \"b.*\"; output = \"m\"; },\n"
        "           { output = [\"r\", \"m\"]; destination = \"rest\"; } );\n";
    relay_config *own = load_ok(text); /* config_load: the source the file lists, not its targets */
    assert_string_equal(own->source_name, "outbox");
    assert_int_equal(own->output_count, 4);
    assert_string_equal(own->outputs[3].name, "_fanout");
    assert_string_equal(own->outputs[3].driver, "fanout");
    assert_string_equal(own->routes[0].output, "_fanout");
    assert_string_equal(own->routes[0].destination, "k,r");
    assert_int_equal(own->routes[0].shape_count, 0); /* the copy goes as the row is */
    assert_string_equal(own->routes[1].output, "m");
    assert_string_equal(own->routes[2].destination, "r,m");
    config_free(own);
    size_t count = 0;
    relay_config **all = config_load_all(path, &count, err, sizeof err);
    if (!all)
        fail_msg("refused: %s", err);
    assert_int_equal(count, 4); /* the source, then k, r and m in order of mention */
    const char *names[] = {"outbox", "outbox.k", "outbox.r", "outbox.m"};
    const char *tables[] = {"outbox", "outbox_to_k", "outbox_to_r", "outbox_to_m"};
    for (size_t i = 0; i < count; i++) {
        assert_string_equal(all[i]->source_name, names[i]);
        assert_string_equal(all[i]->table, tables[i]);
    }
    const relay_config *r = all[2];
    assert_int_equal(r->source, SOURCE_POLL);
    assert_string_equal(r->fanout_of, "outbox");
    assert_int_equal(r->route_count, 2); /* the two fan-out routes naming r */
    assert_string_equal(r->routes[0].output, "r");
    assert_string_equal(r->routes[0].destination, "t.${event_type}");
    assert_int_equal(r->routes[0].shape_count, 1);
    assert_string_equal(r->routes[1].destination, "rest");
    assert_int_equal(all[1]->route_count, 1);
    config_free_all(all, count);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_every_setting_read),
        cmocka_unit_test(test_output_options_and_properties),
        cmocka_unit_test(test_routes),
        cmocka_unit_test(test_route_defaults_to_the_only_output),
        cmocka_unit_test(test_environment_expansion),
        cmocka_unit_test(test_environment_errors),
        cmocka_unit_test(test_errors_name_file_and_line),
        cmocka_unit_test(test_partitions),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_secrets_not_in_errors),
        cmocka_unit_test(test_world_writable_refused),
        cmocka_unit_test(test_world_writable_include_refused),
        cmocka_unit_test(test_include_beside_the_file),
        cmocka_unit_test(test_sources),
        cmocka_unit_test(test_sources_refused),
        cmocka_unit_test(test_cursor_shards_share_a_table),
        cmocka_unit_test(test_fanout),
    };
    return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
