/* config.h's entry points: read the file, load each part in order, free. */
#include "config.h"

#include <libconfig.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config_outputs.h"
#include "config_read.h"
#include "settings.h"

relay_config *config_load(const char *path, char *err, size_t err_size)
{
    static const char *const keys[] = {"database", "relay",  "log",         "metrics", "admin",
                                       "outputs",  "routes", "dead_letter", "tracing", NULL};
    relay_config *cfg = calloc(1, sizeof *cfg);
    cfg->path = strdup(path);
    settings_set_defaults(cfg);
    cfg_reader st = {cfg, err, err_size, 0};

    /* anyone who can write the config chooses the drivers the relay loads */
    struct stat sb;
    if (stat(path, &sb) == 0 && (sb.st_mode & S_IWOTH)) {
        snprintf(err, err_size,
                 "%s: the config file is writable by every user (mode %03o): whoever can write it "
                 "chooses the code the relay loads; chmod o-w it",
                 path, (unsigned)(sb.st_mode & 0777));
        config_free(cfg);
        return NULL;
    }
    config_t lc;
    config_init(&lc);
    /* @include "x.cfg" is read beside this file, wherever the relay starts */
    char dir[4096];
    const char *slash = strrchr(path, '/');
    snprintf(dir, sizeof dir, "%.*s",
             !slash          ? 1
             : slash == path ? 1
                             : (int)(slash - path),
             slash ? path : ".");
    config_set_include_dir(&lc, dir);
    if (!config_read_file(&lc, path)) {
        if (config_error_type(&lc) == CONFIG_ERR_FILE_IO)
            snprintf(err, err_size, "%s: cannot read config file", path);
        else
            snprintf(err, err_size, "%s:%d: %s",
                     config_error_file(&lc) ? config_error_file(&lc) : path, config_error_line(&lc),
                     config_error_text(&lc));
        config_destroy(&lc);
        config_free(cfg);
        return NULL;
    }
    const config_setting_t *root = config_root_setting(&lc);
    if (cfg_check_keys(&st, root, "the top level", keys) == 0) {
        settings_load(&st, root);
        if (!st.failed)
            config_load_outputs(&st, cfg_member(root, "outputs"));
        if (!st.failed)
            config_load_routes(&st, cfg_member(root, "routes"));
        if (!st.failed)
            config_load_dead_letter(&st, cfg_member(root, "dead_letter"));
    }
    config_destroy(&lc);
    if (st.failed) {
        config_free(cfg);
        return NULL;
    }
    return cfg;
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
    for (size_t i = 0; i < cfg->route_count; i++) {
        cfg_route *r = &cfg->routes[i];
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
    }
    settings_free(cfg);
    free(cfg->outputs);
    free(cfg->routes);
    free(cfg->dead_letter_output);
    free(cfg->dead_letter_destination);
    free(cfg->path);
    free(cfg);
}

const cfg_value *config_output_option(const cfg_output *out, const char *name)
{
    for (size_t i = 0; i < out->option_count; i++)
        if (strcmp(out->options[i].name, name) == 0)
            return &out->options[i];
    return NULL;
}
