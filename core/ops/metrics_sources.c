#include "ops/metrics_sources.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/metrics_render.h"
#include "ops/probes.h"
#include "telemetry/process_metrics.h"

typedef struct family {
    char name[128];
    const char *header; /* its HELP and TYPE lines, in the first text that has them */
    size_t header_len;
    FILE *samples; /* every text's samples, labelled, in the texts' order */
    char *text;
    size_t text_len;
} family;

/* The family named so, made when new (each on its own: its stream writes
 * through pointers to its text). NULL when out of memory. */
static family *family_of(family ***all, size_t *count, const char *name, size_t name_len)
{
    for (size_t i = 0; i < *count; i++)
        if (strlen((*all)[i]->name) == name_len && strncmp((*all)[i]->name, name, name_len) == 0)
            return (*all)[i];
    family **grown = realloc(*all, (*count + 1) * sizeof **all);
    if (!grown)
        return NULL;
    *all = grown;
    family *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    grown[(*count)++] = f;
    snprintf(f->name, sizeof f->name, "%.*s", (int)name_len, name);
    f->samples = open_memstream(&f->text, &f->text_len);
    return f;
}

/* "name{a="b"} v" as "name{source="S",a="b"} v"; "name v" as "name{source="S"} v" */
static void labelled(FILE *out, const char *line, size_t len, const char *source)
{
    size_t name_len = strcspn(line, "{ ");
    if (name_len > len)
        name_len = len;
    fprintf(out, "%.*s{source=\"%s\"", (int)name_len, line, source);
    if (name_len < len && line[name_len] == '{')
        fprintf(out, ",%.*s\n", (int)(len - name_len - 1), line + name_len + 1);
    else
        fprintf(out, "}%.*s\n", (int)(len - name_len), line + name_len);
}

char *metrics_merge(const char *const *texts, const char *const *names, size_t n, size_t *len)
{
    family **all = NULL;
    size_t count = 0;
    int failed = 0;
    for (size_t t = 0; t < n && !failed; t++) {
        family *current = NULL;
        for (const char *line = texts[t]; *line && !failed;) {
            size_t line_len = strcspn(line, "\n");
            if (strncmp(line, "# HELP ", 7) == 0) { /* a family starts */
                const char *name = line + 7;
                current = family_of(&all, &count, name, strcspn(name, " \n"));
                failed = !current || !current->samples;
                if (!failed && !current->header) {
                    current->header = line;
                    const char *type = line + line_len + (line[line_len] == '\n');
                    current->header_len = line_len + 1;
                    if (strncmp(type, "# TYPE ", 7) == 0)
                        current->header_len += strcspn(type, "\n") + 1;
                }
            } else if (line[0] != '#' && line_len > 0 && current) {
                labelled(current->samples, line, line_len, names[t]);
            }
            line += line_len + (line[line_len] == '\n');
        }
    }
    char *body = NULL;
    FILE *out = open_memstream(&body, len);
    for (size_t i = 0; i < count; i++) {
        family *f = all[i];
        if (f->samples)
            fclose(f->samples);
        if (out && !failed) {
            fwrite(f->header, 1, f->header_len, out);
            if (f->text) /* NULL: no sample (a family may have none yet) */
                fwrite(f->text, 1, f->text_len, out);
        }
        free(f->text);
        free(f);
    }
    free(all);
    if (!out || fclose(out) != 0 || failed) {
        free(body);
        return NULL;
    }
    return body;
}

char *metrics_render_set(source_set *set, size_t *len)
{
    pthread_mutex_lock(&set->lock);
    char *body = NULL;
    if (!set->labelled && set->count == 1) {
        body = metrics_render(set->states[0], len);
    } else {
        size_t n = set->count;
        char **texts = calloc(n + 1, sizeof *texts);
        const char **names = calloc(n + 1, sizeof *names);
        int ok = texts && names;
        for (size_t i = 0; ok && i < n; i++) {
            size_t one;
            texts[i] = metrics_render(set->states[i], &one);
            names[i] = set->states[i]->cfg->source_name;
            ok = texts[i] != NULL;
        }
        body = ok ? metrics_merge((const char *const *)texts, names, n, len) : NULL;
        for (size_t i = 0; texts && i < n; i++)
            free(texts[i]);
        free(texts);
        free(names);
    }
    pthread_mutex_unlock(&set->lock);
    if (!body)
        return NULL;
    /* the process' own series, once, unlabelled */
    char *all = NULL;
    FILE *f = open_memstream(&all, len);
    if (!f) {
        free(body);
        return NULL;
    }
    fputs(body, f);
    process_metrics_render(f);
    fclose(f);
    free(body);
    return all;
}

int probe_set(source_set *set, int ready, const char *only, char **body)
{
    int (*probe)(relay_state *, char **) = ready ? probe_ready : probe_health;
    pthread_mutex_lock(&set->lock);
    int status = 200;
    if (!set->labelled && set->count == 1 && !only) {
        status = probe(set->states[0], body);
        pthread_mutex_unlock(&set->lock);
        return status;
    }
    json_t *sources = json_object();
    for (size_t i = 0; i < set->count; i++) {
        relay_state *st = set->states[i];
        if (only && (!st->cfg->source_name || strcmp(st->cfg->source_name, only) != 0))
            continue;
        char *one = NULL;
        int code = probe(st, &one);
        json_t *parsed = one ? json_loads(one, 0, NULL) : NULL;
        free(one);
        json_object_set_new(sources, st->cfg->source_name ? st->cfg->source_name : "outbox",
                            parsed ? parsed : json_null());
        if (code != 200 || !parsed)
            status = 503;
    }
    pthread_mutex_unlock(&set->lock);
    if (only && json_object_size(sources) == 0) {
        json_decref(sources);
        *body = strdup("{\"status\":\"no such source\"}");
        return 404;
    }
    const char *word =
        ready ? (status == 200 ? "ready" : "not ready") : (status == 200 ? "ok" : "stalled");
    json_t *o = json_pack("{s:s,s:o}", "status", word, "sources", sources);
    *body = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return status;
}
