/*
 * MQTT 5 drivers: the checks a string passes before it is sent. One bad
 * string must not make the broker drop the connection under everybody
 * else's messages: such a message is refused alone instead.
 */
#include <string.h>

#include "mqc_text.h"

/* Mosquitto (TOPIC_HIERARCHY_LIMIT) drops the connection, with every
 * publish in flight on it, for a topic of more than 200 '/'. */
#define MQC_TOPIC_SEPARATORS_MAX 200
#define MQC_TOPIC_LEVELS_MAX 201
#define MQC_STR2(x) #x
#define MQC_STR(x) MQC_STR2(x)

/* No overlongs, surrogates or U+0000 (MQTT), and none of the control
 * characters or non-characters a broker MAY close the connection for
 * (Mosquitto does). */
int mqc_utf8_ok(const unsigned char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        unsigned c = s[i], cp;
        size_t n;
        if (c < 0x80) {
            if (c < 0x20 || c == 0x7F) /* U+0000 included */
                return 0;
            i++;
            continue;
        }
        if ((c & 0xE0) == 0xC0)
            n = 1, cp = c & 0x1F;
        else if ((c & 0xF0) == 0xE0)
            n = 2, cp = c & 0x0F;
        else if ((c & 0xF8) == 0xF0)
            n = 3, cp = c & 0x07;
        else
            return 0;
        for (size_t k = 1; k <= n; k++) {
            if (i + k >= len || (s[i + k] & 0xC0) != 0x80)
                return 0;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
            cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) || (cp >= 0x80 && cp <= 0x9F) ||
            (cp >= 0xFDD0 && cp <= 0xFDEF) || (cp & 0xFFFE) == 0xFFFE)
            return 0;
        i += n + 1;
    }
    return 1;
}

int mqc_text_ok(const char *s)
{
    size_t len = strlen(s);
    return len <= 65535 && mqc_utf8_ok((const unsigned char *)s, len);
}

const char *mqc_topic_problem(const char *topic)
{
    if (!topic || !*topic)
        return "invalid topic: empty (check the route's destination)";
    size_t len = strlen(topic), separators = 0;
    if (len > 65535)
        return "invalid topic: longer than 65535 bytes";
    if (strchr(topic, '+') || strchr(topic, '#'))
        return "invalid topic: wildcards '+' and '#' are not allowed in a topic name";
    for (const char *p = strchr(topic, '/'); p; p = strchr(p + 1, '/'))
        separators++;
    if (separators > MQC_TOPIC_SEPARATORS_MAX)
        return "invalid topic: more than " MQC_STR(
            MQC_TOPIC_LEVELS_MAX) " levels (Mosquitto disconnects a client that publishes one)";
    if (!mqc_utf8_ok((const unsigned char *)topic, len))
        return "invalid topic: not valid UTF-8, or contains control characters";
    return NULL;
}
