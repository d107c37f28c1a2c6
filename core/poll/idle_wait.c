#include "idle_wait.h"

#include <errno.h>
#include <poll.h>

/* Up to timeout_ms for a NOTIFY: 1 woken, 0 timed out, -1 connection lost. */
static int wait_notify(session *s, int timeout_ms)
{
    if (!s->conn)
        return -1;
    struct pollfd pfd = {.fd = PQsocket(s->conn), .events = POLLIN};
    int rc = poll(&pfd, 1, timeout_ms);
    if (rc < 0)
        return errno == EINTR ? 0 : -1;
    if (rc == 0)
        return 0;
    if (!PQconsumeInput(s->conn)) {
        session_disconnect(s);
        return -1;
    }
    int woke = 0;
    PGnotify *n;
    while ((n = PQnotifies(s->conn))) { /* a burst of notifications is one wake-up */
        PQfreemem(n);
        woke = 1;
    }
    return woke;
}

void idle_wait(session *s, outputs *outs, int poll_interval_ms)
{
    long long until = now_ms() + poll_interval_ms;
    while (!atomic_load(&s->st->stop) && s->conn) {
        outputs_poll(outs, 0); /* heartbeats and reconnects while idle */
        long long left = until - now_ms();
        if (left <= 0 || wait_notify(s, left > 100 ? 100 : (int)left) != 0)
            return;
    }
}
