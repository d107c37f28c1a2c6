/* Cursor mode as a source (source.h): one thread reads the outbox in the
 * cursor's order; dead events live in the dead-letter table, as in WAL mode. */
#ifndef OBX_CURSOR_OPS_H
#define OBX_CURSOR_OPS_H

#include "source.h"

extern const source_ops cursor_ops;

#endif
