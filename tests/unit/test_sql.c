/*
 * SQL templates rendered for the configured table: identifiers quoted,
 * mapped column names, string literals, literal braces kept. How names
 * derived from the table ({n.*}) are spelled is kept in its own tests,
 * so a change there touches only them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "db/sql.h"

/* A config with the default column names (the only fields sql.c reads). */
static relay_config config_for(char *schema, char *table)
{
    relay_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.schema = schema;
    cfg.table = table;
    cfg.col = (cfg_columns){
        "id",         "event_id",      "aggregate_type", "aggregate_id", "event_type",
        "payload",    "headers",       "destination",    "created_at",   "available_at",
        "attempts",   "lease_owner",   "lease_until",    "published_at", "dead_at",
        "last_error", "aggregate_seq", "event_version"};
    return cfg;
}

static void expect_render(const relay_config *cfg, const char *tmpl, const char *want)
{
    char *sql = sql_render(cfg, tmpl);
    assert_string_equal(sql, want);
    free(sql);
}

static void test_table_and_schema_are_quoted(void **state)
{
    (void)state;
    relay_config cfg = config_for("public", "outbox");
    expect_render(&cfg, "SELECT 1 FROM {table}", "SELECT 1 FROM \"public\".\"outbox\"");
    expect_render(&cfg, "CREATE SCHEMA IF NOT EXISTS {schema}",
                  "CREATE SCHEMA IF NOT EXISTS \"public\"");
}

/* Case and spaces survive; a double quote is doubled. */
static void test_identifier_quoting(void **state)
{
    (void)state;
    relay_config cfg = config_for("App Data", "Out\"box");
    expect_render(&cfg, "{table}", "\"App Data\".\"Out\"\"box\"");
    char out[64];
    sql_quote_ident(out, sizeof out, "we\"ird\"\"name");
    assert_string_equal(out, "\"we\"\"ird\"\"\"\"name\"");
    sql_quote_ident(out, sizeof out, "");
    assert_string_equal(out, "\"\"");
}

static void test_columns_are_mapped_and_quoted(void **state)
{
    (void)state;
    relay_config cfg = config_for("public", "outbox");
    cfg.col.payload = "body";
    cfg.col.aggregate_id = "Order Id";
    expect_render(&cfg, "SELECT o.{c.id}, o.{c.payload}, {c.aggregate_id} FROM {table} o",
                  "SELECT o.\"id\", o.\"body\", \"Order Id\" FROM \"public\".\"outbox\" o");
    expect_render(&cfg, "{c.dead_at} {c.last_error} {c.lease_owner}",
                  "\"dead_at\" \"last_error\" \"lease_owner\"");
}

/* String literals: single quotes doubled. */
static void test_literals(void **state)
{
    (void)state;
    relay_config cfg = config_for("o'brien", "outbox");
    cfg.col.payload = "it's";
    expect_render(&cfg, "pg_notify({lit.table}, '')", "pg_notify('o''brien.outbox', '')");
    expect_render(&cfg, "format_type({lit.c.payload})", "format_type('it''s')");
}

/* Braces that are no placeholder stay as written (JSON defaults, arrays). */
static void test_literal_braces(void **state)
{
    (void)state;
    relay_config cfg = config_for("public", "outbox");
    expect_render(&cfg, "DEFAULT '{}'::jsonb", "DEFAULT '{}'::jsonb");
    expect_render(&cfg, "'{\"a\": {\"b\": 1}}'", "'{\"a\": {\"b\": 1}}'");
    expect_render(&cfg, "$1::bigint[] = '{1,2}' AND {c.id} > 0",
                  "$1::bigint[] = '{1,2}' AND \"id\" > 0");
    expect_render(&cfg, "unclosed { brace", "unclosed { brace");
    expect_render(&cfg, "", "");
}

/* ---- names derived from the table: spelling may change ---- */

static void test_derived_name(void **state)
{
    (void)state;
    relay_config cfg = config_for("public", "outbox");
    expect_render(&cfg, "CREATE INDEX {n._pending} ON {table}",
                  "CREATE INDEX \"outbox_pending\" ON \"public\".\"outbox\"");
}

/* A cursor shard: its row's key and the condition that picks its rows, on
 * the mapped column; unsharded, row 0 and every row. */
static void test_cursor_shard(void **state)
{
    (void)state;
    relay_config cfg = config_for("public", "outbox");
    cfg.cursor_shards = 1;
    expect_render(&cfg, "{cursor.shard}: {cursor.in_shard}", "0: true");
    cfg.cursor_shards = 8;
    cfg.cursor_shard = 5;
    cfg.col.aggregate_id = "agg";
    expect_render(&cfg, "{cursor.shard}: {cursor.in_shard}",
                  "13: (hashtext(o.\"agg\"::text) & 7) = 5");
}

static void test_derived_name_is_quoted(void **state)
{
    (void)state;
    relay_config cfg = config_for("public", "My\"Box");
    expect_render(&cfg, "{n._seq}", "\"My\"\"Box_seq\"");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_and_schema_are_quoted),
        cmocka_unit_test(test_identifier_quoting),
        cmocka_unit_test(test_columns_are_mapped_and_quoted),
        cmocka_unit_test(test_literals),
        cmocka_unit_test(test_literal_braces),
        cmocka_unit_test(test_derived_name),
        cmocka_unit_test(test_cursor_shard),
        cmocka_unit_test(test_derived_name_is_quoted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
