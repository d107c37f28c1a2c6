/*
 * MQTT 5 drivers: the verdict on a broker's answer, in one table.
 *
 * Pushback is the broker's state, not the event's: it pauses the output and
 * counts no attempt, so a throttling or hung broker never dead-letters good
 * events. 0x80 Unspecified stays the event's: the broker has 0x97 and 0x89
 * to say "not now", and a broker that refused one event with 0x80 every
 * time would, as UNAVAILABLE, pause the output on each offer and never
 * dead-letter it (a poison event must end dead); as RETRIABLE a broker-wide
 * 0x80 costs attempts that max_attempts bounds and last_error shows.
 */
#include "mqc_verdict.h"

obx_status mqc_reason_status(int reason)
{
    switch (reason) {
    case 0x87: /* Not authorized: the ACL will not change by retrying */
    case 0x90: /* Topic name invalid */
    case 0x95: /* Packet too large: this message is over the broker's limit */
    case 0x99: /* Payload format invalid */ return OBX_PERMANENT;
    case 0x97: /* Quota exceeded: the broker's rate or queue limit */
    case 0x89: /* Server busy */ return OBX_UNAVAILABLE;
    default: /* 0x80 unspecified, 0x83 implementation specific, 0x91 id in use, ... */
        return OBX_RETRIABLE;
    }
}

/* The broker holds the connection and answers nothing: hung or overloaded,
 * either way the output's state (Mosquitto acknowledges every QoS 1/2
 * publish it takes, or drops the connection). */
obx_status mqc_timeout_status(void)
{
    return OBX_UNAVAILABLE;
}

int mqc_connack_fatal(int reason)
{
    /* 0x85 client identifier not valid, 0x86 bad user name or password,
     * 0x87 not authorized, 0x8A banned */
    return reason == 0x85 || reason == 0x86 || reason == 0x87 || reason == 0x8A;
}
