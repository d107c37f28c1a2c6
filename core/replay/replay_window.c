#include "replay/replay_window.h"

#include <string.h>

void replay_window_push(replay_window *w, replay_row *row)
{
    uint64_t seq = w->head + w->count++;
    replay_event *ev = &w->ring[seq % REPLAY_WINDOW];
    memset(ev, 0, sizeof *ev);
    ev->seq = seq;
    ev->row = *row;
    memset(row, 0, sizeof *row);
}

replay_event *replay_window_find(replay_window *w, uint64_t seq)
{
    if (seq < w->head || seq - w->head >= w->count)
        return NULL;
    return &w->ring[seq % REPLAY_WINDOW];
}

replay_event *replay_window_pop_done(replay_window *w)
{
    if (w->count == 0)
        return NULL;
    replay_event *ev = &w->ring[w->head % REPLAY_WINDOW];
    if (ev->state != REV_DONE)
        return NULL;
    w->head++;
    w->count--;
    return ev;
}

void replay_window_round(replay_window *w)
{
    memset(w->held, 0, sizeof w->held);
}

/* FNV-1a over type, a NUL, id; never 0. Two aggregates that collide are
 * held together: slower, never out of order. */
static uint64_t aggregate_hash(const replay_event *ev)
{
    uint64_t h = 14695981039346656037u;
    const char *parts[] = {ev->row.v[RF_AGGREGATE_TYPE], ev->row.v[RF_AGGREGATE_ID]};
    for (int k = 0; k < 2; k++) {
        for (const char *s = parts[k] ? parts[k] : ""; *s; s++)
            h = (h ^ (unsigned char)*s) * 1099511628211u;
        h = (h ^ 0xff) * 1099511628211u;
    }
    return h ? h : 1;
}

int replay_window_held(replay_window *w, const replay_event *ev)
{
    uint64_t h = aggregate_hash(ev);
    size_t size = sizeof w->held / sizeof w->held[0];
    for (size_t i = h % size;; i = (i + 1) % size) { /* at most count < size entries */
        if (w->held[i] == h)
            return 1;
        if (w->held[i] == 0) {
            w->held[i] = h;
            return 0;
        }
    }
}
