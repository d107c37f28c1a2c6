# Helpers for the mosquitto driver's tests; source after tests/lib.sh. The
# brokers, the subscriber (msub) and the relay config are tests/mqtt's: only
# the output's driver differs.
# shellcheck source=../mqtt/mqtt_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../mqtt/mqtt_lib.sh"

# mosq_relay_cfg FILE URL TOPIC_PREFIX [RELAY_EXTRA] [DRIVER_EXTRA]: mq_relay_cfg
# (every event to TOPIC_PREFIX/<aggregate_type>) with driver = "mosquitto".
mosq_relay_cfg() {
    mq_relay_cfg "$@"
    sed -i 's/driver = "mqtt";/driver = "mosquitto";/' "$1"
    grep -q 'driver = "mosquitto";' "$1" || fail "mosq_relay_cfg: no mqtt output to switch in $1"
}
