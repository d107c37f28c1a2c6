/* The admin endpoint (admin.listen, off by default, loopback only): pause
 * and resume over HTTP, for tools that cannot run the command. Every
 * request carries the bearer token read at start from admin.token_env.
 *   POST /pause/output/NAME[?reason=TEXT]   POST /resume/output/NAME
 *   POST /pause/source[?reason=TEXT]        POST /resume/source
 * It writes the same control row as `outbox-relay pause` (control.h), so the
 * pause reaches every relay on the table within a second. */
#ifndef OBX_ADMIN_H
#define OBX_ADMIN_H

#include <stddef.h>

#include "config/config.h"

/* The shortest token accepted: guessing it must not be practical. */
#define ADMIN_TOKEN_MIN 16

typedef struct admin_server admin_server;

/* Starts it on cfg->admin_listen with the token from the environment;
 * NULL with err when the token is missing or short, or it cannot listen. */
admin_server *admin_start(const relay_config *cfg, char *err, size_t err_size);
void admin_stop(admin_server *srv);

#endif
