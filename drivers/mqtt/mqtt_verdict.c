/*
 * MQTT driver: the verdict on a broker's answer, in one table (the README's
 * "Whose fault an answer is" is this file in prose).
 *
 * Pushback is the broker's state, not the event's: it pauses the output and
 * counts no attempt, so a throttling or hung broker never dead-letters good
 * events. 0x80 Unspecified stays the event's: the broker has 0x97 and 0x89
 * to say "not now", and a broker that refused one event with 0x80 every
 * time would, as UNAVAILABLE, pause the output on each offer and never
 * dead-letter it (a poison event must end dead); as RETRIABLE a broker-wide
 * 0x80 costs attempts that max_attempts bounds and last_error shows.
 */
#include <MQTTReasonCodes.h>

#include "mqtt_verdict.h"

obx_status mqtt_reason_status(int reason)
{
    switch (reason) {
    case MQTTREASONCODE_NOT_AUTHORIZED:         /* 0x87: the ACL will not change by retrying */
    case MQTTREASONCODE_TOPIC_NAME_INVALID:     /* 0x90 */
    case MQTTREASONCODE_PAYLOAD_FORMAT_INVALID: /* 0x99 */
    case MQTTREASONCODE_PACKET_TOO_LARGE:       /* 0x95: this message is over the broker's limit */
        return OBX_PERMANENT;
    case MQTTREASONCODE_QUOTA_EXCEEDED: /* 0x97: the broker's rate or queue limit */
    case MQTTREASONCODE_SERVER_BUSY: /* 0x89 */ return OBX_UNAVAILABLE;
    default: /* 0x80 unspecified, 0x83 implementation specific, 0x91 id in use, ... */
        return OBX_RETRIABLE;
    }
}

/* The broker holds the connection and answers nothing: hung or overloaded,
 * either way the output's state (Mosquitto acknowledges every QoS 1/2
 * publish it takes, or drops the connection). */
obx_status mqtt_timeout_status(void)
{
    return OBX_UNAVAILABLE;
}
