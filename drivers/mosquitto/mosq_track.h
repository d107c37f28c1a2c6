/* mosquitto driver: the publishes in flight and completing them, the one way
 * an accepted message leaves the driver (all with inst->mu held). */
#ifndef OBX_MOSQ_TRACK_H
#define OBX_MOSQ_TRACK_H

#include "mosq_int.h"

/* Tracks an accepted publish, in send order; -1: out of memory. */
int mosq_track_push(mosq_inst *inst, uint64_t token, uint64_t agg, int mid, int64_t deadline_ms);
/* The entry of libmosquitto message id mid that is not done yet, or NULL. */
mosq_entry *mosq_track_find(mosq_inst *inst, int mid);
/* Completes e (host->complete) and frees its place; after a failure the later
 * entries of its aggregate are doomed (never OK). Signals idle when empty. */
void mosq_track_complete(mosq_inst *inst, mosq_entry *e, obx_status status, int code,
                         const char *detail);
/* Completes every entry not done with status and detail; returns how many. */
int mosq_track_fail_all(mosq_inst *inst, obx_status status, const char *detail);
/* The oldest entry not done (the first to time out), or NULL. */
mosq_entry *mosq_track_oldest(mosq_inst *inst);
void mosq_track_free(mosq_track *t);

#endif
