/* The engine's one clock: monotonic milliseconds. */
#ifndef OBX_CLOCK_H
#define OBX_CLOCK_H

#include <time.h>

/* Milliseconds on the monotonic clock (async-signal-safe). */
long long now_ms(void);

/* ms from now on the real-time clock, the one pthread_cond_timedwait and
 * pthread_timedjoin_np take. */
struct timespec clock_deadline(int ms);

#endif
