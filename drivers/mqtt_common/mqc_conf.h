/* MQTT 5 drivers: the options both take alike, and reading them. */
#ifndef OBX_MQC_CONF_H
#define OBX_MQC_CONF_H

#include <stddef.h>
#include <stdint.h>

#include "obx/driver.h"

/* The options groups both drivers declare, each at the same place of a
 * driver's options as its specs group is in the specs (they are parallel).
 * Laid out by hand: clang-format indents a macro's list of braces unevenly. */
// clang-format off
#define MQC_OPTIONS_CLIENT                                                                      \
    {"url", OBX_OPT_STRING, OBX_OPT_REQUIRED | OBX_OPT_SECRET,                                  \
     "broker URL: tcp://host:port or ssl://host:port (logged with any user:password@ masked)"}, \
    {"client_id_prefix", OBX_OPT_STRING, 0,                                                     \
     "client id prefix; pid, instance number and a random suffix are appended"},                \
    {"username", OBX_OPT_STRING, 0, "user name"},                                               \
    {"password", OBX_OPT_STRING, OBX_OPT_SECRET, "password (use ${ENV_VAR})"},                  \
    {"qos", OBX_OPT_INT, 0, "1 or 2; 0 is refused: it cannot be acknowledged"}
#define MQC_SPECS_CLIENT                                                                        \
    {NULL, 0, 0, NULL, NULL},            /* url */                                              \
    {"outbox-relay-", 0, 0, NULL, NULL}, /* client_id_prefix */                                 \
    {NULL, 0, 0, NULL, NULL},            /* username */                                         \
    {NULL, 0, 0, NULL, NULL},            /* password */                                         \
    {"1", 1, 2, NULL, NULL}              /* qos */

#define MQC_OPTIONS_PROPERTIES                                                                  \
    {"content_type", OBX_OPT_STRING, 0,                                                         \
     "content type property, a template or a constant (default: the row's)"},                   \
    {"message_expiry_s", OBX_OPT_INT, 0,                                                        \
     "message expiry interval property, in seconds as MQTT defines it (0: never expires)"}
#define MQC_SPECS_PROPERTIES                                                                    \
    {NULL, 0, 0, NULL, NULL},           /* content_type */                                      \
    {"0", 0, 4294967295.0, NULL, NULL}  /* message_expiry_s */

#define MQC_OPTIONS_RECONNECT_TLS                                                               \
    {"reconnect_min_ms", OBX_OPT_INT, 0, "first reconnect delay, doubled per failure"},         \
    {"reconnect_max_ms", OBX_OPT_INT, 0, "longest reconnect delay"},                            \
    {"tls_ca", OBX_OPT_STRING, 0, "CA certificate file (PEM) for ssl:// URLs"},                 \
    {"tls_cert", OBX_OPT_STRING, 0, "client certificate file (PEM)"},                           \
    {"tls_key", OBX_OPT_STRING, 0, "client private key file (PEM)"},                            \
    {"tls_key_password", OBX_OPT_STRING, OBX_OPT_SECRET, "private key pass phrase"},            \
    {"tls_verify", OBX_OPT_BOOL, 0, "verify the server certificate and host name"}
#define MQC_SPECS_RECONNECT_TLS                                                                 \
    {"100", 10, 600000, NULL, NULL},    /* reconnect_min_ms */                                  \
    {"5000", 10, 3600000, NULL, NULL},  /* reconnect_max_ms */                                  \
    {NULL, 0, 0, NULL, NULL},           /* tls_ca */                                            \
    {NULL, 0, 0, NULL, NULL},           /* tls_cert */                                          \
    {NULL, 0, 0, NULL, NULL},           /* tls_key */                                           \
    {NULL, 0, 0, NULL, NULL},           /* tls_key_password */                                  \
    {"true", 0, 0, NULL, NULL}          /* tls_verify */
// clang-format on

/* A driver's declared options and their parallel specs. */
typedef struct mqc_option_table {
    const obx_option *options;
    const obx_option_spec *specs;
} mqc_option_table;

/* The spec of option name, NULL when not declared. */
const obx_option_spec *mqc_spec(const mqc_option_table *t, const char *name);

/* An INT option: the host's value, or the declared default while a host
 * that hands out no defaults (1.0) says it is unset; the declared range is
 * checked again for that host. 1 when set or defaulted, 0 when unset
 * without default, -1 with errstr. */
int mqc_opt_int(const obx_host *host, const mqc_option_table *t, const char *name, int64_t *out,
                char *errstr, size_t errstr_size);

/* The required url, and in shown the url as it may be printed (any
 * user:password@ masked as ***@); -1 with errstr. */
int mqc_url_read(const obx_host *host, const char **url, char *shown, size_t shown_size,
                 char *errstr, size_t errstr_size);
void mqc_url_mask(const char *url, char *out, size_t size);

/* qos: 1 or 2; 0 refused with the reason (it has no acknowledgement). */
int mqc_qos_read(const obx_host *host, const mqc_option_table *t, int *qos, char *errstr,
                 size_t errstr_size);

/* reconnect_min_ms and reconnect_max_ms, the second not below the first. */
int mqc_reconnect_read(const obx_host *host, const mqc_option_table *t, int64_t *min_ms,
                       int64_t *max_ms, char *errstr, size_t errstr_size);

/* A property template option: *out stays as it is when unset or empty;
 * -1 with errstr when the template is malformed. */
int mqc_template_read(const obx_host *host, const char *name, const char **out, char *errstr,
                      size_t errstr_size);

/* client_id_prefix + pid, instance number in the process and a random
 * suffix, into out; -1 with errstr when it does not fit. */
int mqc_client_id_make(const obx_host *host, const mqc_option_table *t, char *out, size_t size,
                       char *errstr, size_t errstr_size);

/* Neither client library has generic key/value settings: a native property
 * is refused rather than ignored (-1 with errstr). */
int mqc_no_native_properties(const obx_host *host, char *errstr, size_t errstr_size);

#endif
