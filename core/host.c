#include "host.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void host_log(void *arg, obx_log_level level, const char *fmt, ...)
{
    host_ctx *ctx = arg;
    va_list ap;
    va_start(ap, fmt);
    log_vmsg(level, ctx->scope, fmt, ap);
    va_end(ap);
}

static const cfg_value *find(void *arg, const char *name, int type)
{
    host_ctx *ctx = arg;
    const cfg_value *v = ctx->output ? config_output_option(ctx->output, name) : NULL;
    return v && v->type == type ? v : NULL;
}

static int get_string(void *arg, const char *name, const char **out)
{
    const cfg_value *v = find(arg, name, OBX_OPT_STRING);
    if (v)
        *out = v->s;
    return v != NULL;
}

static int get_int(void *arg, const char *name, int64_t *out)
{
    const cfg_value *v = find(arg, name, OBX_OPT_INT);
    if (v)
        *out = v->i;
    return v != NULL;
}

static int get_bool(void *arg, const char *name, int *out)
{
    const cfg_value *v = find(arg, name, OBX_OPT_BOOL);
    if (v)
        *out = v->b;
    return v != NULL;
}

static int get_double(void *arg, const char *name, double *out)
{
    const cfg_value *v = find(arg, name, OBX_OPT_DOUBLE);
    if (v)
        *out = v->d;
    return v != NULL;
}

static int get_property(void *arg, size_t index, const char **key, const char **value)
{
    host_ctx *ctx = arg;
    if (!ctx->output || index >= ctx->output->property_count)
        return 0;
    *key = ctx->output->properties[index].key;
    *value = ctx->output->properties[index].value;
    return 1;
}

static void complete(void *arg, uint64_t token, obx_status status, int native_code,
                     const char *detail)
{
    host_ctx *ctx = arg;
    ctx->on_complete(ctx->on_complete_arg, token, status, native_code, detail);
}

static void refuse(void *arg, uint64_t token, int native_code, const char *detail)
{
    host_ctx *ctx = arg;
    if (ctx->on_refuse)
        ctx->on_refuse(ctx->on_complete_arg, token, native_code, detail);
}

void host_init(host_ctx *ctx, const loaded_driver *driver, const cfg_output *output,
               host_complete_fn on_complete, void *arg)
{
    memset(ctx, 0, sizeof *ctx);
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
    };
}

static const char *const type_names[] = {"a string", "an integer", "a boolean", "a number"};

int host_validate_options(const relay_config *cfg, const cfg_output *output,
                          const loaded_driver *driver, char *err, size_t err_size)
{
    const obx_option *decl = driver->def.options;
    for (size_t i = 0; i < output->option_count; i++) {
        const cfg_value *v = &output->options[i];
        const obx_option *o = decl;
        while (o && o->name && strcmp(o->name, v->name) != 0)
            o++;
        if (!o || !o->name) {
            snprintf(err, err_size, "%s:%d: output \"%s\": driver \"%s\" has no option \"%s\"",
                     cfg->path, v->line, output->name, driver->def.name, v->name);
            return -1;
        }
        /* an integer literal is a fine value for a number option */
        if (o->type == OBX_OPT_DOUBLE && v->type == OBX_OPT_INT) {
            ((cfg_value *)v)->d = (double)v->i;
            ((cfg_value *)v)->type = OBX_OPT_DOUBLE;
        }
        if ((int)o->type != v->type) {
            snprintf(err, err_size, "%s:%d: output \"%s\": option \"%s\" must be %s", cfg->path,
                     v->line, output->name, v->name, type_names[o->type]);
            return -1;
        }
    }
    for (const obx_option *o = decl; o && o->name; o++) {
        if ((o->flags & OBX_OPT_REQUIRED) && !config_output_option(output, o->name)) {
            snprintf(err, err_size, "%s:%d: output \"%s\": driver \"%s\" requires option \"%s\"",
                     cfg->path, output->line, output->name, driver->def.name, o->name);
            return -1;
        }
    }
    return 0;
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
    if (host_validate_options(cfg, output, drv, err, err_size) < 0) {
        loader_close(drv);
        return NULL;
    }
    return drv;
}
