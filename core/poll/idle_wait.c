#include "poll/idle_wait.h"

#include "db/db.h"

/* Up to timeout_ms for a NOTIFY: 1 woken, 0 timed out, -1 connection lost. */
static int wait_notify(session *s, int timeout_ms)
{
    if (!s->conn)
        return -1;
    int rc = db_wait_notify(s->conn, timeout_ms);
    if (rc < 0)
        session_disconnect(s);
    return rc;
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
