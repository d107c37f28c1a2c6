/* The service manager's notification protocol (sd_notify) without
 * libsystemd: a datagram of "KEY=VALUE" lines to the unix socket named by
 * NOTIFY_SOCKET. Without that variable every call does nothing, so the relay
 * runs the same under systemd, in a container or from a shell. */
#ifndef OBX_SERVICE_NOTIFY_H
#define OBX_SERVICE_NOTIFY_H

/* Reads NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID. Call once, before
 * any other thread starts. */
void notify_init(void);

/* Sends state (e.g. "READY=1\nSTATUS=relaying"). Returns 0, or -1 when
 * there is no manager or the send failed (never fatal: logged once). */
int notify_send(const char *state);

/* Sends WATCHDOG=1 when half the manager's watchdog interval has passed
 * since the last one (now: monotonic ms). Cheap: call it often. */
void notify_watchdog(long long now);

/* The watchdog interval the manager asked for, in ms (0: none). */
long long notify_watchdog_ms(void);

#endif
