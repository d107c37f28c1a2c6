#include "telemetry/exposition.h"

void expo_label(FILE *f, const char *value)
{
    for (const char *p = value; *p; p++) {
        if (*p == '\\' || *p == '"')
            fputc('\\', f);
        if (*p == '\n')
            fputs("\\n", f);
        else
            fputc(*p, f);
    }
}

void expo_family(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void expo_total(FILE *f, const char *name, const char *help, long long v)
{
    expo_family(f, name, "counter", help);
    fprintf(f, "%s %lld\n", name, v);
}

void expo_gauge(FILE *f, const char *name, const char *help, double v)
{
    expo_family(f, name, "gauge", help);
    fprintf(f, "%s %.15g\n", name, v);
}

void expo_total_f(FILE *f, const char *name, const char *help, double v)
{
    expo_family(f, name, "counter", help);
    fprintf(f, "%s %.6f\n", name, v);
}
