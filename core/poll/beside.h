/* Whether a worker claims a second batch beside its busy lane (worker.c):
 * a rule over what the worker knows of its lanes, kept apart so it is
 * tested without a database or a driver. */
#ifndef OBX_BESIDE_H
#define OBX_BESIDE_H

typedef struct beside_view {
    int stopping;           /* a stop was requested */
    int generation_pending; /* a reload waits for no lane in flight */
    int found_empty;        /* a claim beside found nothing since the last record */
    int busy_count;         /* rows in the newest busy lane's batch */
    int batch_size;
    int answering;     /* a batch got all its answers since the driver started or was aborted */
    int busy_answered; /* the newest busy batch's first answer is in */
    int busy_left;     /* completions still due on the newest busy batch */
} beside_view;

/*
 * Is a claim beside the busy lane worth it now? When more is likely pending
 * (the busy lane's batch was full), the broker is answering (a batch got all
 * its answers since the driver started or was aborted, or the busy batch's
 * first answer is in) and the busy lane's last answer is not in: the next
 * batch is out while the broker works on this one. Waiting for the busy
 * batch's own first answer each time left a Kafka worker idle for 30% of
 * its time. A batch with every answer is recorded first: a claim beside it
 * would only skip its locked rows.
 * Not for less: claims beside small batches cost more statements per event
 * than they save (measured: worse latency at 1,000 events/s). An idle relay
 * keeps one session; a pending reload waits for no lane in flight.
 */
int beside_worth(const beside_view *v);

#endif
