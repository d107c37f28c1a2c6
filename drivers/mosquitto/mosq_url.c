/*
 * mosquitto driver: the broker url. libmosquitto takes a host and a port,
 * so the url the mqtt driver takes (tcp://host:port, ssl://host:port, the
 * mqtt:// and mqtts:// spellings) is parsed here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mosq_conf.h"

static int mosq_copy(char *dst, size_t size, const char *s, size_t len)
{
    if (len >= size)
        return -1;
    memcpy(dst, s, len);
    dst[len] = 0;
    return 0;
}

int mosq_url_parse(const char *url, mosq_url *out, char *errstr, size_t errstr_size)
{
    static const struct {
        const char *scheme;
        int tls;
    } schemes[] = {{"tcp://", 0}, {"mqtt://", 0}, {"ssl://", 1}, {"mqtts://", 1}};
    const char *p = NULL;
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < sizeof schemes / sizeof *schemes; i++)
        if (strncmp(url, schemes[i].scheme, strlen(schemes[i].scheme)) == 0) {
            p = url + strlen(schemes[i].scheme);
            out->tls = schemes[i].tls;
        }
    if (!p) {
        snprintf(errstr, errstr_size, "option url must start with tcp:// or ssl://");
        return -1;
    }
    const char *at = strrchr(p, '@');
    if (at) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        size_t ulen = colon ? (size_t)(colon - p) : (size_t)(at - p);
        if (mosq_copy(out->user, sizeof out->user, p, ulen) ||
            (colon &&
             mosq_copy(out->pass, sizeof out->pass, colon + 1, (size_t)(at - colon - 1)))) {
            snprintf(errstr, errstr_size, "option url: user name or password too long");
            return -1;
        }
        p = at + 1;
    }
    const char *end = p + strcspn(p, "/?#"), *port = NULL;
    if (*p == '[') { /* [v6]:port */
        const char *close = memchr(p, ']', (size_t)(end - p));
        if (!close) {
            snprintf(errstr, errstr_size, "option url: unclosed '[' in the host");
            return -1;
        }
        if (mosq_copy(out->host, sizeof out->host, p + 1, (size_t)(close - p - 1)))
            goto too_long;
        port = close[1] == ':' ? close + 2 : NULL;
    } else {
        const char *colon = memchr(p, ':', (size_t)(end - p));
        if (mosq_copy(out->host, sizeof out->host, p, (size_t)((colon ? colon : end) - p)))
            goto too_long;
        port = colon ? colon + 1 : NULL;
    }
    if (!out->host[0]) {
        snprintf(errstr, errstr_size, "option url: no host (tcp://host:port or ssl://host:port)");
        return -1;
    }
    out->port = out->tls ? 8883 : 1883;
    if (port) {
        char *e;
        long v = strtol(port, &e, 10);
        if (e == port || e != end || v < 1 || v > 65535) {
            snprintf(errstr, errstr_size, "option url: the port must be a number from 1 to 65535");
            return -1;
        }
        out->port = (int)v;
    }
    return 0;
too_long:
    snprintf(errstr, errstr_size, "option url: host name too long");
    return -1;
}
