/* check-config --print: every setting of the table with its effective value. */
#include "config/settings.h"

#include <libpq-fe.h>
#include <string.h>

#include "base/conninfo.h"

/* A secret conninfo rebuilt from libpq's parse, each option libpq marks as
 * secret (dispchar '*': the password) shown as ***; the text as written
 * never is, so no spelling of the password can slip through. */
static void print_secret(FILE *out, const char *conninfo)
{
    PQconninfoOption *opts = conninfo ? conninfo_parse(conninfo) : NULL;
    if (!opts) {
        fputs("***", out);
        return;
    }
    fputc('"', out);
    int first = 1;
    for (PQconninfoOption *o = opts; o->keyword; o++) {
        if (!o->val)
            continue;
        char shown[512];
        log_escape_text(shown, sizeof shown, o->val);
        int secret = o->dispchar && o->dispchar[0] == '*';
        int quote = !secret && (!shown[0] || strpbrk(shown, " '\\\""));
        fprintf(out, "%s%s=%s%s%s", first ? "" : " ", o->keyword, quote ? "'" : "",
                secret ? "***" : shown, quote ? "'" : "");
        first = 0;
    }
    fputc('"', out);
    PQconninfoFree(opts);
}

static void print_value(FILE *out, const setting_def *def, const void *slot)
{
    int scale = def->scale ? def->scale : 1;
    char shown[1024];
    switch (def->type) {
    case SETTING_INT: fprintf(out, "%d", *(const int *)slot / scale); break;
    case SETTING_DOUBLE: fprintf(out, "%g", *(const double *)slot); break;
    case SETTING_ENUM: fprintf(out, "\"%s\"", def->choices[*(const int *)slot]); break;
    case SETTING_BOOL: fputs(*(const int *)slot ? "true" : "false", out); break;
    case SETTING_STRING:
        if (def->secret) {
            print_secret(out, *(char *const *)slot);
        } else if (!*(char *const *)slot) {
            fputs("(not set)", out);
        } else {
            log_escape_text(shown, sizeof shown, *(char *const *)slot);
            fprintf(out, "\"%s\"", shown);
        }
        break;
    }
}

void config_print_settings(FILE *out, const relay_config *cfg)
{
    size_t n;
    const setting_def *t = settings_table(&n);
    fprintf(out,
            "# effective settings of %s; \"default\": not set in the file; \"fixed\": a "
            "reload keeps the running value\n",
            cfg->path);
    for (size_t i = 0; i < n; i++) {
        char path[128];
        setting_path(&t[i], path, sizeof path);
        fprintf(out, "%s = ", path);
        print_value(out, &t[i], (const char *)cfg + t[i].offset);
        const char *from = !cfg->from_file[i] ? "default" : NULL;
        int fixed = t[i].reload == SETTING_FIXED;
        if (from || fixed)
            fprintf(out, "  # %s%s%s", from ? from : "", from && fixed ? ", " : "",
                    fixed ? "fixed" : "");
        if (!cfg->from_file[i] && t[i].derived)
            fprintf(out, " (from %s)", t[i].derived);
        fputc('\n', out);
    }
}
