#include "config/listen_addr.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int listen_parse(const char *listen, struct sockaddr_in *addr, char *err, size_t err_size)
{
    const char *colon = strrchr(listen, ':');
    const char *digits = colon ? colon + 1 : "";
    size_t ndigits = strspn(digits, "0123456789");
    long port = ndigits && ndigits <= 5 && !digits[ndigits] ? strtol(digits, NULL, 10) : 0;
    char host[64] = "";
    size_t host_len = colon ? (size_t)(colon - listen) : 0;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int ok = colon && host_len < sizeof host && port >= 1 && port <= 65535;
    if (ok) {
        memcpy(host, listen, host_len);
        host[host_len] = '\0';
        const char *ip = !host[0] ? "0.0.0.0" : !strcmp(host, "localhost") ? "127.0.0.1" : host;
        ok = inet_pton(AF_INET, ip, &a.sin_addr) == 1;
    }
    if (!ok) {
        snprintf(err, err_size,
                 "metrics.listen \"%.80s\": expected IPV4:PORT with a port 1..65535, "
                 "e.g. 127.0.0.1:9187",
                 listen);
        return -1;
    }
    if (addr)
        *addr = a;
    return a.sin_addr.s_addr == htonl(INADDR_ANY);
}
