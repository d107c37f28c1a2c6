/* Who holds an advisory lock the relay could not take (issue 54). Any role
 * that can log in may take any advisory lock key, the relay's too, and
 * keep it while its session lives: the cursor reader would wait as a
 * standby forever, partitions would stop being made, dead events would not
 * be forwarded. A holder running as the relay's own role is taken for
 * another relay (a standby waits for it, as before); any other holder is
 * not a relay and is named, in the log, /readyz and
 * outbox_relay_lock_squatted, while the relay keeps trying. */
#ifndef OBX_LOCK_HOLDER_H
#define OBX_LOCK_HOLDER_H

#include <libpq-fe.h>
#include <stdatomic.h>
#include <stddef.h>

typedef struct lock_holder {
    int pid;   /* 0: nobody else holds it now */
    int relay; /* it runs as this session's role: another relay */
    char role[64], database[64], application[64];
} lock_holder;

/* Finds a session other than conn's holding the advisory lock whose
 * arguments are key (SQL as pg_try_advisory_lock takes them: two int4
 * expressions when two_keys, else one bigint one), with params as $1...;
 * a holder that is not a relay first. 0 (h->pid 0 when none), or -1 with
 * err. */
int lock_holder_find(PGconn *conn, const char *key, int two_keys, int nparams,
                     const char *const *params, lock_holder *h, char *err, size_t err_size);

/* "pid 123 (role r, database d, application a)": room for the longest */
#define LOCK_HOLDER_TEXT 256
void lock_holder_text(const lock_holder *h, char *out, size_t size);

/* The advisory locks a relay takes, as outbox_relay_lock_squatted's
 * labels name them. */
typedef enum lock_kind { LOCK_CURSOR, LOCK_PARTITIONS, LOCK_DEAD_FORWARD, LOCK_KINDS } lock_kind;
extern const char *const lock_kind_names[LOCK_KINDS];

/* Each lock's holder that is not a relay, for /readyz and /metrics (in
 * relay_state). All zero is empty: no initialisation. */
typedef struct lock_squats {
    atomic_int busy; /* a spin lock over the fields below: written rarely, read per scrape */
    int pid[LOCK_KINDS];
    char who[LOCK_KINDS][LOCK_HOLDER_TEXT];
} lock_squats;

/* What holds kind's key now (h NULL or a relay: no squatter; s may be
 * NULL). Returns 1 when h is a squatter other than the one recorded (log
 * it), -1 when a recorded squatter is gone, 0 otherwise. */
int lock_squat_note(lock_squats *s, lock_kind kind, const lock_holder *h);

/* 1 with the squatter's text in who while kind's key is squatted, else 0. */
int lock_squat_read(lock_squats *s, lock_kind kind, char *who, size_t size);

#endif
