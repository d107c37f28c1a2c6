/* A config generation: one loaded config with its drivers and its outputs'
 * health, immutable once made. The engine publishes a new one on reload;
 * each worker switches to it between batches; a generation is freed when its
 * last user lets go (the engine's current pointer, each worker, each driver
 * instance created from it). */
#ifndef OBX_GENERATION_H
#define OBX_GENERATION_H

#include <stdatomic.h>

#include "config/config.h"
#include "host/health.h"
#include "host/loader.h"

typedef struct config_gen {
    long number;             /* 0: the config the relay started with */
    relay_config *cfg;       /* outputs, routes, and the settings that may change live */
    int owns_cfg;            /* generation 0's config belongs to the caller */
    loaded_driver **drivers; /* one per output */
    output_health *health;   /* one per output, shared by the workers on this generation */
    int run_length;          /* events of one aggregate per claim: 1 unless all keep order */
    atomic_int users;
} config_gen;

/* Loads cfg's drivers and checks every output's options. On success the
 * generation has one user (the caller) and owns cfg when owns_cfg is set;
 * on failure returns NULL with "FILE:LINE: ..." in err and cfg is left to
 * the caller. */
config_gen *gen_new(relay_config *cfg, int owns_cfg, long number, char *err, size_t err_size);

void gen_hold(config_gen *g);
/* Drops one user; the last one frees the generation (drivers unloaded). */
void gen_release(config_gen *g);

/* Is output i of a the same as output j of b (name, driver file, options,
 * native properties)? Then an instance made from one serves the other. */
int gen_same_output(const config_gen *a, size_t i, const config_gen *b, size_t j);

/* The output of g named name, or -1. */
long gen_find_output(const config_gen *g, const char *name);

#endif
