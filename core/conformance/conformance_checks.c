/*
 * check-driver: the checks of the definition, the options and one instance's
 * batches and flush, against the contract in include/obx/driver.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance/conformance_run.h"
#include "host/options.h"

void check_definition(cf_run *run)
{
    const obx_driver_def *def = run->def;
    if (!def->version || !def->description || !def->version[0] || !def->description[0]) {
        cf_fail(run, "definition",
                "set .version and .description (shown by `outbox-relay drivers`)");
        return;
    }
    for (const obx_option *o = def->options; o && o->name; o++) {
        if ((unsigned)o->type > OBX_OPT_DOUBLE ||
            (o->flags & ~(OBX_OPT_REQUIRED | OBX_OPT_SECRET | OBX_OPT_DEPRECATED))) {
            cf_fail(run, "definition", "option \"%s\" has an unknown type or flag", o->name);
            return;
        }
        if (!o->description || !o->description[0]) {
            cf_fail(run, "definition", "option \"%s\" has no description", o->name);
            return;
        }
        for (const obx_option *p = def->options; p != o; p++)
            if (strcmp(p->name, o->name) == 0) {
                cf_fail(run, "definition", "option \"%s\" is declared twice", o->name);
                return;
            }
    }
    /* a newer minor may define flags this runner does not know */
    if (def->abi_minor <= OBX_ABI_MINOR &&
        (def->flags & ~(OBX_DRIVER_IN_ORDER | OBX_DRIVER_NULL_PAYLOAD))) {
        cf_fail(run, "definition", "flags 0x%x: unknown driver flags", def->flags);
        return;
    }
    cf_pass(run, "definition", "driver \"%s\" %s, ABI %u.%u, %u-byte definition%s", def->name,
            def->version, def->abi_major, def->abi_minor, def->struct_size,
            def->flags & OBX_DRIVER_IN_ORDER ? ", in order" : "");
}

/* Does the getter of o hand out a value when the output sets nothing? */
static int cf_default_reaches_getter(cf_instance *ci, const obx_option *o)
{
    const obx_host *h = &ci->host.host;
    const char *s;
    int64_t i;
    int b;
    double d;
    switch (o->type) {
    case OBX_OPT_STRING: return h->get_string(h->host_ctx, o->name, &s);
    case OBX_OPT_INT: return h->get_int(h->host_ctx, o->name, &i);
    case OBX_OPT_BOOL: return h->get_bool(h->host_ctx, o->name, &b);
    case OBX_OPT_DOUBLE: return h->get_double(h->host_ctx, o->name, &d);
    }
    return 0;
}

/* ABI 1.1 option specs: consistent (what the host enforces at load: ranges,
 * choices, defaults that parse and are allowed) and defaults reach the
 * getters. The array is read at every option's index, so one shorter than
 * options is an overflow that AddressSanitizer reports in an instrumented
 * driver. */
void check_option_specs(cf_run *run)
{
    const obx_driver_def *def = run->def;
    if (!def->option_specs) {
        cf_skip(run, "option_specs", "none declared (create keeps its own defaults, as in 1.0)");
        return;
    }
    char why[512];
    if (options_check_specs(def, why, sizeof why) < 0) {
        cf_fail(run, "option_specs", "%s: the host refuses this driver", why);
        return;
    }
    cf_instance *ci = cf_new(run);
    cf_host_for(run, ci, NULL); /* an output that sets nothing */
    size_t n = 0, defaults = 0;
    for (const obx_option *o = def->options; o->name; o++, n++) {
        if (!options_spec(def, o)->default_value)
            continue;
        defaults++;
        if (!cf_default_reaches_getter(ci, o)) {
            cf_fail(run, "option_specs", "option \"%s\": its default does not reach the getter",
                    o->name);
            free(ci);
            return;
        }
    }
    free(ci);
    cf_pass(run, "option_specs", "%zu specs, %zu defaults valid and handed to the getters", n,
            defaults);
}

void check_unknown_option(cf_run *run)
{
    const cfg_output *base = run->output;
    size_t n = base ? base->option_count : 0;
    cfg_output out = {.name = base ? base->name : "conformance", .driver = (char *)run->def->name};
    out.options = calloc(n + 1, sizeof *out.options);
    if (n)
        memcpy(out.options, base->options, n * sizeof *out.options);
    out.options[n] = (cfg_value){
        .name = "conformance_no_such_option", .type = OBX_OPT_STRING, .s = "x", .line = 1};
    out.option_count = n + 1;
    char err[512] = "";
    int rc = host_validate_options(run->cfg, &out, run->drv, err, sizeof err);
    free(out.options);
    if (rc == 0)
        cf_fail(run, "unknown_option",
                "an undeclared option was accepted: does the driver "
                "declare \"conformance_no_such_option\"?");
    else
        cf_pass(run, "unknown_option", "refused before create: %s", err);
}

void check_create_failure(cf_run *run, const char *bad_output)
{
    const cfg_output *out = NULL;
    const char *how;
    if (bad_output) {
        for (size_t i = 0; run->cfg && i < run->cfg->output_count; i++)
            if (strcmp(run->cfg->outputs[i].name, bad_output) == 0)
                out = &run->cfg->outputs[i];
        if (!out) {
            cf_fail(run, "create_failure", "--bad-output %s: no such output in the config",
                    bad_output);
            return;
        }
        char err[512];
        if (host_validate_options(run->cfg, out, run->drv, err, sizeof err) != 0) {
            cf_fail(run, "create_failure",
                    "output %s is refused by option validation (%s), so "
                    "create is not exercised: give it values the host accepts "
                    "(types, ranges, choices) but create must refuse",
                    bad_output, err);
            return;
        }
        how = "options of the bad output";
    } else {
        const obx_option *o = run->def->options;
        while (o && o->name && !(o->flags & OBX_OPT_REQUIRED))
            o++;
        if (!o || !o->name) {
            cf_skip(run, "create_failure",
                    "the driver has no required option; pass --bad-output "
                    "NAME (an output with values create must refuse)");
            return;
        }
        how = "required options missing (bypassing the host's check)";
    }
    cf_instance *ci = cf_new(run);
    cf_host_for(run, ci, out);
    char err[256];
    memset(err, 0x7f, sizeof err);
    obx_instance *inst = run->def->create(&ci->host.host, err, sizeof err);
    if (inst) {
        run->def->destroy(inst);
        cf_fail(run, "create_failure",
                "create returned an instance with %s: it must return "
                "NULL and explain in errstr",
                how);
    } else if (!memchr(err, '\0', sizeof err) || err[0] == 0x7f || err[0] == '\0') {
        cf_fail(run, "create_failure",
                "create returned NULL with %s but wrote no errstr (a "
                "NUL-terminated one-line reason)",
                how);
    } else {
        cf_pass(run, "create_failure", "%s: \"%s\"", how, err);
    }
    free(ci);
}

void check_batches(cf_run *run, cf_instance *ci)
{
    /* batch of 0 */
    obx_status rc;
    cf_publish(run, ci, 0, &rc, NULL);
    if (run->def->poll)
        run->def->poll(ci->inst, 100);
    else
        cf_sleep_ms(100);
    if (cf_violations(run, &ci->rec, "batch_0"))
        ;
    else if (rc != OBX_OK)
        cf_fail(run, "batch_0", "publish_batch with count 0 returned %d (expected OBX_OK)",
                (int)rc);
    else if (ci->rec.completions)
        cf_fail(run, "batch_0", "%zu completions after an empty batch", ci->rec.completions);
    else
        cf_pass(run, "batch_0", NULL);

    cf_publish_and_drain(run, ci, "batch_1", 1);

    cf_publish_and_drain(run, ci, "batch_many", CF_MANY);
}

/* publish_batch must not wait for acknowledgements: a detector, not a benchmark. */
void check_publish_bound(cf_run *run, cf_instance *ci)
{
    obx_status rc;
    int64_t ms;
    size_t accepted = cf_publish(run, ci, CF_MANY, &rc, &ms);
    size_t left = cf_drain(run, ci);
    if (cf_violations(run, &ci->rec, "publish_bound"))
        return;
    if (ms > CF_PUBLISH_BOUND_MS)
        cf_fail(run, "publish_bound",
                "publish_batch of %d messages took %lld ms (> %d ms): it "
                "must hand messages over without waiting for "
                "acknowledgements; complete them later from poll or a thread",
                CF_MANY, (long long)ms, CF_PUBLISH_BOUND_MS);
    else if (left)
        cf_fail(run, "publish_bound", "%zu of %zu accepted messages never completed", left,
                accepted);
    else
        cf_pass(run, "publish_bound", "%d messages in %lld ms", CF_MANY, (long long)ms);
}

void check_flush(cf_run *run, cf_instance *ci)
{
    const int timeout = 300;
    cf_publish(run, ci, 200, NULL, NULL);
    size_t before = cf_pending(&ci->rec);
    int64_t t0 = cf_now_ms();
    size_t r = run->def->flush(ci->inst, timeout);
    int64_t ms = cf_now_ms() - t0;
    size_t after = cf_pending(&ci->rec);
    if (ms > timeout + 5000)
        cf_fail(run, "flush_timeout",
                "flush(%d ms) returned after %lld ms: it must return by its "
                "timeout",
                timeout, (long long)ms);
    else if (r < after)
        cf_fail(run, "flush_timeout",
                "flush returned %zu but %zu messages still had no "
                "completion: count a message as in flight until its "
                "complete() call has returned",
                r, after);
    else if (r > before)
        cf_fail(run, "flush_timeout", "flush returned %zu, more than the %zu messages in flight", r,
                before);
    else
        cf_pass(run, "flush_timeout", "flush(%d) returned %zu after %lld ms (%zu were in flight)",
                timeout, r, (long long)ms, before);
    size_t left = cf_drain(run, ci);
    if (left)
        cf_fail(run, "flush_drain", "%zu messages never completed after flush", left);
    r = run->def->flush(ci->inst, 0);
    if (r != 0)
        cf_fail(run, "flush_empty", "flush returned %zu with nothing in flight", r);
    cf_violations(run, &ci->rec, "flush_timeout");
}
