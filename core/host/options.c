#include "host/options.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "obx/cloudevents.h"

static const char *const type_words[] = {"a string", "an integer", "a boolean", "a number"};
static const char *const type_names[] = {"string", "int", "bool", "double"};

const obx_option *options_find(const obx_driver_def *def, const char *name)
{
    for (const obx_option *o = def->options; name && o && o->name; o++)
        if (strcmp(o->name, name) == 0)
            return o;
    return NULL;
}

const obx_option_spec *options_spec(const obx_driver_def *def, const obx_option *o)
{
    return def->option_specs && o ? &def->option_specs[o - def->options] : NULL;
}

/* The option whose spec names OLD as its former name, or NULL. */
static const obx_option *renamed_to(const obx_driver_def *def, const char *old)
{
    for (const obx_option *o = def->options; def->option_specs && o && o->name; o++) {
        const obx_option_spec *s = options_spec(def, o);
        if (s->renamed_from && strcmp(s->renamed_from, old) == 0)
            return o;
    }
    return NULL;
}

static int has_range(const obx_option_spec *s)
{
    return s && s->min < s->max;
}

/* Parses TEXT as written in a config into the member of out for TYPE. */
static int parse_text(obx_option_type type, const char *text, cfg_value *out)
{
    char *end;
    errno = 0;
    switch (type) {
    case OBX_OPT_STRING: out->s = (char *)text; return 0;
    case OBX_OPT_INT:
        out->i = strtoll(text, &end, 10);
        return errno || end == text || *end ? -1 : 0;
    case OBX_OPT_DOUBLE:
        out->d = strtod(text, &end);
        return errno || end == text || *end || !isfinite(out->d) ? -1 : 0;
    case OBX_OPT_BOOL:
        out->b = strcmp(text, "true") == 0;
        return out->b || strcmp(text, "false") == 0 ? 0 : -1;
    }
    return -1;
}

void options_describe_allowed(const obx_option *o, const obx_option_spec *s, char *buf, size_t size)
{
    buf[0] = '\0';
    if (!s)
        return;
    if (has_range(s) && o->type == OBX_OPT_INT)
        snprintf(buf, size, "%.0f .. %.0f", s->min, s->max);
    else if (has_range(s))
        snprintf(buf, size, "%g .. %g", s->min, s->max);
    else if (s->choices && s->choices[0]) {
        size_t n = (size_t)snprintf(buf, size, "one of");
        for (const char *const *c = s->choices; *c && n < size; c++)
            n += (size_t)snprintf(buf + n, size - n, "%s \"%s\"", c == s->choices ? "" : ",", *c);
    }
}

/* Is v (already of o's type) allowed by s? If not, says why in why. */
static int value_allowed(const obx_option *o, const obx_option_spec *s, const cfg_value *v,
                         char *why, size_t size)
{
    char allowed[256];
    options_describe_allowed(o, s, allowed, sizeof allowed);
    if (has_range(s) && o->type == OBX_OPT_INT && (v->i < s->min || v->i > s->max)) {
        snprintf(why, size, "must be in %s (got %lld)", allowed, (long long)v->i);
        return 0;
    }
    if (has_range(s) && o->type == OBX_OPT_DOUBLE && (v->d < s->min || v->d > s->max)) {
        snprintf(why, size, "must be in %s (got %g)", allowed, v->d);
        return 0;
    }
    if (s && o->type == OBX_OPT_STRING && s->choices) {
        for (const char *const *c = s->choices; *c; c++)
            if (strcmp(*c, v->s) == 0)
                return 1;
        if (o->flags & OBX_OPT_SECRET)
            snprintf(why, size, "must be %s", allowed);
        else
            snprintf(why, size, "must be %s (got \"%s\")", allowed, v->s);
        return 0;
    }
    return 1;
}

/* One spec's own consistency; why gets the bug. */
static int spec_ok(const obx_driver_def *def, const obx_option *o, const obx_option_spec *s,
                   char *why, size_t size)
{
    int numeric = o->type == OBX_OPT_INT || o->type == OBX_OPT_DOUBLE;
    if (isnan(s->min) || isnan(s->max) || s->min > s->max || (s->min == s->max && s->min != 0)) {
        snprintf(why, size, "min %g and max %g are no range (a range needs min < max)", s->min,
                 s->max);
        return 0;
    }
    if (!numeric && (s->min != 0 || s->max != 0)) {
        snprintf(why, size, "a range is for int and double options, not %s ones",
                 type_names[o->type]);
        return 0;
    }
    if (s->choices && (o->type != OBX_OPT_STRING || !s->choices[0])) {
        snprintf(why, size, "%s", s->choices[0] ? "choices are for string options" : "no choices");
        return 0;
    }
    if (s->renamed_from) {
        const obx_option *clash = options_find(def, s->renamed_from);
        const obx_option *first = renamed_to(def, s->renamed_from);
        if (!s->renamed_from[0] || clash || first != o) {
            snprintf(why, size, "renamed_from \"%s\" is empty, declared, or another's old name",
                     s->renamed_from);
            return 0;
        }
    }
    if (s->default_value) {
        cfg_value v = {0};
        char allowed[384];
        if (parse_text(o->type, s->default_value, &v) != 0) {
            snprintf(why, size, "default \"%s\" is not %s",
                     o->flags & OBX_OPT_SECRET ? "(secret)" : s->default_value,
                     type_words[o->type]);
            return 0;
        }
        if (!value_allowed(o, s, &v, allowed, sizeof allowed)) {
            snprintf(why, size, "default %s", allowed);
            return 0;
        }
    }
    return 1;
}

int options_check_specs(const obx_driver_def *def, char *err, size_t err_size)
{
    if (!def->option_specs)
        return 0;
    if (!def->options || !def->options[0].name) {
        snprintf(err, err_size, "option_specs without options");
        return -1;
    }
    for (const obx_option *o = def->options; o->name; o++) {
        char why[512];
        if ((unsigned)o->type > OBX_OPT_DOUBLE) {
            snprintf(err, err_size, "option \"%s\": unknown type %d", o->name, (int)o->type);
            return -1;
        }
        if (!spec_ok(def, o, options_spec(def, o), why, sizeof why)) {
            snprintf(err, err_size, "option \"%s\": %s", o->name, why);
            return -1;
        }
    }
    return 0;
}

/* The description without a leading "deprecated: " (the warning says it already). */
static const char *deprecation_text(const obx_option *o)
{
    const char *d = o->description ? o->description : "";
    return strncmp(d, "deprecated: ", 12) == 0 ? d + 12 : d;
}

/* Checks one value written in the output; o is the option it sets. */
static int check_one(const relay_config *cfg, const cfg_output *output, const obx_driver_def *def,
                     const obx_option *o, cfg_value *v, char *err, size_t err_size)
{
    /* an integer literal is a fine value for a number option */
    if (o->type == OBX_OPT_DOUBLE && v->type == OBX_OPT_INT) {
        v->d = (double)v->i;
        v->type = OBX_OPT_DOUBLE;
    }
    if ((int)o->type != v->type) {
        snprintf(err, err_size, "%s:%d: output \"%s\": option \"%s\" must be %s", cfg->path,
                 v->line, output->name, v->name, type_words[o->type]);
        return -1;
    }
    char why[640];
    if (!value_allowed(o, options_spec(def, o), v, why, sizeof why)) {
        snprintf(err, err_size, "%s:%d: output \"%s\": option \"%s\" %s", cfg->path, v->line,
                 output->name, v->name, why);
        return -1;
    }
    static const char *const templates[] = OBX_CE_TEMPLATE_OPTIONS;
    for (size_t t = 0; o->type == OBX_OPT_STRING && t < sizeof templates / sizeof *templates; t++)
        if (strcmp(o->name, templates[t]) == 0 &&
            obx_ce_template_check(v->s, why, sizeof why) < 0) {
            snprintf(err, err_size, "%s:%d: output \"%s\": option \"%s\": %s", cfg->path, v->line,
                     output->name, v->name, why);
            return -1;
        }
    if (o->flags & OBX_OPT_DEPRECATED)
        log_warn("%s:%d: output \"%s\": option \"%s\" is deprecated: %s", cfg->path, v->line,
                 output->name, v->name, deprecation_text(o));
    return 0;
}

int options_validate(const relay_config *cfg, const cfg_output *output, const obx_driver_def *def,
                     char *err, size_t err_size)
{
    for (size_t i = 0; i < output->option_count; i++) {
        cfg_value *v = &output->options[i]; /* types are settled here, once */
        const obx_option *o = options_find(def, v->name);
        if (!o && (o = renamed_to(def, v->name))) {
            const cfg_value *both = config_output_option(output, o->name);
            if (both) {
                snprintf(err, err_size,
                         "%s:%d: output \"%s\": option \"%s\" is the old name of \"%s\" (line "
                         "%d): set only \"%s\"",
                         cfg->path, v->line, output->name, v->name, o->name, both->line, o->name);
                return -1;
            }
            log_warn("%s:%d: output \"%s\": option \"%s\" is now called \"%s\": use the new name",
                     cfg->path, v->line, output->name, v->name, o->name);
        }
        if (!o) {
            snprintf(err, err_size, "%s:%d: output \"%s\": driver \"%s\" has no option \"%s\"",
                     cfg->path, v->line, output->name, def->name, v->name);
            return -1;
        }
        if (check_one(cfg, output, def, o, v, err, err_size) < 0)
            return -1;
    }
    for (const obx_option *o = def->options; o && o->name; o++) {
        const obx_option_spec *s = options_spec(def, o);
        if ((o->flags & OBX_OPT_REQUIRED) && !config_output_option(output, o->name) &&
            !(s && s->renamed_from && config_output_option(output, s->renamed_from))) {
            snprintf(err, err_size, "%s:%d: output \"%s\": driver \"%s\" requires option \"%s\"",
                     cfg->path, output->line, output->name, def->name, o->name);
            return -1;
        }
    }
    return 0;
}

int options_value(const obx_driver_def *def, const cfg_output *output, const char *name,
                  obx_option_type type, cfg_value *out)
{
    const obx_option *o = options_find(def, name);
    const obx_option_spec *s = options_spec(def, o);
    const cfg_value *v = output ? config_output_option(output, name) : NULL;
    if (!v && output && s && s->renamed_from)
        v = config_output_option(output, s->renamed_from);
    if (v) {
        if (v->type != (int)type)
            return 0;
        *out = *v;
        return 1;
    }
    /* the default was checked at load by the same parser: it cannot fail here */
    if (!o || o->type != type || !s || !s->default_value)
        return 0;
    return parse_text(type, s->default_value, out) == 0;
}

void options_print_table(FILE *out, const obx_driver_def *def)
{
    if (!def->options || !def->options[0].name) {
        fprintf(out, "    (no options)\n");
        return;
    }
    fprintf(out, "    %-24s %-6s %-14s %-22s %s\n", "option", "type", "default", "allowed",
            "flags: description");
    for (const obx_option *o = def->options; o->name; o++) {
        const obx_option_spec *s = options_spec(def, o);
        char allowed[512], flags[160] = "", dflt[128] = "-";
        options_describe_allowed(o, s, allowed, sizeof allowed);
        if (s && s->default_value && (o->flags & OBX_OPT_SECRET))
            snprintf(dflt, sizeof dflt, "(hidden)");
        else if (s && s->default_value) /* strings quoted: "-" is a value, - is none */
            snprintf(dflt, sizeof dflt, o->type == OBX_OPT_STRING ? "\"%s\"" : "%s",
                     s->default_value);
        size_t n = 0;
        static const struct {
            unsigned bit;
            const char *word;
        } words[] = {{OBX_OPT_REQUIRED, "required"},
                     {OBX_OPT_SECRET, "secret"},
                     {OBX_OPT_DEPRECATED, "deprecated"}};
        for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
            if (o->flags & words[i].bit)
                n += (size_t)snprintf(flags + n, sizeof flags - n, "%s%s", n ? ", " : "",
                                      words[i].word);
        if (s && s->renamed_from && n < sizeof flags)
            n += (size_t)snprintf(flags + n, sizeof flags - n, "%srenamed from %s", n ? ", " : "",
                                  s->renamed_from);
        fprintf(out, "    %-24s %-6s %-14s %-22s %s%s%s\n", o->name,
                (unsigned)o->type <= OBX_OPT_DOUBLE ? type_names[o->type] : "?", dflt,
                allowed[0] ? allowed : "-", flags, n ? ": " : "",
                o->flags & OBX_OPT_DEPRECATED ? deprecation_text(o)
                : o->description              ? o->description
                                              : "");
    }
}
