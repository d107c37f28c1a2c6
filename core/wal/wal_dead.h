/* WAL mode's dead letters: the one write per failed event, and the status
 * and requeue commands over them and the slot. */
#ifndef OBX_WAL_DEAD_H
#define OBX_WAL_DEAD_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stdint.h>

#include "config.h"
#include "wal_decode.h"

/* Writes (or updates) the event's dead-letter row. Returns 0, -1 with err,
 * or -2 when the row's own data was refused (a field that does not fit its
 * column's type): then wal_dead_insert_raw stores it. */
int wal_dead_insert(PGconn *conn, const relay_config *cfg, const wal_row *row, unsigned attempts,
                    const char *error, uint64_t commit_lsn, char *err, size_t err_size);

/* The dead letter of an event whose fields the table's columns refused:
 * every field as it came, as valid UTF-8, in a JSON object in dl_raw; the
 * typed columns NULL, the refusal added to the error. Never requeued by
 * `requeue` (an operator reads dl_raw). Returns 0 or -1 with err. */
int wal_dead_insert_raw(PGconn *conn, const relay_config *cfg, const wal_row *row,
                        unsigned attempts, const char *error, const char *refusal,
                        uint64_t commit_lsn, char *err, size_t err_size);

/* The slot's lag: WAL bytes held past the confirmed position, and whether
 * the slot is lost. Returns 0 (lost set to 1 when invalidated), 1 when the
 * slot does not exist, -1 with err. */
int wal_slot_lag(PGconn *conn, const relay_config *cfg, long long *bytes, int *lost, char *err,
                 size_t err_size);

/* `status` and `requeue` in WAL mode; exit codes. */
int wal_command_status(PGconn *conn, const relay_config *cfg, json_t *json);
int wal_command_requeue(PGconn *conn, const relay_config *cfg, int all, char **ids, int count);

#endif
