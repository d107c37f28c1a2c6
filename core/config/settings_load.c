/* What walks the settings table: the defaults, the loader, freeing, the
 * fixed settings of a reload and the column lookup. */
#include "config/settings.h"

#include <stdlib.h>
#include <string.h>

static void *slot_of(relay_config *cfg, const setting_def *def)
{
    return (char *)cfg + def->offset;
}

static const void *running_slot(const relay_config *cfg, const setting_def *def)
{
    return (const char *)cfg + def->offset;
}

static int scale_of(const setting_def *def)
{
    return def->scale ? def->scale : 1;
}

void setting_path(const setting_def *def, char *out, size_t cap)
{
    snprintf(out, cap, "%s.%s", def->section, def->key);
}

void settings_set_defaults(relay_config *cfg)
{
    size_t n;
    const setting_def *t = settings_table(&n);
    for (size_t i = 0; i < n; i++) {
        void *slot = slot_of(cfg, &t[i]);
        switch (t[i].type) {
        case SETTING_INT: *(int *)slot = (int)t[i].def * scale_of(&t[i]); break;
        case SETTING_DOUBLE: *(double *)slot = t[i].def; break;
        case SETTING_ENUM:
        case SETTING_BOOL: *(int *)slot = (int)t[i].def; break;
        case SETTING_STRING: *(char **)slot = t[i].text ? strdup(t[i].text) : NULL; break;
        }
        cfg->from_file[i] = 0;
    }
}

void settings_free(relay_config *cfg)
{
    size_t n;
    const setting_def *t = settings_table(&n);
    for (size_t i = 0; i < n; i++)
        if (t[i].type == SETTING_STRING)
            free(*(char **)slot_of(cfg, &t[i]));
}

/* The group at a dotted path under root, or NULL. */
static const config_setting_t *group_at(const config_setting_t *root, const char *path)
{
    char name[64];
    const config_setting_t *g = root;
    while (g && *path) {
        size_t len = strcspn(path, ".");
        snprintf(name, sizeof name, "%.*s", (int)len, path);
        g = cfg_member(g, name);
        path += len + (path[len] == '.');
    }
    return g;
}

/* The keys a section may hold: its rows and its subsections. */
static void known_keys(const char *path, const char **keys, size_t cap)
{
    size_t n, ns, k = 0, len = strlen(path);
    const setting_def *t = settings_table(&n);
    const setting_section *s = settings_sections(&ns);
    for (size_t i = 0; i < n && k + 1 < cap; i++)
        if (strcmp(t[i].section, path) == 0)
            keys[k++] = t[i].key;
    for (size_t i = 0; i < ns && k + 1 < cap; i++)
        if (strncmp(s[i].path, path, len) == 0 && s[i].path[len] == '.' &&
            !strchr(s[i].path + len + 1, '.'))
            keys[k++] = s[i].path + len + 1;
    keys[k] = NULL;
}

/* 1 when the file set the row's value, 0 when absent, -1 on an error. */
static int read_row(cfg_reader *st, const config_setting_t *group, const setting_def *def)
{
    void *slot = slot_of(st->cfg, def);
    int v = 0, r = 0;
    switch (def->type) {
    case SETTING_INT:
        r = cfg_get_int(st, group, def->key, &v, (long long)def->min, (long long)def->max);
        if (r > 0)
            *(int *)slot = v * scale_of(def);
        return r;
    case SETTING_DOUBLE: return cfg_get_double(st, group, def->key, slot, def->min, def->max);
    case SETTING_ENUM: return cfg_get_enum(st, group, def->key, slot, def->choices);
    case SETTING_BOOL: return cfg_get_bool(st, group, def->key, slot);
    case SETTING_STRING: return cfg_get_string(st, group, def->key, slot, 0);
    }
    return r;
}

/* The group that supplies def's value: the overlay's when it sets it. */
static const config_setting_t *supplier(const config_setting_t *group, const config_setting_t *over,
                                        const setting_def *def)
{
    return cfg_member(over, def->key) ? over : group;
}

/* The section's keys, then each row's value (the overlay's, a source's
 * override, before the file's top level), then the checks of the values the
 * file set: the order the first error is found in. */
static int load_section(cfg_reader *st, const config_setting_t *root,
                        const config_setting_t *overlay, const setting_section *sec)
{
    size_t n;
    const setting_def *t = settings_table(&n);
    const config_setting_t *group = group_at(root, sec->path);
    const config_setting_t *over = overlay ? group_at(overlay, sec->path) : NULL;
    if (!group && !over && sec->missing)
        return cfg_fail(st, NULL, "%s", sec->missing);
    const char *keys[CFG_SETTINGS_MAX + 16];
    known_keys(sec->path, keys, sizeof keys / sizeof keys[0]);
    for (int layer = 0; layer < 2; layer++) {
        const config_setting_t *g = layer ? over : group;
        if (g && sec->shape && !config_setting_is_group(g))
            return cfg_fail(st, g, "%s must be a group %s", sec->path, sec->shape);
        if (cfg_check_keys(st, g, sec->path, keys) < 0)
            return -1;
    }
    for (size_t i = 0; (group || over) && i < n; i++)
        if (strcmp(t[i].section, sec->path) == 0 && t[i].required && !cfg_member(group, t[i].key) &&
            !cfg_member(over, t[i].key))
            return cfg_fail(st, over ? over : group, "%s", t[i].required);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(t[i].section, sec->path) != 0)
            continue;
        int r = read_row(st, supplier(group, over, &t[i]), &t[i]);
        if (r < 0)
            return -1;
        st->cfg->from_file[i] = r > 0;
    }
    for (size_t i = 0; i < n; i++)
        if (st->cfg->from_file[i] && t[i].check && strcmp(t[i].section, sec->path) == 0 &&
            t[i].check(st, cfg_member(supplier(group, over, &t[i]), t[i].key), &t[i],
                       slot_of(st->cfg, &t[i])) < 0)
            return -1;
    if (sec->after)
        sec->after(st, over ? over : group);
    return st->failed ? -1 : 0;
}

void settings_load(cfg_reader *st, const config_setting_t *root, const config_setting_t *overlay)
{
    size_t ns;
    const setting_section *s = settings_sections(&ns);
    for (size_t i = 0; i < ns && !st->failed; i++)
        load_section(st, root, overlay, &s[i]);
}

static int same_text(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

int settings_keep_fixed(relay_config *cfg, const relay_config *run, void (*kept)(const char *path))
{
    size_t n;
    int count = 0;
    const setting_def *t = settings_table(&n);
    for (size_t i = 0; i < n; i++) {
        if (t[i].reload != SETTING_FIXED)
            continue;
        void *now = slot_of(cfg, &t[i]);
        const void *was = running_slot(run, &t[i]);
        int same = t[i].type == SETTING_STRING   ? same_text(*(char **)now, *(char *const *)was)
                   : t[i].type == SETTING_DOUBLE ? *(double *)now == *(const double *)was
                                                 : *(int *)now == *(const int *)was;
        if (same)
            continue;
        char path[128];
        setting_path(&t[i], path, sizeof path);
        kept(path);
        count++;
        if (t[i].type == SETTING_STRING) {
            const char *v = *(char *const *)was;
            free(*(char **)now);
            *(char **)now = v ? strdup(v) : NULL;
        } else {
            memcpy(now, was, t[i].type == SETTING_DOUBLE ? sizeof(double) : sizeof(int));
        }
        cfg->from_file[i] = run->from_file[i];
    }
    return count;
}

const char *config_column(const relay_config *cfg, const char *name, size_t len)
{
    size_t n;
    const setting_def *t = settings_table(&n);
    for (size_t i = 0; i < n; i++)
        if (strcmp(t[i].section, "database.columns") == 0 && strlen(t[i].key) == len &&
            strncmp(t[i].key, name, len) == 0)
            return *(char *const *)running_slot(cfg, &t[i]);
    return NULL;
}
