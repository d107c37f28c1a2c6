/* SQL text for the configured table, with every identifier quoted. */
#ifndef OBX_SQL_H
#define OBX_SQL_H

#include "config/config.h"

/* PostgreSQL's limit for identifiers and NOTIFY channels (NAMEDATALEN - 1). */
#define SQL_NAME_MAX 63

/*
 * Renders a SQL template for cfg. Placeholders:
 *   {table}     the schema-qualified table, quoted
 *   {schema}    the schema, quoted
 *   {c.NAME}    the mapped column NAME (see cfg_columns), quoted
 *   {n.SUFFIX}  the object name derived from the table (sql_derived_name), quoted
 *   {lit.table} the "schema.table" text as a SQL string literal (registry key)
 *   {lit.channel} the NOTIFY channel (sql_channel_name) as a SQL string literal
 *   {lit.c.NAME} the mapped column name as a SQL string literal
 *   {cursor.shard} the cursor table's row of this cursor shard (sql_cursor_shard_key)
 *   {cursor.in_shard} SQL condition: the outbox row "o" is in this cursor shard
 *               (true when the cursor is not sharded)
 *   {$}         a dollar-quote tag that occurs nowhere else in the text
 * Literals are safe whatever standard_conforming_strings says.
 * Returns a malloc'd string; aborts on an unknown placeholder (a bug).
 */
char *sql_render(const relay_config *cfg, const char *tmpl);

/* The hash whose low bits pick a row's cursor shard, as a template for
 * snprintf (%d: shards - 1), on the row o ("o." or ""): the layout index's
 * expression and every read's are this one text, as the planner matches
 * the index by it. */
#define SQL_CURSOR_HASH(o) "(hashtext(" o "{c.aggregate_id}::text) & %d)"

/* The key of the cursor shard's row: 0 unsharded, else shards + shard, so
 * that the rows of every layout (shard count) have keys of their own. */
int sql_cursor_shard_key(const relay_config *cfg);

/* Appends s as a quoted identifier to out (size cap). */
void sql_quote_ident(char *out, size_t cap, const char *s);

/*
 * The name of an object belonging to the table (index, function, trigger):
 * "<table><suffix>" when that fits in SQL_NAME_MAX bytes, otherwise a prefix
 * of the table name, "_", 8 hex digits of a hash of the whole table name,
 * and the suffix. Different tables or suffixes never share a name (up to a
 * 32-bit hash collision between two long names with the same prefix).
 */
void sql_derived_name(const relay_config *cfg, const char *suffix, char *out, size_t cap);

/*
 * The NOTIFY channel the insert trigger signals and the relay LISTENs on:
 * "schema.table" when it fits and neither part has a dot; otherwise a
 * prefix without dots plus a hash of both names (so it never equals a
 * plain one). Unquoted: pg_notify takes it as text, LISTEN needs it quoted.
 */
void sql_channel_name(const relay_config *cfg, char *out, size_t cap);

/* SQL condition: the row (prefix "o." or "") is held in flight by a relay:
 * a running transaction (a claim's: the lease is its row lock) has locked it,
 * its xmax being that transaction's id, or an older relay's lease column
 * says so. Takes no lock. Sessions of other roles are seen only with
 * pg_read_all_stats. */
#define SQL_HELD(o)                                                                                \
    "(coalesce(" o "{c.lease_until} >= now(), false) OR " o "xmax::text IN ("                      \
    "SELECT backend_xid::text FROM pg_stat_activity WHERE backend_xid IS NOT NULL))"

#endif
