/*
 * check-driver's recording host: the real host table (host_init, so option
 * getters and defaults are the relay's own) with completions and refusals
 * routed to the shared ledger (ledger.c), which checks every token
 * against what was published; here, which threads completions came from.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "conformance/conformance_run.h"

cf_run *cf_current;
static uint32_t cf_next_tag = 0x0B0;

int64_t cf_now_ms(void)
{
    return now_ms(); /* the engine's clock */
}

void cf_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

void cf_result(cf_run *run, const char *verdict, const char *name, const char *fmt, ...)
{
    char why[1024] = "";
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, sizeof why, fmt, ap);
        va_end(ap);
    }
    if (strcmp(verdict, "FAIL") == 0)
        run->failed = 1;
    printf("%s %s%s%s\n", verdict, name, why[0] ? ": " : "", why);
    fflush(stdout);
}

/* ---- the recording host ---- */

static void cf_note_thread(void)
{
    cf_run *run = cf_current;
    pthread_t self = pthread_self();
    pthread_mutex_lock(&run->threads_lock);
    run->total_completions++;
    int host = 0;
    for (size_t i = 0; i < run->host_thread_count; i++)
        host |= pthread_equal(run->host_threads[i], self);
    if (!host)
        run->off_host_completions++;
    size_t i = 0;
    while (i < run->thread_count && !pthread_equal(run->threads[i], self))
        i++;
    if (i == run->thread_count && i < CF_MAX_THREADS)
        run->threads[run->thread_count++] = self;
    pthread_mutex_unlock(&run->threads_lock);
}

static void cf_on_complete(void *arg, uint64_t token, obx_status status, int native_code,
                           const char *detail)
{
    (void)native_code;
    cf_note_thread();
    ledger_complete(arg, token, status, detail);
}

/* host->refuse: only from inside publish_batch, at most once per refused message. */
static void cf_on_refuse(void *arg, uint64_t token, int native_code, const char *detail)
{
    (void)native_code;
    ledger_refuse(arg, token, detail);
}

void cf_host_for(cf_run *run, cf_instance *ci, const cfg_output *output)
{
    host_init(&ci->host, run->drv, output, cf_on_complete, &ci->rec);
    ci->host.on_refuse = cf_on_refuse;
}

cf_instance *cf_new(cf_run *run)
{
    cf_instance *ci = calloc(1, sizeof *ci);
    ledger_init(&ci->rec, cf_next_tag++, ci->slots, CF_CAPACITY);
    cf_host_for(run, ci, run->output);
    return ci;
}

/* Creates the driver instance; prints FAIL name and returns -1 on refusal. */
int cf_create(cf_run *run, cf_instance *ci, const char *name)
{
    char err[512] = "";
    ci->inst = run->def->create(&ci->host.host, err, sizeof err);
    if (!ci->inst) {
        cf_fail(run, name, "create failed with valid options: %s", err[0] ? err : "(no errstr)");
        return -1;
    }
    return 0;
}

/* Accepted messages without a completion yet. */
size_t cf_pending(cf_recorder *rec)
{
    return ledger_pending(rec);
}

int cf_misrouted(cf_recorder *rec)
{
    return ledger_misrouted(rec);
}

/* Closes while recording which completions happen during close. */
void cf_close_now(cf_run *run, cf_instance *ci)
{
    ledger_closing(&ci->rec);
    run->def->close(ci->inst);
    ledger_closed(&ci->rec);
}

void cf_destroy(cf_run *run, cf_instance *ci)
{
    if (ci->inst)
        run->def->destroy(ci->inst);
    ci->inst = NULL;
}

/* Reports contract violations seen by rec; returns 1 when there were some. */
int cf_violations(cf_run *run, cf_recorder *rec, const char *name)
{
    char why[768];
    if (!ledger_violations(rec, why, sizeof why, 1))
        return 0;
    cf_fail(run, name, "%s", why);
    return 1;
}

void cf_count_refusals(cf_run *run, cf_recorder *rec)
{
    pthread_mutex_lock(&rec->lock);
    size_t refused = rec->refused, reasons = rec->reasons;
    rec->refused = rec->reasons = 0;
    pthread_mutex_unlock(&rec->lock);
    pthread_mutex_lock(&run->threads_lock);
    run->refused += refused;
    run->reasons += reasons;
    pthread_mutex_unlock(&run->threads_lock);
}
