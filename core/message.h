/* Turns claimed rows into messages: routing, destination templates, headers. */
#ifndef OBX_MESSAGE_H
#define OBX_MESSAGE_H

#include <libpq-fe.h>
#include <stddef.h>

#include "config.h"
#include "obx/driver.h"

typedef enum { PAYLOAD_JSON, PAYLOAD_TEXT, PAYLOAD_BYTES } payload_kind;

/* Per-batch scratch memory: reset, never freed piecemeal. */
typedef struct arena {
    struct arena_block *head;
} arena;

void *arena_alloc(arena *a, size_t size);
void arena_reset(arena *a);
void arena_free(arena *a);

/* Builds msg from row `row` of a claim result. On success returns 0 and sets
 * *output to the route's output index. On a row that cannot become a message
 * returns -1 with a readable reason in err (the row is dead-lettered). */
int message_build(const relay_config *cfg, payload_kind kind, const PGresult *res, int row,
                  arena *a, obx_message *msg, size_t *output, char *err, size_t err_size);

/* Renders a destination template with the message's fields (exposed for tests). */
int message_render(const char *tmpl, const obx_message *msg, arena *a, const char **out, char *err,
                   size_t err_size);

#endif
