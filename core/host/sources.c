#include "source.h"

#include "cursor_ops.h"
#include "poll_ops.h"
#include "wal_ops.h"

/* The one place that knows which sources there are. */
const source_ops *source_for(const relay_config *cfg)
{
    switch (cfg->source) {
    case SOURCE_WAL: return &wal_ops;
    case SOURCE_CURSOR: return &cursor_ops;
    default: return &poll_ops;
    }
}
