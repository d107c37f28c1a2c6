/* The metrics endpoint: Prometheus text on http://LISTEN/metrics. */
#ifndef OBX_METRICS_H
#define OBX_METRICS_H

#include <netinet/in.h>
#include <stddef.h>

struct relay_state; /* state.h; not included, so config.c can use the parser alone */
typedef struct metrics_server metrics_server;

/* Limits that keep idle or slow clients from taking the relay's descriptors:
 * beyond METRICS_MAX_CONNECTIONS the kernel's backlog holds new clients. */
#define METRICS_MAX_CONNECTIONS 16
#define METRICS_TIMEOUT_S 5

/* Parses a metrics.listen value, "IPV4:PORT" (or "localhost:PORT"; ":PORT"
 * and "0.0.0.0:PORT" mean all interfaces). Returns 0, or 1 when it binds all
 * interfaces, and fills *addr unless NULL; -1 with "metrics.listen ...: what
 * is wrong" in err. check-config calls it too. */
int metrics_parse_listen(const char *listen, struct sockaddr_in *addr, char *err, size_t err_size);

/* Starts serving the relay's counters on LISTEN. NULL with err on failure. */
metrics_server *metrics_start(struct relay_state *st, const char *listen, char *err,
                              size_t err_size);

/* A server without a listening socket: connections come from
 * metrics_add_connection (the fuzz target hands it one end of a socketpair). */
metrics_server *metrics_start_detached(struct relay_state *st, char *err, size_t err_size);
/* Serves FD (now owned by the server). Returns 0, or -1 when refused. */
int metrics_add_connection(metrics_server *srv, int fd);

void metrics_stop(metrics_server *srv);

#endif
