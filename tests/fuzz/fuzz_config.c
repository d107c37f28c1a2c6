/*
 * Fuzz target: the config loader, libconfig syntax through validation and
 * ${VAR}, ${VAR:-default} expansion, sources and fan-out routes. The input is the config file; a
 * few variables are set so expansion has something to find.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    setenv("FUZZ_DSN", "host=/tmp dbname=fuzz", 1);
    setenv("FUZZ_EMPTY", "", 1);
    setenv("FUZZ_NAME", "orders", 1);
    setenv("FUZZ_NESTED", "${FUZZ_NAME}", 1);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("fuzz.cfg", 0);
        if (fd < 0 || fchmod(fd, 0600) != 0) /* a memfd is 0777: the loader refuses those */
            abort();
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
        abort();
    char err[1024];
    size_t count = 0; /* every source, fan-out targets included */
    relay_config **cfgs = config_load_all(path, &count, err, sizeof err);
    config_free_all(cfgs, count);
    return 0;
}
