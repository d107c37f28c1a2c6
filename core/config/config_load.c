/* config.h's entry points: read the file, load each part in order, free. */
#include "config/config.h"

#include <libconfig.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config/config_fanout.h"
#include "config/config_outputs.h"
#include "config/config_read.h"
#include "config/settings.h"

/* Anyone who can write the config, or a file it includes, chooses the
 * drivers the relay loads: such a file is refused. Includes are found in
 * the text (libconfig 1.5 has no include hook), each read beside dir, to a
 * depth of 10 as libconfig. */
static int refuse_writable(const char *path, const char *dir, int depth, char *err, size_t err_size)
{
    struct stat sb;
    if (stat(path, &sb) == 0 && (sb.st_mode & S_IWOTH))
        return snprintf(err, err_size,
                        "%s: the config file is writable by every user (mode %03o): whoever can "
                        "write it chooses the code the relay loads; chmod o-w it",
                        path, (unsigned)(sb.st_mode & 0777)),
               -1;
    FILE *f = depth < 10 ? fopen(path, "r") : NULL;
    char line[4096], name[4096], included[8192];
    int rc = 0;
    while (f && rc == 0 && fgets(line, sizeof line, f))
        if (sscanf(line, " @include \"%4095[^\"]\"", name) == 1) {
            snprintf(included, sizeof included, "%s%s%s", name[0] == '/' ? "" : dir,
                     name[0] == '/' ? "" : "/", name);
            rc = refuse_writable(included, dir, depth + 1, err, err_size);
        }
    if (f)
        fclose(f);
    return rc;
}

/* Parses path into lc; -1 with err (FILE:LINE: what) when it cannot. */
static int read_file(config_t *lc, const char *path, char *err, size_t err_size)
{
    /* @include "x.cfg" is read beside this file, wherever the relay starts */
    char dir[4096];
    const char *slash = strrchr(path, '/');
    snprintf(dir, sizeof dir, "%.*s",
             !slash          ? 1
             : slash == path ? 1
                             : (int)(slash - path),
             slash ? path : ".");
    config_set_include_dir(lc, dir);
    if (refuse_writable(path, dir, 0, err, err_size) < 0)
        return -1;
    if (config_read_file(lc, path))
        return 0;
    if (config_error_type(lc) == CONFIG_ERR_FILE_IO)
        snprintf(err, err_size, "%s: cannot read config file", path);
    else
        snprintf(err, err_size, "%s:%d: %s", config_error_file(lc) ? config_error_file(lc) : path,
                 config_error_line(lc), config_error_text(lc));
    return -1;
}

/* One outbox's config: the file's top level, with entry's (a member of
 * `sources`, or NULL) database and relay settings over it. */
static relay_config *load_one(const config_setting_t *root, const config_setting_t *entry,
                              const char *path, char *err, size_t err_size)
{
    static const char *const keys[] = {"database", "relay",   "log",    "metrics",
                                       "admin",    "outputs", "routes", "dead_letter",
                                       "tracing",  "sources", NULL};
    static const char *const entry_keys[] = {"name", "database", "relay", NULL};
    relay_config *cfg = calloc(1, sizeof *cfg);
    cfg->path = strdup(path);
    settings_set_defaults(cfg);
    cfg_reader st = {cfg, err, err_size, 0};
    if (cfg_check_keys(&st, root, "the top level", keys) == 0 &&
        cfg_check_keys(&st, entry, "a source of sources", entry_keys) == 0) {
        if (entry && cfg_get_string(&st, entry, "name", &cfg->source_name, 0) == 0)
            cfg_fail(&st, entry, "a source of sources has no name: { name = \"orders\"; ... }");
        if (!st.failed)
            settings_load(&st, root, entry);
        if (!st.failed)
            config_load_outputs(&st, cfg_member(root, "outputs"));
        if (!st.failed)
            config_load_routes(&st, cfg_member(root, "routes"));
        if (!st.failed)
            config_load_dead_letter(&st, cfg_member(root, "dead_letter"));
    }
    if (st.failed) {
        config_free(cfg);
        return NULL;
    }
    return cfg;
}

static int same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Two shards of one layout of a cursor: they share the table, not a row. */
static int other_cursor_shard(const relay_config *a, const relay_config *b)
{
    return a->source == SOURCE_CURSOR && b->source == SOURCE_CURSOR &&
           a->cursor_shards == b->cursor_shards && a->cursor_shard != b->cursor_shard;
}

/* Two sources may not share a name, a table (but for cursor shards), or a
 * slot name. */
static int check_distinct(relay_config **cfgs, size_t count, const config_setting_t *list,
                          char *err, size_t err_size)
{
    for (size_t i = 0; i < count; i++) {
        const char *name = cfgs[i]->source_name;
        const config_setting_t *entry =
            list ? config_setting_get_elem(list, (unsigned)i) : NULL; /* NULL: a fan-out target */
        int line = entry ? config_setting_source_line(entry) : 0;
        if (!name[0] || strlen(name) > 64 ||
            strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") !=
                strlen(name)) {
            snprintf(err, err_size,
                     "%s:%d: source name \"%s\": 1 to 64 letters, digits, '_', '.' or '-' (it is "
                     "a metrics label and a command-line word)",
                     cfgs[i]->path, line, name);
            return -1;
        }
        for (size_t j = 0; j < i; j++) {
            const relay_config *a = cfgs[j], *b = cfgs[i];
            const char *clash = NULL;
            if (strcmp(a->source_name, b->source_name) == 0)
                clash = "have the same name";
            else if (same(a->conninfo, b->conninfo) && same(a->schema, b->schema) &&
                     same(a->table, b->table) && !other_cursor_shard(a, b))
                clash = "relay the same table (each event would go out once per source)";
            else if (a->source == SOURCE_WAL && b->source == SOURCE_WAL &&
                     same(a->wal_slot, b->wal_slot)) /* slot names are the server's */
                clash = "name the same slot (a server's slot names are shared by its databases: "
                        "set relay.wal.slot in one of them)";
            if (clash) {
                snprintf(err, err_size, "%s:%d: sources %s and %s %s", b->path, line,
                         a->source_name, b->source_name, clash);
                return -1;
            }
        }
    }
    return 0;
}

/* Each source with fan-out routes gets a source per target after the file's
 * own (config_fanout.h); a source named by no `sources` entry is named after
 * its table then. NULL (cfgs freed) with err on an error. */
static relay_config **expand_fanout(const config_setting_t *root, const config_setting_t *list,
                                    relay_config **cfgs, size_t *count, char *err, size_t err_size)
{
    size_t own = *count;
    for (size_t i = 0; i < own; i++) {
        /* a target is an output: there are no more than outputs */
        const char **targets = calloc(cfgs[i]->output_count, sizeof *targets);
        size_t n = targets ? fanout_targets(cfgs[i], targets) : 0;
        if (!n) {
            free(targets);
            continue;
        }
        if (!cfgs[i]->source_name)
            cfgs[i]->source_name = strdup(cfgs[i]->table);
        cfgs = realloc(cfgs, (*count + n) * sizeof *cfgs);
        const config_setting_t *entry = list ? config_setting_get_elem(list, (unsigned)i) : NULL;
        for (size_t t = 0; t < n; t++) {
            relay_config *d = load_one(root, entry, cfgs[i]->path, err, err_size);
            if (!d || fanout_make_target(d, cfgs[i]->source_name, targets[t], err, err_size) < 0) {
                free(targets);
                config_free(d);
                config_free_all(cfgs, *count);
                return NULL;
            }
            cfgs[(*count)++] = d;
        }
        free(targets);
        if (fanout_make_source(cfgs[i], err, err_size) < 0) {
            config_free_all(cfgs, *count);
            return NULL;
        }
    }
    return cfgs;
}

relay_config **config_load_all(const char *path, size_t *count, char *err, size_t err_size)
{
    config_t lc;
    config_init(&lc);
    *count = 0;
    if (read_file(&lc, path, err, err_size) < 0) {
        config_destroy(&lc);
        return NULL;
    }
    const config_setting_t *root = config_root_setting(&lc);
    const config_setting_t *list = cfg_member(root, "sources");
    int n = list ? config_setting_length(list) : 1;
    relay_config **cfgs = calloc((size_t)(n > 0 ? n : 1), sizeof *cfgs);
    if (list && (!config_setting_is_list(list) || n == 0)) {
        snprintf(err, err_size,
                 "%s:%d: sources must be a non-empty list of outboxes: sources = ( { name = "
                 "\"orders\"; database = { ... }; relay = { ... }; }, ... );",
                 path, config_setting_source_line(list));
        n = -1;
    }
    for (int i = 0; i < n; i++) {
        const config_setting_t *entry = list ? config_setting_get_elem(list, (unsigned)i) : NULL;
        if (!(cfgs[i] = load_one(root, entry, path, err, err_size)))
            n = -1;
        else
            *count = (size_t)i + 1;
    }
    if (n > 0)
        cfgs = expand_fanout(root, list, cfgs, count, err, err_size);
    if (!cfgs)
        n = -1;
    if (n > 0 && (list || *count > 1) && check_distinct(cfgs, *count, list, err, err_size) < 0)
        n = -1;
    config_destroy(&lc);
    if (n < 0) {
        config_free_all(cfgs, *count);
        *count = 0;
        return NULL;
    }
    return cfgs;
}

void config_free_all(relay_config **cfgs, size_t count)
{
    for (size_t i = 0; cfgs && i < count; i++)
        config_free(cfgs[i]);
    free(cfgs);
}

/* The sources the file lists itself (not fan-out targets). */
static size_t own_sources(relay_config **cfgs, size_t count)
{
    size_t n = 0;
    for (size_t i = 0; i < count; i++)
        n += !cfgs[i]->fanout_of;
    return n;
}

relay_config *config_load_source(const char *path, const char *name, char *err, size_t err_size)
{
    size_t count;
    relay_config **cfgs = config_load_all(path, &count, err, err_size);
    if (!cfgs)
        return NULL;
    relay_config *found = NULL;
    int one_own = own_sources(cfgs, count) == 1; /* without a name: the file's only own one */
    for (size_t i = 0; i < count && !found; i++)
        if (name ? cfgs[i]->source_name && strcmp(cfgs[i]->source_name, name) == 0
                 : one_own && !cfgs[i]->fanout_of)
            found = cfgs[i];
    if (!found) {
        char names[512] = "";
        for (size_t i = 0; i < count; i++) {
            size_t len = strlen(names);
            snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "",
                     cfgs[i]->source_name ? cfgs[i]->source_name : "(none)");
        }
        if (name)
            snprintf(err, err_size, "%s: no source named \"%s\" (its sources: %s)", path, name,
                     names);
        else
            snprintf(err, err_size, "%s lists %zu sources (%s): choose one with --outbox NAME",
                     path, count, names);
    }
    for (size_t i = 0; i < count; i++)
        if (cfgs[i] != found)
            config_free(cfgs[i]);
    free(cfgs);
    return found;
}

relay_config *config_load(const char *path, char *err, size_t err_size)
{
    return config_load_source(path, NULL, err, err_size);
}

void config_free_route(cfg_route *r)
{
    free(r->event_type);
    free(r->aggregate_type);
    free(r->output);
    free(r->destination);
    free(r->dead_letter_output);
    free(r->dead_letter_destination);
    for (size_t k = 0; k < r->header_count; k++) {
        free(r->headers[k].name);
        free(r->headers[k].glob);
    }
    free(r->headers);
    for (size_t k = 0; k < r->shape_count; k++) {
        free(r->shape[k].name);
        free(r->shape[k].value);
    }
    free(r->shape);
    for (size_t k = 0; k < r->fanout_count; k++)
        free(r->fanout[k]);
    free(r->fanout);
}

void config_free(relay_config *cfg)
{
    if (!cfg)
        return;
    for (size_t i = 0; i < cfg->output_count; i++) {
        cfg_output *o = &cfg->outputs[i];
        for (size_t j = 0; j < o->option_count; j++) {
            free(o->options[j].name);
            free(o->options[j].s);
        }
        for (size_t j = 0; j < o->property_count; j++) {
            free(o->properties[j].key);
            free(o->properties[j].value);
        }
        free(o->options);
        free(o->properties);
        free(o->name);
        free(o->driver);
    }
    for (size_t i = 0; i < cfg->route_count; i++)
        config_free_route(&cfg->routes[i]);
    settings_free(cfg);
    free(cfg->outputs);
    free(cfg->routes);
    free(cfg->dead_letter_output);
    free(cfg->dead_letter_destination);
    free(cfg->path);
    free(cfg->source_name);
    free(cfg->fanout_of);
    free(cfg);
}

const cfg_value *config_output_option(const cfg_output *out, const char *name)
{
    for (size_t i = 0; i < out->option_count; i++)
        if (strcmp(out->options[i].name, name) == 0)
            return &out->options[i];
    return NULL;
}
