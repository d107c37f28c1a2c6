/*
 * The recording fake host of the driver harnesses: the relay's own host
 * table (host_init, so option getters, declared defaults and the option
 * checks are the relay's), with completions and refusals checked by the
 * relay's token ledger (core/ledger.h, the one check-driver uses):
 * exactly one completion per accepted message, none for a refused one or a
 * token never given, none after close, refusals only from inside
 * publish_batch. The per-token view below (fh_token) is the harnesses'.
 *
 * Tokens are indexes 0 .. cap-1 into the ledger; publish through
 * fh_publish so the ledger knows what is in flight.
 */
#ifndef OBX_TEST_FAKE_HOST_H
#define OBX_TEST_FAKE_HOST_H

#include <pthread.h>
#include <stdint.h>

#include "conformance/ledger.h"
#include "host/host.h"

typedef struct fh_token {
    int in_flight;        /* offered by fh_publish, not refused or completed yet */
    unsigned completions; /* completions seen (a harness may reset it to offer again) */
    unsigned refusals;    /* host->refuse calls */
    obx_status status;    /* of the last completion */
    char detail[160];     /* of the last completion or refusal */
} fh_token;

typedef struct fake_host {
    host_ctx ctx; /* the relay's host table: &ctx.host goes to create */
    const loaded_driver *drv;
    const obx_driver_def *def;
    relay_config cfg;  /* names where option values came from, for the checks' messages */
    cfg_output output; /* option values and native properties */
    size_t option_cap, property_cap;

    ledger rec;    /* the contract checks, under its own lock */
    rec_slot *slots; /* rec's */

    pthread_mutex_t lock; /* guards everything below; taken before rec.lock */
    pthread_cond_t changed;
    size_t cap;
    fh_token *tok;
    size_t completions, by_status[OBX_STATUS_MAX + 1];
    size_t refusals; /* host->refuse calls */
    /* rec's violation counters as of its last call (unknown includes foreign) */
    size_t bad_status, duplicates, unknown, after_close, bad_refusals, refused_completed;
    char last_detail[256];                /* of the last completion that was not OK */
    char last_refusal[256];               /* of the last host->refuse */
    int64_t last_ok_ms, longest_no_ok_ms; /* OK completions over time */
    const char *watch_prefix;             /* keep the last log line starting so */
    char watched[1024];
} fake_host;

/* Loads a driver .so the way the relay does (loader_open). Logs at INFO, at
 * DEBUG when OBX_TEST_DEBUG is set. NULL with the reason in err. */
loaded_driver *fh_load(const char *path, char *err, size_t err_size);

/* A host for one driver instance, recording tokens 0 .. cap-1. */
fake_host *fh_new(const loaded_driver *drv, size_t cap);
void fh_free(fake_host *fh);

/* Sets option NAME from TEXT as a config would, typed by the driver's
 * declaration (undeclared names are strings, so the host check names them).
 * -1 with a message on stderr when TEXT is not of that type. */
int fh_set(fake_host *fh, const char *name, const char *text);
int fh_set_int(fake_host *fh, const char *name, int64_t value);
/* "name=value" forms of fh_set and of a native property. */
int fh_option(fake_host *fh, const char *name_eq_value);
int fh_property(fake_host *fh, const char *key_eq_value);

/* The relay's check of the options against the driver's declarations:
 * 0, or -1 with the reason (naming the option) in err. */
int fh_validate(fake_host *fh, char *err, size_t err_size);
/* create as the relay calls it: after fh_validate. */
obx_instance *fh_create(fake_host *fh, char *err, size_t err_size);
/* create without the host's check: for the driver's own refusals. */
obx_instance *fh_create_unchecked(fake_host *fh, char *err, size_t err_size);

/* publish_batch, recording which tokens are in flight afterwards. */
obx_status fh_publish(fake_host *fh, obx_instance *inst, const obx_message *msgs, size_t count,
                      obx_status *accept);
/* close, then no completion may come any more. */
void fh_close(fake_host *fh, obx_instance *inst);

/* Drive the instance (poll, flush) until WANT completions in all, or none
 * in flight, or TIMEOUT_MS passed. 1 when reached. */
int fh_wait_completions(fake_host *fh, obx_instance *inst, size_t want, int timeout_ms);
int fh_wait_settled(fake_host *fh, obx_instance *inst, int timeout_ms);

size_t fh_completions(fake_host *fh);
size_t fh_in_flight(fake_host *fh);
/* Completions of tokens [from, to) that completed exactly once with STATUS. */
size_t fh_count_status(fake_host *fh, uint64_t from, uint64_t to, obx_status status);

/* Contract violations so far: 0, or how many, with a summary in why. */
size_t fh_violations(fake_host *fh, char *why, size_t why_size);

int64_t fh_now_ms(void);
void fh_sleep_ms(int ms);

#endif
