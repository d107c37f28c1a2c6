#include "poll/beside.h"

int beside_worth(const beside_view *v)
{
    return !v->stopping && !v->generation_pending && !v->found_empty &&
           v->busy_count >= v->batch_size && (v->answering || v->busy_answered) && v->busy_left > 0;
}
