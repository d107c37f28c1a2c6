/*
 * Fuzz target: the timestamp parser WAL mode reads created_at with
 * ("2026-12-01 15:12:22.123456+00", ISO, any offset). Besides crashes and
 * signed overflow (UBSan): a text that parses is read the same with
 * anything appended after a NUL, and 0 stays the only "cannot be read".
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wal/wal_decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    long long us = event_parse_timestamp(text);
    char *again = malloc(size + 8);
    memcpy(again, text, strlen(text) + 1);
    memcpy(again + strlen(text) + 1, "9999999", 7);
    if (event_parse_timestamp(again) != us)
        abort();
    free(again);
    free(text);
    return 0;
}
