/*
 * mosquitto driver: the verdict on a broker's answer, the same table as the
 * mqtt driver's (see drivers/mqtt/README.md, "Whose fault an answer is"):
 * pushback (0x97 Quota exceeded, 0x89 Server busy) is the output's state and
 * costs no attempt; refusals the broker will repeat are permanent; 0x80 and
 * every other failure code are the event's, retried with backoff.
 */
#include "mosq_verdict.h"

obx_status mosq_reason_status(int reason)
{
    switch (reason) {
    case 0x87: /* Not authorized: the ACL will not change by retrying */
    case 0x90: /* Topic name invalid */
    case 0x95: /* Packet too large: this message is over the broker's limit */
    case 0x99: /* Payload format invalid */
        return OBX_PERMANENT;
    case 0x97: /* Quota exceeded */
    case 0x89: /* Server busy */
        return OBX_UNAVAILABLE;
    default: /* 0x80 unspecified, 0x83 implementation specific, 0x91 id in use, ... */
        return OBX_RETRIABLE;
    }
}

int mosq_connack_fatal(int reason)
{
    /* 0x85 client identifier not valid, 0x86 bad user name or password,
     * 0x87 not authorized, 0x8A banned */
    return reason == 0x85 || reason == 0x86 || reason == 0x87 || reason == 0x8A;
}
