/* Wake-up: an idle worker sleeps until a NOTIFY says the outbox has new
 * rows (its session LISTENs), or the poll interval passes, whichever first;
 * a burst of notifications is one wake-up. */
#ifndef OBX_IDLE_WAIT_H
#define OBX_IDLE_WAIT_H

#include "host/outputs.h"
#include "poll/session.h"

/* Returns on a NOTIFY, after poll_interval_ms, on a stop or a lost
 * connection; serves the drivers meanwhile. */
void idle_wait(session *s, outputs *outs, int poll_interval_ms);

#endif
