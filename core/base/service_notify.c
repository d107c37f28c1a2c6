#include "base/service_notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/log.h"

static struct sockaddr_un manager;
static socklen_t manager_len; /* 0: no manager */
static long long watchdog_ms, last_ping_ms;
static int warned;

void notify_init(void)
{
    const char *path = getenv("NOTIFY_SOCKET");
    size_t len = path ? strlen(path) : 0;
    manager_len = 0;
    if (len >= 2 && len < sizeof manager.sun_path && (path[0] == '/' || path[0] == '@')) {
        memset(&manager, 0, sizeof manager);
        manager.sun_family = AF_UNIX;
        memcpy(manager.sun_path, path, len);
        if (path[0] == '@') /* abstract namespace: a leading NUL, no trailing one */
            manager.sun_path[0] = '\0';
        manager_len =
            (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + (path[0] == '/' ? 1 : 0));
    } else if (len > 0) {
        log_warn("NOTIFY_SOCKET is neither a path nor an abstract name: not notifying");
    }
    /* the watchdog is ours only when WATCHDOG_PID, if set, names this process */
    const char *usec = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
    watchdog_ms = 0;
    if (manager_len && usec && (!pid || atol(pid) == (long)getpid()))
        watchdog_ms = atoll(usec) / 1000;
    if (watchdog_ms < 0)
        watchdog_ms = 0;
}

int notify_send(const char *state)
{
    if (!manager_len)
        return -1;
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ssize_t sent = -1;
    int why = errno;
    if (fd >= 0) {
        sent = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (const struct sockaddr *)&manager,
                      manager_len);
        why = errno;
        close(fd);
    }
    if (sent < 0 && !warned) {
        warned = 1; /* a missing manager must not flood the log */
        log_warn("service manager notification failed: %s", strerror(why));
    }
    return sent < 0 ? -1 : 0;
}

void notify_watchdog(long long now)
{
    if (watchdog_ms <= 0 || now - last_ping_ms < watchdog_ms / 2)
        return;
    last_ping_ms = now;
    notify_send("WATCHDOG=1");
}

long long notify_watchdog_ms(void)
{
    return watchdog_ms;
}
