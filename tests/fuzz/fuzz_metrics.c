/*
 * Fuzz target: the metrics request path. Each input is the bytes a client
 * sends on one connection; the server (libmicrohttpd with the relay's
 * handler, connection limit and timeout) gets one end of a socketpair, the
 * target writes the input, half-closes and reads the answer to the end.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "host/relay_state.h"
#include "ops/metrics.h"
#include "poll/poll_kind.h"

/* two sources (no outputs), so ?source= and the merged text are reached */
static relay_config cfg_a = {.source_name = (char[]){"alpha"}};
static relay_config cfg_b = {.source_name = (char[]){"beta"}};
static config_gen gen_a = {.cfg = &cfg_a, .users = 1}; /* never released to 0 */
static config_gen gen_b = {.cfg = &cfg_b, .users = 1};
static relay_state st_a = {.cfg = &cfg_a, .src = &poll_kind, .gen = &gen_a, .gen_lock = PTHREAD_MUTEX_INITIALIZER};
static relay_state st_b = {.cfg = &cfg_b, .src = &poll_kind, .gen = &gen_b, .gen_lock = PTHREAD_MUTEX_INITIALIZER};
static source_set set;
static metrics_server *srv;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    if (!srv) {
        source_set_init(&set, 1);
        source_set_add(&set, &st_a);
        source_set_add(&set, &st_b);
    }
    if (!srv && !(srv = metrics_start_detached(&set, err, sizeof err))) {
        fprintf(stderr, "%s\n", err);
        abort();
    }
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        abort();
    struct timeval tv = {.tv_sec = METRICS_TIMEOUT_S + 5};
    setsockopt(sv[1], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(sv[1], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (metrics_add_connection(srv, sv[0]) != 0) {
        close(sv[1]);
        return 0;
    }
    for (size_t off = 0; off < size;) {
        ssize_t n = send(sv[1], data + off, size - off, MSG_NOSIGNAL);
        if (n <= 0)
            break; /* the server may answer and close before reading it all */
        off += (size_t)n;
    }
    shutdown(sv[1], SHUT_WR);
    char buf[4096];
    while (recv(sv[1], buf, sizeof buf, 0) > 0)
        ;
    close(sv[1]);
    atomic_fetch_add(&st_a.stats.published, 1); /* the counters change between requests */
    return 0;
}
