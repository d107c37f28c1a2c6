/* What an operator types on the command line and the database reads: event
 * ids, times and intervals, checked first so that a typo is one clear line,
 * never a PostgreSQL error. */
#ifndef OBX_OPERATOR_ARGS_H
#define OBX_OPERATOR_ARGS_H

#include <libpq-fe.h>
#include <stddef.h>

/* 1 when text is a UUID as PostgreSQL reads one: 32 hex digits, a hyphen
 * allowed after any group of four, the whole maybe in braces. */
int arg_is_uuid(const char *text);

/* Every ids[i] a UUID: 0; else says which is not on stderr, as
 * "outbox-relay COMMAND: ...", and returns -1. */
int arg_check_event_ids(const char *command, char *const *ids, int count);

/* option's TIME as a timestamptz text in out: ISO 8601 ('2026-12-01T10:00Z'),
 * any form PostgreSQL reads ('2026-12-01 10:00', 'yesterday'), or a
 * relative one ('1 hour ago', '2 days 3 hours ago'). 0, or -1 with one
 * line naming the accepted forms in err. */
int arg_time(PGconn *conn, const char *option, const char *text, char *out, size_t out_size,
             char *err, size_t err_size);

/* option's INTERVAL ('7 days', '12 hours'), positive: 0, or -1 with err. */
int arg_interval(PGconn *conn, const char *option, const char *text, char *err, size_t err_size);

#endif
