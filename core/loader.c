#include "loader.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef OBX_DRIVERS_INSTALL_PATH
#define OBX_DRIVERS_INSTALL_PATH "/usr/local/lib/outbox-relay/drivers"
#endif

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

const char *loader_default_dir(void)
{
    static char dir[PATH_MAX + 64];
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            /* build tree: drivers/ beside the executable */
            snprintf(dir, sizeof dir, "%s/drivers", exe);
            if (is_dir(dir))
                return dir;
            /* relocated install: bin/../lib/outbox-relay/drivers */
            snprintf(dir, sizeof dir, "%s/../lib/outbox-relay/drivers", exe);
            if (is_dir(dir))
                return dir;
        }
    }
    return OBX_DRIVERS_INSTALL_PATH;
}

static const char *missing_callback(const obx_driver_def *def)
{
    if (!def->create)
        return "create";
    if (!def->publish_batch)
        return "publish_batch";
    if (!def->flush)
        return "flush";
    if (!def->close)
        return "close";
    if (!def->destroy)
        return "destroy";
    if (!def->name)
        return "name";
    return NULL;
}

loaded_driver *loader_open(const char *dir, const char *name, char *err, size_t err_size)
{
    char path[PATH_MAX + 64];
    if (strchr(name, '/'))
        snprintf(path, sizeof path, "%s", name);
    else
        snprintf(path, sizeof path, "%s/%s.so", dir ? dir : loader_default_dir(), name);

    if (access(path, R_OK) != 0) {
        snprintf(err, err_size, "%s: driver file not found (driver \"%s\")", path, name);
        return NULL;
    }
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        snprintf(err, err_size, "%s: cannot load: %s", path, dlerror());
        return NULL;
    }
    obx_driver_entry_fn entry;
    *(void **)&entry = dlsym(handle, OBX_DRIVER_ENTRY_SYMBOL);
    if (!entry) {
        snprintf(err, err_size, "%s: not an outbox-relay driver: no %s symbol", path,
                 OBX_DRIVER_ENTRY_SYMBOL);
        dlclose(handle);
        return NULL;
    }
    const obx_driver_def *def = entry();
    const char *why = NULL;
    char buf[160];
    if (!def) {
        why = "entry returned no definition";
    } else if (def->magic != OBX_DRIVER_MAGIC) {
        snprintf(buf, sizeof buf, "wrong magic 0x%08x (expected 0x%08x)", def->magic,
                 OBX_DRIVER_MAGIC);
        why = buf;
    } else if (def->abi_major != OBX_ABI_MAJOR) {
        snprintf(buf, sizeof buf, "driver ABI %u.%u, relay ABI %d.%d: major versions differ",
                 def->abi_major, def->abi_minor, OBX_ABI_MAJOR, OBX_ABI_MINOR);
        why = buf;
    } else if (def->struct_size < offsetof(obx_driver_def, destroy) + sizeof def->destroy) {
        snprintf(buf, sizeof buf, "definition too small (%u bytes)", def->struct_size);
        why = buf;
    }
    loaded_driver *drv = NULL;
    if (!why) {
        drv = calloc(1, sizeof *drv);
        size_t n = def->struct_size < sizeof drv->def ? def->struct_size : sizeof drv->def;
        memcpy(&drv->def, def, n); /* newer fields we do not know stay unread; older ones zero */
        const char *missing = missing_callback(&drv->def);
        if (missing) {
            snprintf(buf, sizeof buf, "driver \"%s\" lacks required callback %s",
                     drv->def.name ? drv->def.name : name, missing);
            why = buf;
            free(drv);
            drv = NULL;
        }
    }
    if (why) {
        snprintf(err, err_size, "%s: refused: %s", path, why);
        dlclose(handle);
        return NULL;
    }
    drv->path = strdup(path);
    drv->handle = handle;
    return drv;
}

void loader_close(loaded_driver *drv)
{
    if (!drv)
        return;
    dlclose(drv->handle);
    free(drv->path);
    free(drv);
}
