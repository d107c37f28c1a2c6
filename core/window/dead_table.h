/* The dead-letter table of the sources that keep no state in the outbox
 * (WAL and cursor mode): the one write per failed event, `requeue`, and
 * the rows the dead_letter output reads. */
#ifndef OBX_DEAD_TABLE_H
#define OBX_DEAD_TABLE_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stdint.h>

#include "config/config.h"
#include "event/event_row.h"

/* Writes (or updates) the event's dead-letter row. Returns 0, -1 with err,
 * or -2 when the row's own data was refused (a field that does not fit its
 * column's type): then dead_table_insert_raw stores it. */
int dead_table_insert(PGconn *conn, const relay_config *cfg, const event_row *row, unsigned attempts,
                    const char *error, uint64_t commit_lsn, char *err, size_t err_size);

/* The dead letter of an event whose fields the table's columns refused:
 * every field as it came, as valid UTF-8, in a JSON object in dl_raw; the
 * typed columns NULL, the refusal added to the error. Never requeued by
 * `requeue` (an operator reads dl_raw). Returns 0 or -1 with err. */
int dead_table_insert_raw(PGconn *conn, const relay_config *cfg, const event_row *row,
                        unsigned attempts, const char *error, const char *refusal,
                        uint64_t commit_lsn, char *err, size_t err_size);


/* `requeue` of the dead-letter table; an exit code. */
int dead_table_requeue(PGconn *conn, const relay_config *cfg, int all, char **ids, int count);

/* source_kind.dead_events of a source whose dead events are all in the
 * dead-letter table (WAL and cursor mode). */
extern const char dead_table_events_sql[];

#endif
