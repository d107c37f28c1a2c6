/* The metrics endpoint over several sources: each source's text rendered
 * as for one outbox, then merged so that every series carries a `source`
 * label and every family is declared once (the text format allows no
 * second HELP or TYPE line of a name); the probes answer for every source,
 * or the one `?source=NAME` asks for. */
#ifndef OBX_METRICS_SOURCES_H
#define OBX_METRICS_SOURCES_H

#include <stddef.h>

#include "host/source_set.h"

/* texts[i], rendered for the source names[i], merged family by family in
 * the order they first appear, each sample labelled source="names[i]"
 * (names are plain: letters, digits, '_', '.', '-'). NULL when out of memory. */
char *metrics_merge(const char *const *texts, const char *const *names, size_t n, size_t *len);

/* /metrics for the set: one source's text as it is when the config lists
 * none, else merged. */
char *metrics_render_set(source_set *set, size_t *len);

/* /healthz (ready 0) or /readyz (ready 1) for the set: 200 when every
 * source (or the one named only) passes, else 503; 404 when only names no
 * source. The body: one source's as it is when the config lists none, else
 * {"status": ..., "sources": {NAME: its body, ...}}. */
int probe_set(source_set *set, int ready, const char *only, char **body);

#endif
