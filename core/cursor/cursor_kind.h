/* Cursor mode as a source (source.h): one thread reads the outbox in the
 * cursor's order; dead events live in the dead-letter table, as in WAL mode. */
#ifndef OBX_CURSOR_KIND_H
#define OBX_CURSOR_KIND_H

#include "host/source.h"

extern const source_kind cursor_kind;

#endif
