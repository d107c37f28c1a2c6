/*
 * Fuzz target: the pgoutput decoder (protocol 1) that WAL mode runs on every
 * frame the walsender sends. The input is a sequence of messages, each a
 * 2-byte big-endian length and that many bytes, decoded in order on one
 * decoder (a Relation then Inserts, Begin, Commit, Message...), as the
 * stream feeds them. Besides crashes: an event's values are NUL-terminated
 * at their stated length, and each is freed by the caller (leaks show).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_config_text.h"
#include "wal/wal_decode.h"

static relay_config *cfg;
static atomic_llong ignored;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    static const char text[] =
        "database = { conninfo = \"dbname=fuzz\"; };\n"
        "relay = { source = \"wal\"; wal = { accept_logical_messages = true; }; };\n"
        "outputs = ( { name = \"a\"; driver = \"memory\"; } );\n";
    cfg = fuzz_config_text("fuzz_pgoutput config", text);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    wal_decoder dec;
    wal_decoder_init(&dec, cfg, &ignored);
    for (size_t at = 0; at + 2 <= size;) {
        size_t len = (size_t)data[at] << 8 | data[at + 1];
        at += 2;
        if (len > size - at)
            len = size - at;
        char *frame = malloc(len ? len : 1); /* exactly len: reads past it are caught */
        memcpy(frame, data + at, len);
        at += len;
        wal_change c;
        char err[512];
        memset(&c, 0, sizeof c);
        if (wal_decode(&dec, frame, len, &c, err, sizeof err) == 0 && c.kind == WAL_EVENT) {
            if (!c.row)
                abort();
            for (int f = 0; f < WF_COUNT; f++)
                if (c.row->v[f] && c.row->v[f][c.row->len[f]] != '\0')
                    abort();
            free(c.row);
        }
        free(frame);
    }
    return 0;
}
