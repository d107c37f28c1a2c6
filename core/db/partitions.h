/* A time-partitioned outbox (relay.partitions): the table init-db makes,
 * range-partitioned on created_at, and the SQL functions that keep it
 * (partitions made ahead, old fully published ones retired). */
#ifndef OBX_PARTITIONS_H
#define OBX_PARTITIONS_H

#include <libpq-fe.h>

#include "config/config.h"
#include "db/lock_holder.h"

/* Is the outbox configured as partitioned? */
int partitions_on(const relay_config *cfg);

/* The partitioned table, created when missing (init-db runs it where the
 * plain table's CREATE would be). */
extern const char partitions_create_table[];

/* The functions that make and retire partitions, as init-db steps. */
extern const char *const partitions_function_steps[];
extern const size_t partitions_function_step_count;
/* their name suffixes ({n.SUFFIX}), NULL-terminated, for init-db's check */
extern const char *const partitions_function_suffixes[];

/* What the existing table is, against what cfg asks: -1 with why when
 * init-db must not install into it (a partitioned table not configured as
 * one, one partitioned on something else); 1 for a plain table configured
 * as partitioned (partition_convert.c); 0 otherwise. */
int partitions_check_table(PGconn *conn, const relay_config *cfg, char *why, size_t why_size);

/* Makes the partitions from the current span to `ahead` spans past it that
 * are missing. Returns how many were made, or -1 with why. When none were
 * made, *held (unless NULL) is the session holding the partitions' lock
 * (pid 0: none), which stops every other from making them. */
int partitions_make_ahead(PGconn *conn, const relay_config *cfg, lock_holder *held, char *why,
                          size_t why_size);

/* A retiring pass's lock wait: a partition in use is skipped until the
 * next pass rather than waited for. */
#define PARTITIONS_LOCK_TIMEOUT "SET lock_timeout = '1s'"

/* Runs before + part + after, before and after rendered for cfg; part is a
 * regclass as the server wrote it (quoted), put in as is, never rendered. */
PGresult *partitions_run_on(PGconn *conn, const relay_config *cfg, const char *before,
                            const char *part, const char *after);

/* Detaches part from the outbox concurrently (finalize: finishes a detach
 * left half done), with a longer lock wait than the pass's, which is set
 * again after it. */
PGresult *partitions_detach(PGconn *conn, const relay_config *cfg, const char *part, int finalize);

/* partitions_make_ahead for init-db: another session holding the lock is
 * waited for a few seconds, then named in why (-1): init-db never says it
 * succeeded having made no partition it should have. */
int partitions_init_ahead(PGconn *conn, const relay_config *cfg, char *why, size_t why_size);

/* partitions_make_ahead for a source's upkeep: logs what it made, or why
 * it could not (a holder of the lock that is no relay at every pass, noted
 * in squats, which may be NULL). */
void partitions_keep_ahead(PGconn *conn, const relay_config *cfg, lock_squats *squats);

#endif
