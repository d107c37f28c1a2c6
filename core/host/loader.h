/* Driver loader: dlopen a driver .so and validate its definition. */
#ifndef OBX_LOADER_H
#define OBX_LOADER_H

#include <stddef.h>

#include "obx/driver.h"

typedef struct loaded_driver {
    char *path;         /* the file that was loaded */
    void *handle;       /* dlopen handle */
    obx_driver_def def; /* copy of the driver's definition, zero-filled past its size */
} loaded_driver;

/* The drivers directory to use when the config names none: beside the
 * executable in a build tree, else the installed location. Never NULL. */
const char *loader_default_dir(void);

/* Resolves NAME to DIR/NAME.so, or takes an absolute (or ./relative) path
 * as is. Returns NULL and writes "FILE: reason" to err on any refusal. */
loaded_driver *loader_open(const char *dir, const char *name, char *err, size_t err_size);

void loader_close(loaded_driver *drv);

/* Before dlopen, loader_open refuses a file that is not a complete ELF shared
 * object for this machine, and a driver file or its directory that is
 * writable by group or others or owned by another user, unless this
 * variable is "1" (the ELF check stays). */
#define LOADER_INSECURE_ENV "OUTBOX_RELAY_INSECURE_DRIVERS"
int loader_insecure_allowed(void);

#endif
