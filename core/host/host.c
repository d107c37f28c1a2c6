#include "host/host.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "host/options.h"

static void host_log(void *arg, obx_log_level level, const char *fmt, ...)
{
    host_ctx *ctx = arg;
    if (!fmt)
        return;
    if ((unsigned)level > OBX_LOG_DEBUG) /* the log indexes its level names */
        level = OBX_LOG_DEBUG;
    va_list ap;
    va_start(ap, fmt);
    log_vmsg(level, ctx->scope, fmt, ap);
    va_end(ap);
}

/* The value a getter hands out: set, else the declared default (see options_value). */
static int value(void *arg, const char *name, obx_option_type type, cfg_value *v)
{
    host_ctx *ctx = arg;
    return name && options_value(&ctx->driver->def, ctx->output, name, type, v);
}

static int get_string(void *arg, const char *name, const char **out)
{
    cfg_value v;
    int set = out && value(arg, name, OBX_OPT_STRING, &v);
    if (set)
        *out = v.s;
    return set;
}

static int get_int(void *arg, const char *name, int64_t *out)
{
    cfg_value v;
    int set = out && value(arg, name, OBX_OPT_INT, &v);
    if (set)
        *out = v.i;
    return set;
}

static int get_bool(void *arg, const char *name, int *out)
{
    cfg_value v;
    int set = out && value(arg, name, OBX_OPT_BOOL, &v);
    if (set)
        *out = v.b;
    return set;
}

static int get_double(void *arg, const char *name, double *out)
{
    cfg_value v;
    int set = out && value(arg, name, OBX_OPT_DOUBLE, &v);
    if (set)
        *out = v.d;
    return set;
}

static int get_property(void *arg, size_t index, const char **key, const char **value)
{
    host_ctx *ctx = arg;
    if (!ctx->output || index >= ctx->output->property_count || !key || !value)
        return 0;
    *key = ctx->output->properties[index].key;
    *value = ctx->output->properties[index].value;
    return 1;
}

static void complete(void *arg, uint64_t token, obx_status status, int native_code,
                     const char *detail)
{
    host_ctx *ctx = arg;
    atomic_fetch_sub(&ctx->owed, 1);
    /* close() completes what it holds RETRIABLE ("aborted"); the host chose
     * to close (a FATAL instance, a stuck one, a reload), so those messages
     * were never judged by a broker and must not cost an attempt */
    if (status == OBX_RETRIABLE && atomic_load(&ctx->closing))
        status = OBX_UNAVAILABLE;
    ctx->on_complete(ctx->on_complete_arg, token, status, native_code, detail);
}

static void refuse(void *arg, uint64_t token, int native_code, const char *detail)
{
    host_ctx *ctx = arg;
    if (ctx->on_refuse)
        ctx->on_refuse(ctx->on_complete_arg, token, native_code, detail);
}

/* Found by the message's place in the array being published: a driver's
 * copy of a message, or a call outside publish_batch, finds nothing. */
static const obx_message_ext *message_ext(void *arg, const obx_message *m)
{
    host_ctx *ctx = arg;
    if (!ctx->pub_ext || !m || m < ctx->pub_msgs || m >= ctx->pub_msgs + ctx->pub_count)
        return NULL;
    return &ctx->pub_ext[m - ctx->pub_msgs];
}

void host_init(host_ctx *ctx, const loaded_driver *driver, const cfg_output *output,
               host_complete_fn on_complete, void *arg)
{
    memset(ctx, 0, sizeof *ctx);
    atomic_init(&ctx->owed, 0);
    atomic_init(&ctx->closing, 0);
    ctx->output = output;
    ctx->driver = driver;
    ctx->on_complete = on_complete;
    ctx->on_complete_arg = arg;
    snprintf(ctx->scope, sizeof ctx->scope, "output %s (%s)", output ? output->name : "-",
             driver->def.name);
    ctx->host = (obx_host){
        .struct_size = sizeof(obx_host),
        .host_ctx = ctx,
        .log = host_log,
        .get_string = get_string,
        .get_int = get_int,
        .get_bool = get_bool,
        .get_double = get_double,
        .get_property = get_property,
        .complete = complete,
        .refuse = refuse,
        .message_ext = message_ext,
    };
}

int host_validate_options(const relay_config *cfg, const cfg_output *output,
                          const loaded_driver *driver, char *err, size_t err_size)
{
    char why[512];
    if (options_check_specs(&driver->def, why, sizeof why) < 0) {
        snprintf(err, err_size,
                 "%s:%d: output \"%s\": driver \"%s\" (%s) is refused: its option specs are "
                 "wrong (a bug in the driver): %s",
                 cfg->path, output->line, output->name, driver->def.name, driver->path, why);
        return -1;
    }
    return options_validate(cfg, output, &driver->def, err, err_size);
}

loaded_driver *host_load_output(const relay_config *cfg, const cfg_output *output, char *err,
                                size_t err_size)
{
    char why[1024];
    loaded_driver *drv = loader_open(cfg->drivers_dir, output->driver, why, sizeof why);
    if (!drv) {
        snprintf(err, err_size, "%s:%d: output %s: %s", cfg->path, output->line, output->name, why);
        return NULL;
    }
    if (output->tombstones && !(drv->def.flags & OBX_DRIVER_NULL_PAYLOAD)) {
        snprintf(err, err_size,
                 "%s:%d: output %s: tombstones = true, but driver \"%s\" cannot send a null "
                 "payload (it does not declare OBX_DRIVER_NULL_PAYLOAD)",
                 cfg->path, output->line, output->name, drv->def.name);
        loader_close(drv);
        return NULL;
    }
    if (host_validate_options(cfg, output, drv, err, err_size) < 0) {
        loader_close(drv);
        return NULL;
    }
    return drv;
}
