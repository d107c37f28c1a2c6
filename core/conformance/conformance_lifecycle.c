/*
 * check-driver: instances over their life: close and destroy with messages
 * in flight, two instances at once, a handover between threads, probe.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "conformance/conformance_run.h"

/* close with messages in flight completes them all, and nothing after. */
void check_close(cf_run *run, cf_instance *ci, const char *name, int use_destroy)
{
    size_t accepted = cf_publish(run, ci, 500, NULL, NULL);
    if (use_destroy) {
        ledger_closing(&ci->rec);
        cf_destroy(run, ci);
        ledger_closed(&ci->rec);
    } else {
        cf_close_now(run, ci);
    }
    size_t left = cf_pending(&ci->rec);
    cf_sleep_ms(CF_AFTER_CLOSE_MS);
    if (cf_violations(run, &ci->rec, name))
        return;
    if (left)
        cf_fail(run, name,
                "%zu of %zu accepted messages had no completion when %s returned: "
                "complete every in-flight message as OBX_RETRIABLE (\"aborted\") "
                "unless already acknowledged",
                left, accepted, use_destroy ? "destroy (without close)" : "close");
    else if (ci->rec.during_close[OBX_FATAL])
        cf_fail(run, name, "close completed messages as OBX_FATAL: use OBX_RETRIABLE");
    else
        cf_pass(run, name, "%zu accepted; during %s: %zu ok, %zu retriable, %zu permanent",
                accepted, use_destroy ? "destroy" : "close", ci->rec.during_close[OBX_OK],
                ci->rec.during_close[OBX_RETRIABLE], ci->rec.during_close[OBX_PERMANENT]);
}

void check_close_twice(cf_run *run, cf_instance *ci)
{
    size_t before = ci->rec.completions;
    run->def->close(ci->inst);
    cf_sleep_ms(50);
    if (cf_violations(run, &ci->rec, "close_twice"))
        return;
    if (ci->rec.completions != before)
        cf_fail(run, "close_twice", "the second close made completions");
    else
        cf_pass(run, "close_twice", NULL);
}

void check_two_instances(cf_run *run)
{
    cf_instance *a = cf_new(run), *b = cf_new(run);
    if (cf_create(run, a, "two_instances") == 0 && cf_create(run, b, "two_instances") == 0) {
        size_t acc = 0;
        for (int round = 0; round < 3; round++) {
            acc += cf_publish(run, a, 150, NULL, NULL);
            acc += cf_publish(run, b, 150, NULL, NULL);
        }
        cf_instance *both[2] = {a, b};
        size_t left = cf_drain_all(run, both, 2);
        cf_close_now(run, a);
        cf_close_now(run, b);
        cf_sleep_ms(CF_AFTER_CLOSE_MS);
        int bad = cf_violations(run, &a->rec, "two_instances");
        if (!bad)
            bad = cf_violations(run, &b->rec, "two_instances");
        if (!bad && left)
            cf_fail(run, "two_instances", "%zu messages never completed with two instances open",
                    left);
        else if (!bad)
            cf_pass(run, "two_instances", "%zu accepted over two instances, no token crossed", acc);
    }
    cf_destroy(run, a);
    cf_destroy(run, b);
    free(a);
    free(b);
}

/* The host may drive one instance from different threads over its life (never at once). */
static void *cf_handover_thread(void *arg)
{
    void **args = arg;
    cf_run *run = args[0];
    cf_instance *ci = args[1];
    pthread_mutex_lock(&run->threads_lock);
    run->host_threads[run->host_thread_count++] = pthread_self();
    pthread_mutex_unlock(&run->threads_lock);
    cf_publish_and_drain(run, ci, "thread_handover", 300);
    pthread_mutex_lock(&run->threads_lock);
    run->host_thread_count--;
    pthread_mutex_unlock(&run->threads_lock);
    return NULL;
}

void check_thread_handover(cf_run *run)
{
    cf_instance *ci = cf_new(run);
    if (cf_create(run, ci, "thread_handover") == 0) {
        pthread_t t;
        void *args[2] = {run, ci};
        pthread_create(&t, NULL, cf_handover_thread, args);
        pthread_join(t, NULL);
        cf_close_now(run, ci);
    }
    cf_destroy(run, ci);
    free(ci);
}

void check_threads(cf_run *run)
{
    pthread_mutex_lock(&run->threads_lock);
    cf_pass(run, "completion_threads",
            "%zu completions from %zu threads, %zu of them off the "
            "host's threads (all tokens checked unique and known)",
            run->total_completions, run->thread_count, run->off_host_completions);
    pthread_mutex_unlock(&run->threads_lock);
}

/* probe (optional) on a working config: OK or UNAVAILABLE within its timeout,
 * no completion (nothing is in flight), and the instance still publishes. */
void check_probe(cf_run *run)
{
    const int timeout = 2000;
    if (!run->def->probe) {
        cf_skip(run, "probe", "no probe (optional: the host then probes by offering a batch)");
        return;
    }
    cf_instance *ci = cf_new(run);
    if (cf_create(run, ci, "probe") == 0) {
        int64_t t0 = cf_now_ms();
        obx_status st = run->def->probe(ci->inst, timeout);
        int64_t ms = cf_now_ms() - t0;
        if (cf_violations(run, &ci->rec, "probe"))
            ;
        else if (st != OBX_OK && st != OBX_UNAVAILABLE)
            cf_fail(run, "probe", "probe returned %d: it returns OBX_OK or OBX_UNAVAILABLE",
                    (int)st);
        else if (ms > timeout + CF_SLACK_MS)
            cf_fail(run, "probe",
                    "probe(%d ms) returned after %lld ms: it must return by its timeout", timeout,
                    (long long)ms);
        else if (ci->rec.completions)
            cf_fail(run, "probe", "probe made %zu completions with nothing in flight",
                    ci->rec.completions);
        else if (cf_publish_and_drain(run, ci, "probe_then_publish", 10) == 0)
            cf_pass(run, "probe", "probe(%d) returned %s after %lld ms", timeout,
                    st == OBX_OK ? "OBX_OK" : "OBX_UNAVAILABLE (the output is not reachable)",
                    (long long)ms);
        cf_close_now(run, ci);
    }
    cf_destroy(run, ci);
    free(ci);
}

/* What the whole run saw of refusals; misuse of refuse fails the check where it happened. */
void check_refusals(cf_run *run)
{
    pthread_mutex_lock(&run->threads_lock);
    size_t refused = run->refused, reasons = run->reasons;
    pthread_mutex_unlock(&run->threads_lock);
    cf_pass(run, "refusals",
            "%zu messages refused at publish, %zu with a reason given through host->refuse",
            refused, reasons);
}
