/* The cursor split into shards by a hash of the aggregate (relay.cursor):
 * where a shard starts when the layout (the shard count) changes, and the
 * lock that keeps readers of two layouts from reading at once. */
#ifndef OBX_CURSOR_SHARD_H
#define OBX_CURSOR_SHARD_H

#include <libpq-fe.h>
#include <stddef.h>

#include "config/config.h"
#include "cursor/cursor_place.h"
#include "db/lock_holder.h"

/* A saved row of the cursor table: shard `shard` of `shards`. */
typedef struct cursor_saved {
    int shards, shard;
    cursor_place at;
} cursor_saved;

/* The row's shard, from its key (sql_cursor_shard_key). */
void cursor_shard_of_key(int key, int *shards, int *shard);

/*
 * The furthest place up to which every row of shard `shard` of `shards` is
 * finished, by the saved rows: its own; a coarser layout's shard that holds
 * it; the lowest of a finer layout's shards that split it, when every one
 * of them is saved. (0, 0) when none says anything.
 */
cursor_place cursor_shard_start(const cursor_saved *rows, size_t n, int shards, int shard);

/* Raises this shard's row to cursor_shard_start over the cursor table (the
 * reader, at open, holding the layout lock; init-db). 0, or -1 with err. */
int cursor_shard_raise(PGconn *conn, const relay_config *cfg, char *err, size_t err_size);

/* Takes this layout's lock (shared by its shards) and checks that no reader
 * of another layout holds its own: 1 taken; 0 another layout reads (err
 * names it, *held is a session in the way: a relay or not; the session
 * holds nothing more then); -1 with err. */
int cursor_shard_layout_lock(PGconn *conn, const relay_config *cfg, lock_holder *held, char *err,
                             size_t err_size);

#endif
