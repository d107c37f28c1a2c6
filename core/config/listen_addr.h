/* The metrics listener's address, parsed the same by check-config and run. */
#ifndef OBX_LISTEN_ADDR_H
#define OBX_LISTEN_ADDR_H

#include <netinet/in.h>
#include <stddef.h>

/* Parses a metrics.listen value, "IPV4:PORT" (or "localhost:PORT"; ":PORT"
 * and "0.0.0.0:PORT" mean all interfaces). Returns 0, or 1 when it binds all
 * interfaces, and fills *addr unless NULL; -1 with "metrics.listen ...: what
 * is wrong" in err. check-config calls it too. */
int listen_parse(const char *listen, struct sockaddr_in *addr, char *err, size_t err_size);

#endif
