/*
 * MQTT driver: one paho client per connection.
 *
 * When a connection is lost the driver gives back everything in flight or
 * queued (UNAVAILABLE) and the host offers those events again, in order.
 * paho, though, keeps the publishes of a lost connection and sends them
 * again after a reconnect of the same client (in flight, and still in its
 * command queue): an event given back could then reach the broker after a
 * later event of its aggregate that the host sent meanwhile. So the
 * connection after a loss is made by a fresh client, and the lost one is
 * retired: it never connects again, so nothing given back is ever sent. A
 * retired client is destroyed at the next loss (never from a paho callback,
 * and its callbacks are stale by then) or at close.
 *
 * Stale callbacks: each client has a generation (0 or 1, alternating);
 * connection callbacks carry &inst->cctx[gen] and publish callbacks a
 * context of that generation, so a late callback of the retired client is
 * told apart even when paho reuses a packet id. At most one retired client
 * exists, destroyed before its generation is reused.
 *
 * paho 1.3.12 keeps the topic and payload of the publishes still in a
 * destroyed client's command queue (fixed in 1.3.14): at most max_in_flight
 * per lost connection, as before this change (a wedged client was re-created
 * the same way).
 */
#include "mqtt_client.h"

/* paho insists on a messageArrived callback; we never subscribe */
static int mqtt_discard_arrived(void *ctx, char *topic, int len, MQTTAsync_message *m)
{
    (void)ctx;
    (void)len;
    MQTTAsync_freeMessage(&m);
    MQTTAsync_free(topic);
    return 1;
}

int mqtt_client_make(mqtt_inst *inst, int gen, MQTTAsync *out)
{
    MQTTAsync c = NULL;
    MQTTAsync_createOptions cro = MQTTAsync_createOptions_initializer5;
    cro.sendWhileDisconnected = 0; /* the database row is the buffer */
    cro.maxBufferedMessages = inst->window + 16;
    cro.restoreMessages = 0;
    cro.persistQoS0 = 0;
    int rc = MQTTAsync_createWithOptions(&c, inst->url_shown, inst->client_id,
                                         MQTTCLIENT_PERSISTENCE_NONE, NULL, &cro);
    if (rc != MQTTASYNC_SUCCESS)
        return rc;
    inst->cctx[gen].inst = inst;
    inst->cctx[gen].gen = gen;
    if ((rc = MQTTAsync_setCallbacks(c, &inst->cctx[gen], inst->on_lost, mqtt_discard_arrived,
                                     NULL)) != MQTTASYNC_SUCCESS ||
        (rc = MQTTAsync_setDisconnected(c, &inst->cctx[gen], inst->on_disconnected)) !=
            MQTTASYNC_SUCCESS) {
        MQTTAsync_destroy(&c);
        return rc;
    }
    *out = c;
    return 0;
}

int mqtt_client_renew_locked(mqtt_inst *inst)
{
    /* the pump hands publishes to the current client with mu released */
    inst->pump_waiters++;
    while (inst->pumping)
        pthread_cond_wait(&inst->cond, &inst->mu);
    inst->pump_waiters--;
    MQTTAsync old = inst->retired, current = inst->client;
    int gen = inst->gen;
    inst->retired = NULL;
    pthread_mutex_unlock(&inst->mu);
    if (old)
        MQTTAsync_destroy(&old); /* no callback of it runs after this returns */
    MQTTAsync fresh = NULL;
    int rc = mqtt_client_make(inst, 1 - gen, &fresh);
    pthread_mutex_lock(&inst->mu);
    if (rc == 0) { /* else the current one connects again: better than none */
        inst->retired = current;
        inst->client = fresh;
        inst->gen = 1 - gen;
        inst->fresh_needed = 0;
        inst->n_clients++;
    }
    return rc;
}

void mqtt_client_destroy_all(mqtt_inst *inst)
{
    if (inst->retired)
        MQTTAsync_destroy(&inst->retired);
    if (inst->client)
        MQTTAsync_destroy(&inst->client);
    inst->retired = inst->client = NULL;
}

int mqtt_client_stale_locked(const mqtt_cctx *c)
{
    return c->gen != c->inst->gen;
}
