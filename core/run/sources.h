/* The source registry: the one place that knows which sources there are. */
#ifndef OBX_SOURCES_H
#define OBX_SOURCES_H

#include "host/source.h"

/* The configured source's table. */
const source_kind *source_for(const relay_config *cfg);

#endif
