/* The engine's one clock: monotonic milliseconds. */
#ifndef OBX_CLOCK_H
#define OBX_CLOCK_H

/* Milliseconds on the monotonic clock (async-signal-safe). */
long long now_ms(void);

#endif
