#include "config.h"

#include <string.h>

const cfg_value *config_output_option(const cfg_output *out, const char *name)
{
    for (size_t i = 0; i < out->option_count; i++)
        if (strcmp(out->options[i].name, name) == 0)
            return &out->options[i];
    return NULL;
}
