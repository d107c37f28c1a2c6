/* `outbox-relay reload -c FILE`: finds the relays running FILE and sends
 * them SIGHUP. Found by the config, not a pid file: nothing to keep in sync
 * or go stale, and several relays sharing one config all reload. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ops/reload.h"

/* argv of process pid (NUL-separated) into buf; returns the argument count. */
static int read_args(long pid, char *buf, size_t cap, const char **argv, int max)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, cap - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    int argc = 0;
    for (char *p = buf; p < buf + n && argc < max; p += strlen(p) + 1)
        argv[argc++] = p;
    return argc;
}

/* The -c / --config value of an `outbox-relay run` command line, or NULL. */
static const char *run_config(int argc, const char **argv)
{
    const char *exe = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
    if (argc < 3 || strcmp(exe, "outbox-relay") != 0 || strcmp(argv[1], "run") != 0)
        return NULL;
    for (int i = 2; i < argc; i++) {
        if ((!strcmp(argv[i], "-c") || !strcmp(argv[i], "--config")) && i + 1 < argc)
            return argv[i + 1];
        if (!strncmp(argv[i], "--config=", 9))
            return argv[i] + 9;
        if (!strncmp(argv[i], "-c", 2) && argv[i][2])
            return argv[i] + 2;
    }
    return NULL;
}

int reload_signal_relays(const char *config_path)
{
    struct stat want;
    if (stat(config_path, &want) != 0) {
        fprintf(stderr, "outbox-relay reload: %s: %s\n", config_path, strerror(errno));
        return 2;
    }
    DIR *proc = opendir("/proc");
    if (!proc) {
        fprintf(stderr, "outbox-relay reload: cannot read /proc: %s\n", strerror(errno));
        return 1;
    }
    int signalled = 0, failed = 0;
    struct dirent *e;
    while ((e = readdir(proc))) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (!isdigit((unsigned char)e->d_name[0]) || *end || pid == (long)getpid())
            continue;
        char args[8192], path[PATH_MAX + 64];
        const char *argv[64];
        int argc = read_args(pid, args, sizeof args, argv, 64);
        const char *cfg = argc ? run_config(argc, argv) : NULL;
        if (!cfg)
            continue;
        /* a relative -c is relative to the relay's own working directory */
        int len = cfg[0] == '/' ? snprintf(path, sizeof path, "%s", cfg)
                                : snprintf(path, sizeof path, "/proc/%ld/cwd/%s", pid, cfg);
        struct stat got;
        if (len < 0 || (size_t)len >= sizeof path || stat(path, &got) != 0 ||
            got.st_dev != want.st_dev || got.st_ino != want.st_ino)
            continue;
        if (kill((pid_t)pid, SIGHUP) == 0) {
            printf("sent SIGHUP to the relay with pid %ld\n", pid);
            signalled++;
        } else {
            fprintf(stderr, "outbox-relay reload: pid %ld: %s\n", pid, strerror(errno));
            failed++;
        }
    }
    closedir(proc);
    if (signalled == 0 && failed == 0)
        fprintf(stderr, "outbox-relay reload: no running relay (outbox-relay run -c) uses %s\n",
                config_path);
    return signalled && !failed ? 0 : 1;
}
