/* WAL mode's window: the committed transactions read from the slot and not
 * yet confirmed, their events and each event's state. It decides what may
 * be sent (an aggregate's next event only once its predecessor is finished,
 * with ordering on) and up to which commit every event is finished: the
 * position confirmed to the slot. One thread owns it. */
#ifndef OBX_WAL_WINDOW_H
#define OBX_WAL_WINDOW_H

#include <stddef.h>
#include <stdint.h>

#include "wal_decode.h"

typedef enum {
    EV_BLOCKED,   /* behind an unfinished event of its aggregate */
    EV_READY,     /* may be sent */
    EV_IN_FLIGHT, /* offered to its driver: a completion is due */
    EV_WAITING,   /* failed, retried at due_ms */
    EV_DONE,      /* acknowledged or dead-lettered */
} wal_event_state;

typedef struct wal_txn wal_txn;
typedef struct wal_agg wal_agg;

typedef struct wal_event {
    uint64_t seq; /* position in the window; the token names it */
    wal_row *row; /* freed once finished */
    wal_txn *txn;
    wal_agg *agg;                /* ordering on: its aggregate's queue */
    struct wal_event *next_same; /* the next event of its aggregate */
    struct wal_event *next_list; /* in the ready or waiting list */
    wal_event_state state;
    unsigned attempt;  /* attempts made so far */
    long long due_ms;  /* EV_WAITING: when to retry */
    long long sent_ms; /* when last offered (monotonic): the publish duration */
    uint32_t sends;    /* how many times offered: stale completions are ignored */
    size_t bytes;      /* its row's, counted in the window until finished */
    size_t output;
    const cfg_route *route; /* where its last send went (the send's generation) */
} wal_event;

typedef struct wal_window {
    int ordered;
    wal_txn *first, *last; /* unconfirmed transactions in commit order */
    wal_event **ring;      /* events by seq - base_seq */
    size_t ring_cap, ring_len;
    uint64_t base_seq, next_seq;
    wal_agg **buckets; /* aggregates with unfinished events */
    size_t bucket_count;
    wal_event *ready_head, *ready_tail;
    wal_event *waiting;
    long unfinished; /* events not yet finished */
    size_t bytes;    /* their rows' bytes (relay.wal.max_in_flight_mb) */
    size_t peak_bytes;
    /* confirmed events and emptied aggregates kept for reuse: no allocation per event */
    wal_event *spare_events;
    wal_agg *spare_aggs;
    size_t spare_event_count, spare_agg_count;
} wal_window;

void wal_window_init(wal_window *w, int ordered);
/* Frees everything, finished or not (on reconnect: the slot replays it). */
void wal_window_clear(wal_window *w);
void wal_window_free(wal_window *w);

void wal_window_begin(wal_window *w, long long commit_us);
/* Adds an event of the open transaction; the window owns row. */
void wal_window_add(wal_window *w, wal_row *row);
void wal_window_commit(wal_window *w, uint64_t end_lsn);
/* Is a transaction open (begun, not committed)? */
int wal_window_in_txn(const wal_window *w);

/* The next event that may be sent now, or NULL; it leaves the ready list. */
wal_event *wal_window_next(wal_window *w, long long now);
/* Puts a ready event back at the front (its output cannot take it now). */
void wal_window_unready(wal_window *w, wal_event *ev);
/* The event with this seq, or NULL. */
wal_event *wal_window_find(wal_window *w, uint64_t seq);

/* Acknowledged or dead-lettered: its aggregate's next event becomes ready. */
void wal_window_finish(wal_window *w, wal_event *ev);
/* Retried at due_ms; its aggregate keeps waiting. */
void wal_window_retry(wal_window *w, wal_event *ev, long long due_ms);

/* Drops the leading transactions whose events are all finished; returns
 * the end LSN of the last one dropped, or 0 when none. */
uint64_t wal_window_confirm(wal_window *w);

/* The end LSN of the event's transaction, 0 while its commit is not read yet. */
uint64_t wal_event_commit_lsn(const wal_event *ev);

/* Milliseconds until the first waiting event is due (-1: none waits). */
long long wal_window_wait_ms(const wal_window *w, long long now);
/* The commit time of the oldest unconfirmed transaction (0: none). */
long long wal_window_oldest_us(const wal_window *w);
/* How many more events it may read: max_events unfinished at most, and
 * none while their rows hold max_mb (relay.wal.max_in_flight and
 * max_in_flight_mb). */
long wal_window_room(const wal_window *w, long max_events, long max_mb);
/* Is nothing held at all? */
int wal_window_empty(const wal_window *w);

#endif
