#include "log.h"

#include <pthread.h>
#include <stdio.h>
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

    pthread_mutex_lock(&log_lock);
    if (log_fmt == LOG_FORMAT_JSON) {
        fprintf(stderr, "{\"ts\":\"%s\",\"level\":\"%s\"", stamp, level_names[level]);
        if (scope) {
            fputs(",\"scope\":\"", stderr);
            json_escape(stderr, scope);
            fputc('"', stderr);
        }
        fputs(",\"msg\":\"", stderr);
        json_escape(stderr, text);
        fputs("\"}\n", stderr);
    } else {
        fprintf(stderr, "%s %-5s %s%s%s\n", stamp, level_names[level], scope ? scope : "",
                scope ? ": " : "", text);
    }
    pthread_mutex_unlock(&log_lock);
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
