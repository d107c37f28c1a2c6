/* Poll mode as a source (source.h): workers claiming over the outbox table,
 * the retention cleanup beside them. */
#ifndef OBX_POLL_KIND_H
#define OBX_POLL_KIND_H

#include "host/source.h"

extern const source_kind poll_kind;

#endif
