#include "window/window.h"

#include <stdlib.h>
#include <string.h>

struct window_txn {
    window_txn *next;
    uint64_t end_lsn; /* 0 until committed */
    long long commit_us;
    long unfinished;
    uint64_t first_seq, end_seq; /* its events: [first_seq, end_seq) */
};

/* An aggregate's unfinished events, in commit order: head is the one that
 * may be sent. Its type and id are its own copies: the head's row is handed
 * to the dead-letter writer before the head finishes. */
struct window_agg {
    window_agg *next; /* in its bucket */
    uint64_t hash;
    char *type, *id; /* NULL as in the row */
    window_event *head, *tail;
};

#define BUCKETS 65536
#define SPARE_MAX 16384 /* of each: what an idle relay keeps */

void window_init(window *w, int ordered)
{
    memset(w, 0, sizeof *w);
    w->ordered = ordered;
    w->bucket_count = BUCKETS;
    w->buckets = calloc(BUCKETS, sizeof *w->buckets);
    w->ring_cap = 1024;
    w->ring = calloc(w->ring_cap, sizeof *w->ring);
}

/* FNV-1a over type, a separator and id. */
static uint64_t agg_hash(const event_row *row)
{
    uint64_t h = 1469598103934665603ull;
    const char *parts[] = {row->v[WF_AGGREGATE_TYPE], row->v[WF_AGGREGATE_ID]};
    for (int i = 0; i < 2; i++) {
        for (const char *p = parts[i] ? parts[i] : ""; *p; p++)
            h = (h ^ (unsigned char)*p) * 1099511628211ull;
        h = (h ^ 0xff) * 1099511628211ull;
    }
    return h;
}

static int same_text(const char *a, const char *b)
{
    return a && b ? strcmp(a, b) == 0 : a == b;
}

static int same_agg(const window_agg *a, const event_row *row)
{
    return same_text(a->type, row->v[WF_AGGREGATE_TYPE]) &&
           same_text(a->id, row->v[WF_AGGREGATE_ID]);
}

static void agg_forget_key(window_agg *a)
{
    free(a->type);
    free(a->id);
    a->type = a->id = NULL;
}

static window_event *ring_at(const window *w, size_t i)
{
    return w->ring[(w->base_seq + i) % w->ring_cap];
}

static void ring_push(window *w, window_event *ev)
{
    if (w->ring_len == w->ring_cap) {
        size_t cap = w->ring_cap * 2;
        window_event **ring = calloc(cap, sizeof *ring);
        for (size_t i = 0; i < w->ring_len; i++)
            ring[(w->base_seq + i) % cap] = ring_at(w, i);
        free(w->ring);
        w->ring = ring;
        w->ring_cap = cap;
    }
    w->ring[(w->base_seq + w->ring_len) % w->ring_cap] = ev;
    w->ring_len++;
}

static window_event *event_new(window *w)
{
    window_event *ev = w->spare_events;
    if (!ev)
        return calloc(1, sizeof *ev);
    w->spare_events = ev->next_list;
    w->spare_event_count--;
    memset(ev, 0, sizeof *ev);
    return ev;
}

static void event_recycle(window *w, window_event *ev)
{
    if (w->spare_event_count >= SPARE_MAX) {
        free(ev);
        return;
    }
    ev->next_list = w->spare_events;
    w->spare_events = ev;
    w->spare_event_count++;
}

static window_agg *agg_new(window *w)
{
    window_agg *a = w->spare_aggs;
    if (!a)
        return calloc(1, sizeof *a);
    w->spare_aggs = a->next;
    w->spare_agg_count--;
    memset(a, 0, sizeof *a);
    return a;
}

static void agg_recycle(window *w, window_agg *a)
{
    agg_forget_key(a);
    if (w->spare_agg_count >= SPARE_MAX) {
        free(a);
        return;
    }
    a->next = w->spare_aggs;
    w->spare_aggs = a;
    w->spare_agg_count++;
}

static void push_ready(window *w, window_event *ev)
{
    ev->state = EV_READY;
    ev->next_list = NULL;
    if (w->ready_tail)
        w->ready_tail->next_list = ev;
    else
        w->ready_head = ev;
    w->ready_tail = ev;
}

void window_begin(window *w, long long commit_us)
{
    window_txn *t = calloc(1, sizeof *t);
    t->commit_us = commit_us;
    t->first_seq = t->end_seq = w->next_seq;
    if (w->last)
        w->last->next = t;
    else
        w->first = t;
    w->last = t;
}

int window_in_txn(const window *w)
{
    return w->last && w->last->end_lsn == 0;
}

void window_add(window *w, event_row *row)
{
    window_event *ev = event_new(w);
    ev->seq = w->next_seq++;
    ev->row = row;
    ev->txn = w->last;
    ev->txn->unfinished++;
    ev->txn->end_seq = w->next_seq;
    w->unfinished++;
    ev->bytes = row->size;
    w->bytes += ev->bytes;
    if (w->bytes > w->peak_bytes)
        w->peak_bytes = w->bytes;
    ring_push(w, ev);
    if (!w->ordered) {
        push_ready(w, ev);
        return;
    }
    uint64_t h = agg_hash(row);
    window_agg **bucket = &w->buckets[h % w->bucket_count], *a;
    for (a = *bucket; a; a = a->next)
        if (a->hash == h && same_agg(a, row))
            break;
    if (a) { /* its aggregate has an unfinished event: wait for it */
        a->tail->next_same = ev;
        a->tail = ev;
        ev->agg = a;
        ev->state = EV_BLOCKED;
        return;
    }
    a = agg_new(w);
    a->hash = h;
    a->type = row->v[WF_AGGREGATE_TYPE] ? strdup(row->v[WF_AGGREGATE_TYPE]) : NULL;
    a->id = row->v[WF_AGGREGATE_ID] ? strdup(row->v[WF_AGGREGATE_ID]) : NULL;
    a->head = a->tail = ev;
    a->next = *bucket;
    *bucket = a;
    ev->agg = a;
    push_ready(w, ev);
}

void window_commit(window *w, uint64_t end_lsn)
{
    if (w->last && w->last->end_lsn == 0)
        w->last->end_lsn = end_lsn ? end_lsn : 1;
}

window_event *window_next(window *w, long long now)
{
    /* due retries first: they are the oldest of their aggregates */
    for (window_event **p = &w->waiting; *p; p = &(*p)->next_list) {
        window_event *ev = *p;
        if (ev->due_ms <= now) {
            *p = ev->next_list;
            ev->next_list = NULL;
            ev->state = EV_READY;
            return ev;
        }
    }
    window_event *ev = w->ready_head;
    if (ev) {
        w->ready_head = ev->next_list;
        if (!w->ready_head)
            w->ready_tail = NULL;
        ev->next_list = NULL;
    }
    return ev;
}

void window_unready(window *w, window_event *ev)
{
    ev->state = EV_READY;
    ev->next_list = w->ready_head;
    w->ready_head = ev;
    if (!w->ready_tail)
        w->ready_tail = ev;
}

window_event *window_find(window *w, uint64_t seq)
{
    if (seq < w->base_seq || seq - w->base_seq >= w->ring_len)
        return NULL;
    return ring_at(w, (size_t)(seq - w->base_seq));
}

void window_finish(window *w, window_event *ev)
{
    if (ev->state == EV_DONE)
        return;
    ev->state = EV_DONE;
    ev->txn->unfinished--;
    w->unfinished--;
    w->bytes -= ev->bytes;
    ev->bytes = 0;
    if (ev->agg) {
        window_agg *a = ev->agg;
        window_event *next = ev->next_same;
        if (next) {
            a->head = next;
            push_ready(w, next);
        } else { /* the aggregate has nothing left: forget it */
            window_agg **p = &w->buckets[a->hash % w->bucket_count];
            while (*p != a)
                p = &(*p)->next;
            *p = a->next;
            agg_recycle(w, a);
        }
        ev->agg = NULL;
        ev->next_same = NULL;
    }
    free(ev->row);
    ev->row = NULL;
}

void window_retry(window *w, window_event *ev, long long due_ms)
{
    ev->state = EV_WAITING;
    ev->due_ms = due_ms;
    ev->next_list = w->waiting;
    w->waiting = ev;
}

uint64_t window_confirm(window *w)
{
    uint64_t lsn = 0;
    while (w->first && w->first->end_lsn && w->first->unfinished == 0) {
        window_txn *t = w->first;
        for (uint64_t s = t->first_seq; s < t->end_seq; s++) {
            event_recycle(w, ring_at(w, 0));
            w->base_seq++;
            w->ring_len--;
        }
        lsn = t->end_lsn;
        w->first = t->next;
        if (!w->first)
            w->last = NULL;
        free(t);
    }
    return lsn;
}

uint64_t window_event_commit_lsn(const window_event *ev)
{
    return ev->txn->end_lsn;
}

long long window_wait_ms(const window *w, long long now)
{
    long long best = -1;
    for (const window_event *ev = w->waiting; ev; ev = ev->next_list) {
        long long d = ev->due_ms > now ? ev->due_ms - now : 0;
        if (best < 0 || d < best)
            best = d;
    }
    return best;
}

long long window_oldest_us(const window *w)
{
    return w->first ? w->first->commit_us : 0;
}

long window_room(const window *w, long max_events, long max_mb)
{
    if (w->bytes >= (size_t)max_mb << 20)
        return 0;
    return w->unfinished < max_events ? max_events - w->unfinished : 0;
}

int window_empty(const window *w)
{
    return w->first == NULL;
}

void window_clear(window *w)
{
    for (size_t i = 0; i < w->ring_len; i++) {
        window_event *ev = ring_at(w, i);
        free(ev->row);
        free(ev);
    }
    for (size_t b = 0; b < w->bucket_count; b++)
        while (w->buckets[b]) {
            window_agg *a = w->buckets[b];
            w->buckets[b] = a->next;
            agg_forget_key(a);
            free(a);
        }
    while (w->first) {
        window_txn *t = w->first;
        w->first = t->next;
        free(t);
    }
    w->last = NULL;
    w->base_seq = w->next_seq;
    w->ring_len = 0;
    w->ready_head = w->ready_tail = w->waiting = NULL;
    w->unfinished = 0;
    w->bytes = 0;
}

void window_free(window *w)
{
    window_clear(w);
    while (w->spare_events) {
        window_event *ev = w->spare_events;
        w->spare_events = ev->next_list;
        free(ev);
    }
    while (w->spare_aggs) {
        window_agg *a = w->spare_aggs;
        w->spare_aggs = a->next;
        free(a);
    }
    w->spare_event_count = w->spare_agg_count = 0;
    free(w->ring);
    free(w->buckets);
}
