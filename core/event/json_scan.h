/* A JSON scanner for the payload and headers columns: checks grammar and
 * UTF-8; reads the headers object into message headers. */
#ifndef OBX_JSON_SCAN_H
#define OBX_JSON_SCAN_H

#include <stddef.h>

#include "base/arena.h"
#include "obx/driver.h"

/* Checks that text[0..len) is one JSON document; the reason in err. */
int json_check(const char *text, size_t len, char *err, size_t err_size);

/* The headers column: a JSON object whose scalar values become msg's
 * headers as text, in order (in a). -1 with the reason in err. */
int json_read_headers(const char *text, arena *a, obx_message *msg, char *err, size_t err_size);

#endif
