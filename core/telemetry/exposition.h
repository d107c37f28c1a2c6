/* Prometheus' text exposition format, written once for the metrics
 * endpoint and for the series a source renders of its own. */
#ifndef OBX_EXPOSITION_H
#define OBX_EXPOSITION_H

#include <stdio.h>

/* A label value as the format wants it: \\, \" and \n escaped. */
void expo_label(FILE *f, const char *value);
/* A family's HELP and TYPE lines. */
void expo_family(FILE *f, const char *name, const char *type, const char *help);
/* A family of one unlabelled series. */
void expo_total(FILE *f, const char *name, const char *help, long long v);
void expo_gauge(FILE *f, const char *name, const char *help, double v);
/* A counter whose value is not whole (seconds). */
void expo_total_f(FILE *f, const char *name, const char *help, double v);

#endif
