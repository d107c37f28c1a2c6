/* The host-services table (obx_host) given to each driver instance. */
#ifndef OBX_HOST_H
#define OBX_HOST_H

#include <stdatomic.h>

#include "config/config.h"
#include "host/loader.h"

/* Receives completions; called from any thread. detail may be NULL. */
typedef void (*host_complete_fn)(void *arg, uint64_t token, obx_status status, int native_code,
                                 const char *detail);

/* Receives the reason for a refusal made in publish_batch (host->refuse);
 * called on the publishing thread. detail may be NULL. */
typedef void (*host_refuse_fn)(void *arg, uint64_t token, int native_code, const char *detail);

typedef struct host_ctx {
    obx_host host;            /* what the driver sees; host.host_ctx points here */
    const cfg_output *output; /* option values for the getters */
    const loaded_driver *driver;
    host_complete_fn on_complete;
    host_refuse_fn on_refuse; /* NULL: refusal reasons are dropped; set after host_init */
    void *on_complete_arg;    /* the first argument of on_complete and on_refuse */
    atomic_long owed;         /* messages handed to publish_batch, not yet completed or refused */
    atomic_int closing;       /* the host is closing the instance: see complete() */
    char scope[128];          /* log prefix: "output NAME (driver)" */
    /* the array publish_batch is given and its extensions (host->message_ext),
     * set by the publishing thread around the call */
    const obx_message *pub_msgs;
    const obx_message_ext *pub_ext; /* parallel to pub_msgs; NULL: none */
    size_t pub_count;
} host_ctx;

/* Fills ctx so &ctx->host can be passed to the driver's create. The getters
 * return the output's value, else the driver's declared default (ABI 1.1),
 * else 0 as in ABI 1.0. */
void host_init(host_ctx *ctx, const loaded_driver *driver, const cfg_output *output,
               host_complete_fn on_complete, void *arg);

/* Checks the driver's option specs (a bad one refuses the driver), then the
 * output's options against the declarations: unknown names, types, ranges,
 * choices, missing required ones; warns of old and deprecated names.
 * Returns 0 or -1 with "FILE:LINE: ..." in err. */
int host_validate_options(const relay_config *cfg, const cfg_output *output,
                          const loaded_driver *driver, char *err, size_t err_size);

/* Loads an output's driver and checks its options. Returns NULL with
 * "FILE:LINE: ..." in err on any refusal. */
loaded_driver *host_load_output(const relay_config *cfg, const cfg_output *output, char *err,
                                size_t err_size);

#endif
