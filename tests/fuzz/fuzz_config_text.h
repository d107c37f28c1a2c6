/* For the fuzz targets that need a config: loads one from text through the
 * relay's own loader (a memfd, made 0600: a memfd is 0777, which the loader
 * refuses as writable by every user). Aborts when it is refused. */
#ifndef OBX_FUZZ_CONFIG_TEXT_H
#define OBX_FUZZ_CONFIG_TEXT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"

static inline relay_config *fuzz_config_text(const char *name, const char *text)
{
    int fd = memfd_create(name, 0);
    char path[64], err[1024];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    if (fd < 0 || fchmod(fd, 0600) != 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
        abort();
    relay_config *cfg = config_load(path, err, sizeof err);
    if (!cfg) {
        fprintf(stderr, "%s: %s\n", name, err);
        abort();
    }
    return cfg;
}

#endif
