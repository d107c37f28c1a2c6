/* MQTT 5 drivers: what both tell the host the same way. */
#ifndef OBX_MQC_HOST_H
#define OBX_MQC_HOST_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "obx/driver.h"

/* Refuses m in publish_batch and returns its accept status. A 1.0 host
 * (!has_refuse) cannot take a refusal's reason, so a PERMANENT one is
 * accepted and completed at once with it (nothing is sent), under mu and
 * counted in *n_failed. */
obx_status mqc_refuse(const obx_host *host, int has_refuse, pthread_mutex_t *mu, uint64_t *n_failed,
                      const obx_message *m, obx_status status, const char *why);

/* The log line of a connection made (attempts: since the last success). */
void mqc_log_connected(const obx_host *host, const char *url_shown, const char *client_id,
                       int attempts, int ever_connected);

/* Waits (mu held) up to timeout_ms (none when <= 0) until *connected or
 * *closed: a batch or a probe waiting out a (re)connection. */
void mqc_wait_connected_locked(pthread_mutex_t *mu, pthread_cond_t *cond, const int *connected,
                               const int *closed, int64_t timeout_ms);

/* create: waits up to MQC_FIRST_CONNECT_WAIT_MS for the first connect or
 * its refusal, so the first batch is not refused wholesale. A broker that
 * is down is no config error (the driver keeps trying), refused credentials
 * are: 1 with errstr then. Takes mu; *connected and the last connect's
 * error text and code are what the driver's callbacks set under it. */
#define MQC_FIRST_CONNECT_WAIT_MS 2000
int mqc_first_connect_refused(pthread_mutex_t *mu, pthread_cond_t *cond, const int *connected,
                              const char *last_err, const int *last_code, const char *url_shown,
                              char *errstr, size_t errstr_size);

/* An instance's mutex and its two conds, on mqc_abstime's clock. */
void mqc_sync_init(pthread_mutex_t *mu, pthread_cond_t *cond, pthread_cond_t *idle);
void mqc_sync_destroy(pthread_mutex_t *mu, pthread_cond_t *cond, pthread_cond_t *idle);

#endif
