/* Logging: one line per event to stderr, text or JSON. Thread-safe. */
#ifndef OBX_LOG_H
#define OBX_LOG_H

#include <stdarg.h>
#include <stddef.h>

#include "obx/driver.h"

typedef enum { LOG_FORMAT_TEXT, LOG_FORMAT_JSON } log_format;

void log_setup(obx_log_level max_level, log_format format);
void log_msg(obx_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void log_vmsg(obx_log_level level, const char *scope, const char *fmt, va_list ap);
/* A line with a scope ("worker 1"), as log_vmsg. */
void log_scoped(obx_log_level level, const char *scope, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Names the source (of a config's `sources`) the calling thread serves in
 * each of its lines; NULL: none. The name must outlive the thread's lines. */
void log_thread_source(const char *name);

/* s with control characters and backslashes escaped (\n, \x1b, \\), as the
 * text log writes it; cut to fit cap. For text printed outside the log. */
void log_escape_text(char *out, size_t cap, const char *s);

#define log_error(...) log_msg(OBX_LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(OBX_LOG_WARN, __VA_ARGS__)
#define log_info(...) log_msg(OBX_LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(OBX_LOG_DEBUG, __VA_ARGS__)

#endif
