/* Routing a message: the first matching route, its destination template. */
#ifndef OBX_ROUTE_H
#define OBX_ROUTE_H

#include <stddef.h>

#include "base/arena.h"
#include "config/config.h"
#include "obx/driver.h"

/* The first route whose globs match msg's event and aggregate types and
 * headers, or NULL. */
const cfg_route *route_for(const relay_config *cfg, const obx_message *msg);

/* Renders a destination template with msg's fields (in a, or tmpl itself
 * when it names none). -1 with the reason in err for a NULL, empty or
 * unknown field. */
int route_render(const char *tmpl, const obx_message *msg, arena *a, const char **out, char *err,
                 size_t err_size);

/* Shapes msg's headers (the row's) as route r says: drops, renames, then
 * sets (templates rendered as destinations are); the new array is in a.
 * -1 with the reason in err when a set header's template cannot render. */
int route_shape_headers(const cfg_route *r, obx_message *msg, arena *a, char *err, size_t err_size);

#endif
