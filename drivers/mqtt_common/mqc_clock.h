/* MQTT 5 drivers: the monotonic clock their timeouts and conds use. */
#ifndef OBX_MQC_CLOCK_H
#define OBX_MQC_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t mqc_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ms_from_now as an absolute time for pthread_cond_timedwait (the conds use
 * CLOCK_MONOTONIC). */
static inline void mqc_abstime(int64_t ms_from_now, struct timespec *ts)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms_from_now / 1000;
    ts->tv_nsec += (ms_from_now % 1000) * 1000000;
    if (ts->tv_nsec >= 1000000000) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000;
    }
}

#endif
