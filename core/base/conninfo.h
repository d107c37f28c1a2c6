/* The conninfo and libpq's texts, which may quote it: parsed without
 * printing, and made fit to print. No dependency on the rest of core. */
#ifndef OBX_CONNINFO_H
#define OBX_CONNINFO_H

#include <libpq-fe.h>
#include <stddef.h>

/* Parses a conninfo (key=value string, URI, or a bare database name) as
 * libpq would; NULL when it cannot be parsed. libpq's parse message is
 * dropped: it may quote the password. Free with PQconninfoFree. */
PQconninfoOption *conninfo_parse(const char *conninfo);

/* Makes a libpq text printable, in place: one line, "password=VALUE" and
 * the password of "scheme://user:pass@" masked. */
void conninfo_redact(char *text, size_t cap);

#endif
