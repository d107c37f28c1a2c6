/* Poll mode as a source (source.h): workers claiming over the outbox table,
 * the retention cleanup beside them. */
#ifndef OBX_POLL_OPS_H
#define OBX_POLL_OPS_H

#include "source.h"

extern const source_ops poll_ops;

#endif
