/* The consumer inbox (`init-db --inbox`): a consumer whose own database is
 * PostgreSQL records each event id it has processed, in the transaction of
 * its processing, so that a redelivered event is recognised and skipped. */
#ifndef OBX_INBOX_H
#define OBX_INBOX_H

#include <libpq-fe.h>

#include "config/config.h"

/* Creates or upgrades, in the config's schema, the table outbox_inbox and
 * the functions outbox_inbox_accept(consumer, event_id) and
 * outbox_inbox_prune(keep), idempotently. Returns 0 or -1 with err. */
int inbox_install(PGconn *conn, const relay_config *cfg, char *err, size_t err_size);

#endif
