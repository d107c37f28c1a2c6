/* Cursor mode's reader session: the rows past a place in the cursor's order
 * that no running transaction can still add to, the place kept in the
 * cursor table, and the lock that makes one relay the reader. */
#ifndef OBX_CURSOR_READ_H
#define OBX_CURSOR_READ_H

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "cursor/cursor_place.h"
#include "db/lock_holder.h"
#include "event/event_row.h"

typedef struct cursor_reader {
    const relay_config *cfg;
    PGconn *conn;
    char *fetch_sql, *save_sql, *load_sql;
    int listening;      /* LISTENs on the outbox's channel */
    lock_holder holder; /* after READER_BUSY: who holds the reader's lock (pid 0: unknown) */
} cursor_reader;

typedef enum { READER_OPEN, READER_BUSY, READER_RETRY } reader_open_result;

void cursor_reader_init(cursor_reader *r, const relay_config *cfg);
void cursor_reader_free(cursor_reader *r);

/* Connects, takes the reader's lock (READER_BUSY: another session holds
 * it, r->holder says which), LISTENs, and reads the saved place into *at. READER_RETRY with err. */
reader_open_result cursor_reader_open(cursor_reader *r, cursor_place *at, char *err,
                                      size_t err_size);
void cursor_reader_close(cursor_reader *r);

/* Up to limit rows past *after, in order: rows[i] (owned by the caller) at
 * places[i]. Returns how many, or -1 with err (the session is lost). */
int cursor_reader_fetch(cursor_reader *r, const cursor_place *after, int limit, event_row **rows,
                        cursor_place *places, char *err, size_t err_size);

/* Saves the place every row up to which is finished. 0, or -1 with err. */
int cursor_reader_save(cursor_reader *r, const cursor_place *at, char *err, size_t err_size);

/* LISTEN (on) or UNLISTEN. A listening session is woken, and runs a
 * transaction, for every notifying commit: while rows flow the reader looks
 * often anyway, so it listens only while idle. 0, or -1 with err. */
int cursor_reader_listen(cursor_reader *r, int on, char *err, size_t err_size);

/* Waits up to ms for a NOTIFY: 1 woken, 0 not, -1 lost. */
int cursor_reader_wait(cursor_reader *r, int ms);

#endif
