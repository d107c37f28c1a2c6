/*
 * Producer configuration: the relay's fixed settings and defaults, the
 * driver options, then the output's native properties passed through
 * verbatim, then the callbacks. Properties that would break the relay's
 * guarantees (durable acks, ordered retries, a completion for every message,
 * nothing waiting forever) are refused at create with a message naming the
 * property.
 *
 * Option defaults, ranges and choices are declared once, in kafka_specs; the
 * host enforces them and hands the defaults to the getters. A host that does
 * not hand defaults yet gets the same ones, read from the same table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kafka_int.h"

const obx_option kafka_options[] = {
    {"bootstrap_servers", OBX_OPT_STRING, OBX_OPT_REQUIRED,
     "comma separated host:port list of the Kafka cluster"},
    {"key", OBX_OPT_STRING, 0,
     "message key: aggregate_id keeps each aggregate on one partition, in order"},
    {"partitioner", OBX_OPT_STRING, 0,
     "librdkafka partitioner; murmur2_random places keys as Java producers do"},
    {"unknown_topic_permanent", OBX_OPT_BOOL, 0,
     "dead-letter a message whose topic does not exist (false: retry)"},
    {"authorization_permanent", OBX_OPT_BOOL, 0,
     "dead-letter a message refused by topic/cluster authorization (false: retry)"},
    {"message_timeout_ms", OBX_OPT_INT, 0,
     "give up a delivery attempt after this long: pushback, the output pauses"},
    {"max_in_flight", OBX_OPT_INT, 0,
     "max.in.flight.requests.per.connection (the idempotent producer allows 5)"},
    {"timestamp", OBX_OPT_STRING, 0,
     "the record's timestamp: now (when produced) or created_at (the row's)"},
    {"compat", OBX_OPT_STRING, 0,
     "debezium: messages as Debezium's outbox EventRouter makes them (an id header, no other)"},
    {"key_template", OBX_OPT_STRING, 0,
     "the key from the message's fields, e.g. ${aggregate_type}-${aggregate_id} (over key)"},
    {"partition_template", OBX_OPT_STRING, 0,
     "the partition number from the message's fields (else the partitioner's, by key)"},
    OBX_CE_OPTIONS,
    {NULL, 0, 0, NULL},
};

static const char *const kafka_timestamp_choices[] = {"now", "created_at", NULL};
static const char *const kafka_compat_choices[] = {"none", "debezium", NULL};
static const char *const kafka_key_choices[] = {"aggregate_id", "event_id", "none", NULL};
static const char *const kafka_partitioners[] = {"murmur2_random", "murmur2", "consistent_random",
                                                 "consistent",     "random",  "fnv1a_random",
                                                 "fnv1a",          NULL};

/* Parallel to kafka_options. */
const obx_option_spec kafka_specs[] = {
    {NULL, 0, 0, NULL, NULL},                           /* bootstrap_servers */
    {"aggregate_id", 0, 0, kafka_key_choices, NULL},    /* key */
    {"murmur2_random", 0, 0, kafka_partitioners, NULL}, /* partitioner */
    {"false", 0, 0, NULL, NULL},                        /* unknown_topic_permanent */
    {"false", 0, 0, NULL, NULL},                        /* authorization_permanent */
    {"30000", 1, 2147483647.0, NULL, NULL},             /* message_timeout_ms */
    {"5", 1, 5, NULL, NULL},                            /* max_in_flight */
    {"now", 0, 0, kafka_timestamp_choices, NULL},       /* timestamp */
    {"none", 0, 0, kafka_compat_choices, NULL},         /* compat */
    {NULL, 0, 0, NULL, NULL},                           /* key_template */
    {NULL, 0, 0, NULL, NULL},                           /* partition_template */
    OBX_CE_OPTION_SPECS,
    {NULL, 0, 0, NULL, NULL},
};

_Static_assert(sizeof(kafka_options) / sizeof(*kafka_options) ==
                   sizeof(kafka_specs) / sizeof(*kafka_specs),
               "kafka_specs is parallel to kafka_options");

/* The declared default of an option, as written in a config; NULL: none. */
static const char *kafka_default(const char *name)
{
    for (size_t i = 0; kafka_options[i].name; i++)
        if (!strcmp(kafka_options[i].name, name))
            return kafka_specs[i].default_value;
    return NULL;
}

static const char *kafka_opt_str(const obx_instance *inst, const char *name)
{
    const char *v = NULL;
    return inst->host->get_string(inst->host->host_ctx, name, &v) && v ? v : kafka_default(name);
}

static int64_t kafka_opt_int(const obx_instance *inst, const char *name)
{
    int64_t v;
    if (inst->host->get_int(inst->host->host_ctx, name, &v))
        return v;
    const char *d = kafka_default(name);
    return d ? atoll(d) : 0;
}

static int kafka_opt_bool(const obx_instance *inst, const char *name)
{
    int v;
    if (inst->host->get_bool(inst->host->host_ctx, name, &v))
        return v;
    const char *d = kafka_default(name);
    return d && !strcmp(d, "true");
}

static int kafka_truthy(const char *v)
{
    return !strcasecmp(v, "true") || !strcmp(v, "t") || !strcmp(v, "1");
}

/*
 * Returns NULL when the property may pass, else why it is refused.
 * Aliases are listed because librdkafka accepts them as the same setting.
 */
static const char *kafka_property_refusal(const char *key, const char *value)
{
    if (!strcmp(key, "acks") || !strcmp(key, "request.required.acks")) {
        if (strcmp(value, "all") && strcmp(value, "-1"))
            return "only acks=all (-1) gives a durable acknowledgement";
    } else if (!strcmp(key, "enable.idempotence")) {
        if (!kafka_truthy(value))
            return "idempotence keeps retries ordered and free of duplicates";
    } else if (!strcmp(key, "delivery.report.only.error")) {
        if (kafka_truthy(value))
            return "every message completes from its delivery report";
    } else if (!strcmp(key, "message.timeout.ms") || !strcmp(key, "delivery.timeout.ms")) {
        if (!strcmp(value, "0"))
            return "0 means never time out, so a message could wait forever";
    } else if (!strcmp(key, "transactional.id")) {
        return "the relay does not run a transactional producer";
    } else if (!strcmp(key, "dr_cb") || !strcmp(key, "dr_msg_cb") || !strcmp(key, "opaque") ||
               !strcmp(key, "background_event_cb")) {
        return "the driver owns its callbacks";
    }
    return NULL;
}

static int kafka_set(rd_kafka_conf_t *conf, const char *key, const char *value, char *errstr,
                     size_t errstr_size)
{
    char why[256];
    if (rd_kafka_conf_set(conf, key, value, why, sizeof why) == RD_KAFKA_CONF_OK)
        return 0;
    /* librdkafka's own text names the property; never echo the value (may be a secret) */
    snprintf(errstr, errstr_size, "property \"%s\": %s", key, why);
    return -1;
}

static int kafka_set_int(rd_kafka_conf_t *conf, const char *key, int64_t v, char *errstr,
                         size_t errstr_size)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)v);
    return kafka_set(conf, key, buf, errstr, errstr_size);
}

/* The driver's declared options; the host has checked ranges and choices. */
static int kafka_apply_options(obx_instance *inst, rd_kafka_conf_t *conf, char *errstr,
                               size_t errstr_size)
{
    const char *servers = kafka_opt_str(inst, "bootstrap_servers");
    if (!servers || !*servers) {
        snprintf(errstr, errstr_size, "option \"bootstrap_servers\" is required");
        return -1;
    }
    const char *key = kafka_opt_str(inst, "key");
    obx_ce_config_read(inst->host, &inst->ce);
    inst->key_mode = !strcmp(key, "event_id") ? KAFKA_KEY_EVENT_ID
                     : !strcmp(key, "none")   ? KAFKA_KEY_NONE
                                              : KAFKA_KEY_AGGREGATE_ID;
    inst->key_template = kafka_opt_str(inst, "key_template");
    inst->partition_template = kafka_opt_str(inst, "partition_template");
    const char *templates[] = {"key_template", inst->key_template, "partition_template",
                               inst->partition_template};
    for (int i = 0; i < 4; i += 2) {
        char why[256];
        if (templates[i + 1] && obx_ce_template_check(templates[i + 1], why, sizeof why) < 0) {
            snprintf(errstr, errstr_size, "option \"%s\": %s", templates[i], why);
            return -1;
        }
    }
    inst->debezium = !strcmp(kafka_opt_str(inst, "compat"), "debezium");
    inst->created_at_timestamp = !strcmp(kafka_opt_str(inst, "timestamp"), "created_at");
    if (inst->debezium && inst->ce.mode != OBX_CE_OFF) {
        snprintf(errstr, errstr_size,
                 "compat = \"debezium\" and format = \"cloudevents\" "
                 "shape messages two ways: choose one");
        return -1;
    }
    inst->unknown_topic_permanent = kafka_opt_bool(inst, "unknown_topic_permanent");
    inst->authorization_permanent = kafka_opt_bool(inst, "authorization_permanent");
    return kafka_set(conf, "bootstrap.servers", servers, errstr, errstr_size) ||
           kafka_set(conf, "partitioner", kafka_opt_str(inst, "partitioner"), errstr,
                     errstr_size) ||
           kafka_set_int(conf, "message.timeout.ms", kafka_opt_int(inst, "message_timeout_ms"),
                         errstr, errstr_size) ||
           kafka_set_int(conf, "max.in.flight.requests.per.connection",
                         kafka_opt_int(inst, "max_in_flight"), errstr, errstr_size);
}

static int kafka_apply_properties(obx_instance *inst, rd_kafka_conf_t *conf, char *errstr,
                                  size_t errstr_size)
{
    const char *key, *value;
    for (size_t i = 0; inst->host->get_property(inst->host->host_ctx, i, &key, &value); i++) {
        const char *why = kafka_property_refusal(key, value);
        if (why) {
            snprintf(errstr, errstr_size, "property \"%s\" = \"%s\" refused: %s", key, value, why);
            return -1;
        }
        if (kafka_set(conf, key, value, errstr, errstr_size))
            return -1;
    }
    return 0;
}

rd_kafka_conf_t *kafka_conf_build(obx_instance *inst, char *errstr, size_t errstr_size)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (kafka_set(conf, "enable.idempotence", "true", errstr, errstr_size) ||
        kafka_set(conf, "acks", "all", errstr, errstr_size) ||
        kafka_set(conf, "client.id", "outbox-relay", errstr, errstr_size) ||
        /* the relay hands over whole batches and waits for their reports, so
         * librdkafka's own 5 ms linger only adds latency (measured: p50 7.6 ms
         * becomes 3.0 ms at 1 ms linger, same throughput); a property overrides it */
        kafka_set(conf, "linger.ms", "1", errstr, errstr_size) ||
        /* librdkafka doubles its reconnect backoff up to 10 s, so after a
         * 1-2 s outage it could wait seconds more before trying again
         * (measured: deliveries stopped 2-6 s after a 1.5 s outage); 1 s caps
         * that. A property overrides it. */
        kafka_set(conf, "reconnect.backoff.max.ms", "1000", errstr, errstr_size) ||
        /* a topic the cluster does not know keeps its messages queued for
         * librdkafka's 30 s propagation allowance, and with them the batch
         * they came in (measured: 27 s without a completion); after 1 s they
         * fail UNKNOWN_TOPIC and later ones are refused at once. A property
         * overrides it. */
        kafka_set(conf, "topic.metadata.propagation.max.ms", "1000", errstr, errstr_size) ||
        kafka_apply_options(inst, conf, errstr, errstr_size) ||
        kafka_apply_properties(inst, conf, errstr, errstr_size)) {
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    rd_kafka_conf_set_opaque(conf, inst);
    rd_kafka_conf_set_dr_msg_cb(conf, kafka_dr_cb);
    rd_kafka_conf_set_error_cb(conf, kafka_error_cb);
    rd_kafka_conf_set_log_cb(conf, kafka_log_cb);
    return conf;
}
