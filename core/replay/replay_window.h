/* A replay's window: the events read and not yet done, in id order (a ring
 * named by sequence numbers, the tokens' keys), and per round the set of
 * aggregates that already have an earlier event not done, so an aggregate's
 * events go one at a time, in order. */
#ifndef OBX_REPLAY_WINDOW_H
#define OBX_REPLAY_WINDOW_H

#include <stdint.h>

#include "config/config.h"
#include "replay/replay_read.h"

#define REPLAY_WINDOW 4096

enum { REV_QUEUED, REV_FLIGHT, REV_DONE };
enum { REV_SKIPPED, REV_ACKED, REV_FAILED }; /* how a done event ended */

typedef struct replay_event {
    replay_row row;
    uint64_t seq; /* its place: the key of its tokens */
    int state, result;
    unsigned attempt; /* attempts so far */
    uint32_t sends;   /* which send a completion answers */
    long long due_ms, sent_ms;
    size_t output;
    const cfg_route *route;
} replay_event;

typedef struct replay_window {
    replay_event ring[REPLAY_WINDOW];
    uint64_t head; /* the first event's sequence number */
    size_t count;
    uint64_t held[2 * REPLAY_WINDOW]; /* one round's aggregates (hashes; 0: free) */
} replay_window;

/* Adds a row (taken over) at the end; the window must have room. */
void replay_window_push(replay_window *w, replay_row *row);

/* The event with sequence number seq, or NULL when it is not in the window. */
replay_event *replay_window_find(replay_window *w, uint64_t seq);

/* The first event, done, leaves the window: returns it (valid until the
 * next push), or NULL when the first is not done. */
replay_event *replay_window_pop_done(replay_window *w);

/* A round: forget which aggregates are held. */
void replay_window_round(replay_window *w);

/* In the round's walk (in window order): 1 when ev's aggregate has an
 * earlier event not done; marks it held for the later ones either way. */
int replay_window_held(replay_window *w, const replay_event *ev);

#endif
