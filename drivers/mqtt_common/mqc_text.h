/* MQTT 5 drivers: the text checks a message passes before it is sent. */
#ifndef OBX_MQC_TEXT_H
#define OBX_MQC_TEXT_H

#include <stddef.h>

/* Strict UTF-8 as MQTT requires, without the characters a broker MAY close
 * the connection for: 1 when s (len bytes) may be sent. */
int mqc_utf8_ok(const unsigned char *s, size_t len);
/* A UTF-8 string property (user property, content type): fits and passes mqc_utf8_ok. */
int mqc_text_ok(const char *s);
/* NULL when the topic can be published, else why not. */
const char *mqc_topic_problem(const char *topic);

#endif
