/* kdrv's shared pieces: the loaded driver, the checks, the host helpers.
 * Scenarios live in kdrv.c and kdrv_pushback.c. */
#ifndef OBX_KDRV_H
#define OBX_KDRV_H

#include <sys/types.h>

#include "fake_host.h"
#include "messages.h"

#define MAX_KV 32

typedef struct args {
    const char *bootstrap, *topic, *events;
    size_t n;
    const char *opts[MAX_KV], *props[MAX_KV]; /* name=value from the command line */
    int nopts, nprops;
    pid_t kmock;
} args;

extern const loaded_driver *drv;
extern const obx_driver_def *def;
extern int failures;
extern unsigned run_id;

void failf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
long long kdrv_now_ms(void);
/* n messages to topic: 50 aggregates, headers traceparent and seq = n. */
void msgs_init(msg_set *s, size_t n, const char *topic, unsigned salt);
/* Publishes a batch; returns how many were accepted. */
size_t publish(obx_instance *inst, fake_host *fh, const obx_message *msgs, size_t count,
               obx_status *accept);
/* Appends the event ids completed OK to path (when set). */
void write_events(const char *path, fake_host *fh, const msg_set *s);
void close_checked(obx_instance *inst, fake_host *fh, const char *what);
obx_instance *create_ok(fake_host *fh);
void must(int rc);
/* A host for tokens 0 .. cap-1 with the command line's options and properties. */
fake_host *fake_from(const args *a, size_t cap);
void expect_all(fake_host *fh, size_t n, obx_status want, const char *detail_part,
                const char *what);

/* kdrv_pushback.c */
void scenario_topics(const args *a);
void scenario_unknown(const args *a);
void scenario_toolarge(const args *a);
void scenario_hang(const args *a);
void scenario_manytopics(const args *a);
void scenario_queuefull(const args *a);
void scenario_denied(const args *a);

#endif
