#include "source.h"

#include "poll_ops.h"
#include "wal_ops.h"

/* The one place that knows which sources there are. */
const source_ops *source_for(const relay_config *cfg)
{
    return cfg->source == SOURCE_WAL ? &wal_ops : &poll_ops;
}
