/* WAL mode's window: the committed transactions read from the slot and not
 * yet confirmed, their events and each event's state. It decides what may
 * be sent (an aggregate's next event only once its predecessor is finished,
 * with ordering on) and up to which commit every event is finished: the
 * position confirmed to the slot. One thread owns it. */
#ifndef OBX_WINDOW_H
#define OBX_WINDOW_H

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "event/event_row.h"

typedef enum {
    EV_BLOCKED,   /* behind an unfinished event of its aggregate */
    EV_READY,     /* may be sent */
    EV_IN_FLIGHT, /* offered to its driver: a completion is due */
    EV_WAITING,   /* failed, retried at due_ms */
    EV_DONE,      /* acknowledged or dead-lettered */
} window_event_state;

typedef struct window_txn window_txn;
typedef struct window_agg window_agg;

typedef struct window_event {
    uint64_t seq; /* position in the window; the token names it */
    event_row *row; /* freed once finished */
    window_txn *txn;
    window_agg *agg;                /* ordering on: its aggregate's queue */
    struct window_event *next_same; /* the next event of its aggregate */
    struct window_event *next_list; /* in the ready or waiting list */
    window_event_state state;
    unsigned attempt;  /* attempts made so far */
    long long due_ms;  /* EV_WAITING: when to retry */
    long long sent_ms; /* when last offered (monotonic): the publish duration */
    uint32_t sends;    /* how many times offered: stale completions are ignored */
    size_t bytes;      /* its row's, counted in the window until finished */
    size_t output;
    const cfg_route *route; /* where its last send went (the send's generation) */
    int ended;              /* finished: how (WINDOW_ACKED... in window_publish.h) */
} window_event;

typedef struct window {
    int ordered;
    window_txn *first, *last; /* unconfirmed transactions in commit order */
    window_event **ring;      /* events by seq - base_seq */
    size_t ring_cap, ring_len;
    uint64_t base_seq, next_seq;
    window_agg **buckets; /* aggregates with unfinished events */
    size_t bucket_count;
    window_event *ready_head, *ready_tail;
    window_event *waiting;
    long unfinished; /* events not yet finished */
    size_t bytes;    /* their rows' bytes (relay.wal.max_in_flight_mb) */
    size_t peak_bytes;
    /* confirmed events and emptied aggregates kept for reuse: no allocation per event */
    window_event *spare_events;
    window_agg *spare_aggs;
    size_t spare_event_count, spare_agg_count;
} window;

void window_init(window *w, int ordered);
/* Frees everything, finished or not (on reconnect: the slot replays it). */
void window_clear(window *w);
void window_free(window *w);

void window_begin(window *w, long long commit_us);
/* Adds an event of the open transaction; the window owns row. */
void window_add(window *w, event_row *row);
void window_commit(window *w, uint64_t end_lsn);
/* Is a transaction open (begun, not committed)? */
int window_in_txn(const window *w);

/* The next event that may be sent now, or NULL; it leaves the ready list. */
window_event *window_next(window *w, long long now);
/* Puts a ready event back at the front (its output cannot take it now). */
void window_unready(window *w, window_event *ev);
/* The event with this seq, or NULL. */
window_event *window_find(window *w, uint64_t seq);

/* Acknowledged or dead-lettered: its aggregate's next event becomes ready. */
void window_finish(window *w, window_event *ev);
/* Retried at due_ms; its aggregate keeps waiting. */
void window_retry(window *w, window_event *ev, long long due_ms);

/* Drops the leading transactions whose events are all finished; returns
 * the end LSN of the last one dropped, or 0 when none. */
uint64_t window_confirm(window *w);

/* The end LSN of the event's transaction, 0 while its commit is not read yet. */
uint64_t window_event_commit_lsn(const window_event *ev);

/* Milliseconds until the first waiting event is due (-1: none waits). */
long long window_wait_ms(const window *w, long long now);
/* The commit time of the oldest unconfirmed transaction (0: none). */
long long window_oldest_us(const window *w);
/* How many more events it may read: max_events unfinished at most, and
 * none while their rows hold max_mb (relay.wal.max_in_flight and
 * max_in_flight_mb). */
long window_room(const window *w, long max_events, long max_mb);
/* Is nothing held at all? */
int window_empty(const window *w);

#endif
