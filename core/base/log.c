#include "base/log.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static obx_log_level log_max = OBX_LOG_INFO;
static log_format log_fmt = LOG_FORMAT_TEXT;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *const level_names[] = {"error", "warn", "info", "debug"};

void log_setup(obx_log_level max_level, log_format format)
{
    log_max = max_level;
    log_fmt = format;
}

/* Writes s as the inside of a JSON string. */
static void json_escape(FILE *out, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
}

/* Writes s for a text log: control characters (a newline in row data would
 * start a forged line) and the backslash become C-style escapes. */
static void text_escape(FILE *out, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\\')
            fputs("\\\\", out);
        else if (c == '\n')
            fputs("\\n", out);
        else if (c == '\r')
            fputs("\\r", out);
        else if (c == '\t')
            fputs("\\t", out);
        else if (c < 0x20 || c == 0x7f)
            fprintf(out, "\\x%02x", c);
        else
            fputc(c, out);
    }
}

void log_escape_text(char *out, size_t cap, const char *s)
{
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    text_escape(f, s);
    fclose(f);
    snprintf(out, cap, "%s", text);
    free(text);
}

static _Thread_local const char *thread_source;

void log_thread_source(const char *name)
{
    thread_source = name;
}

void log_vmsg(obx_log_level level, const char *scope, const char *fmt, va_list ap)
{
    if (level > log_max)
        return;
    char text[2048];
    vsnprintf(text, sizeof text, fmt, ap);
    size_t len = strlen(text);
    while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r'))
        text[--len] = '\0';

    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    struct tm tm;
    gmtime_r(&now.tv_sec, &tm);
    char stamp[40];
    size_t n = strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(stamp + n, sizeof stamp - n, ".%03ldZ", now.tv_nsec / 1000000);

    /* the whole line is built first and written at once: stderr is
     * unbuffered, and lines of threads and processes must not interleave */
    char *line = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&line, &size);
    if (log_fmt == LOG_FORMAT_JSON) {
        fprintf(out, "{\"ts\":\"%s\",\"level\":\"%s\"", stamp, level_names[level]);
        if (thread_source) {
            fputs(",\"source\":\"", out);
            json_escape(out, thread_source);
            fputc('"', out);
        }
        if (scope) {
            fputs(",\"scope\":\"", out);
            json_escape(out, scope);
            fputc('"', out);
        }
        fputs(",\"msg\":\"", out);
        json_escape(out, text);
        fputs("\"}\n", out);
    } else {
        fprintf(out, "%s %-5s ", stamp, level_names[level]);
        if (thread_source) {
            fputc('[', out);
            text_escape(out, thread_source);
            fputs("] ", out);
        }
        if (scope) {
            text_escape(out, scope);
            fputs(": ", out);
        }
        text_escape(out, text);
        fputc('\n', out);
    }
    fclose(out);
    pthread_mutex_lock(&log_lock);
    fwrite(line, 1, size, stderr);
    pthread_mutex_unlock(&log_lock);
    free(line);
}

void log_msg(obx_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_vmsg(level, NULL, fmt, ap);
    va_end(ap);
}

void log_scoped(obx_log_level level, const char *scope, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_vmsg(level, scope, fmt, ap);
    va_end(ap);
}
