#include "run/sources.h"

#include "cursor/cursor_kind.h"
#include "poll/poll_kind.h"
#include "wal/wal_kind.h"

/* The one place that knows which sources there are. */
const source_kind *source_for(const relay_config *cfg)
{
    switch (cfg->source) {
    case SOURCE_WAL: return &wal_kind;
    case SOURCE_CURSOR: return &cursor_kind;
    default: return &poll_kind;
    }
}
