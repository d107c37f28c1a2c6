/* SQL text for the configured table, with every identifier quoted. */
#ifndef OBX_SQL_H
#define OBX_SQL_H

#include "config.h"

/*
 * Renders a SQL template for cfg. Placeholders:
 *   {table}     the schema-qualified table, quoted
 *   {schema}    the schema, quoted
 *   {c.NAME}    the mapped column NAME (see cfg_columns), quoted
 *   {n.SUFFIX}  an identifier derived from the table name: "<table>SUFFIX", quoted
 *   {lit.table} the "schema.table" text as a SQL string literal (e.g. a channel name)
 *   {lit.c.NAME} the mapped column name as a SQL string literal
 * Returns a malloc'd string; aborts on an unknown placeholder (a bug).
 */
char *sql_render(const relay_config *cfg, const char *tmpl);

/* Appends s as a quoted identifier / string literal to out (size cap). */
void sql_quote_ident(char *out, size_t cap, const char *s);

#endif
