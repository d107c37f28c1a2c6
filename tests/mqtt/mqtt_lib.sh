# Helpers for the MQTT tests; source after tests/lib.sh.
MQTT_TEST_BIN=${MQTT_TEST_BIN:?MQTT_TEST_BIN must name the directory with msub and mharness}
# msub is a test tool: leaks inside paho (a connect pending at destroy) are not ours
MSUB=(env ASAN_OPTIONS=detect_leaks=0 "$MQTT_TEST_BIN/msub")
MHARNESS=$MQTT_TEST_BIN/mharness
MQTT_SO=${OBX_DRIVERS:-$(dirname "$OBX_BIN")/drivers}/mqtt.so
# the test's own directory: its brokers' and subscribers' files, by name
MQ_ROOT=$(mktemp -d /tmp/obx-mqtt.XXXXXX)
chmod 755 "$MQ_ROOT"

# mq_private NAME [PORT] [persist]: start a private Mosquitto (never the
# shared one: fault tests stop it) on PORT (empty: free_ports) and stop it
# when the test exits. Sets PMQ_URL, PMQ_STOP, PMQ_START, PMQ_DIR.
mq_private() {
    local dir=$MQ_ROOT/$1 port=${2:-} persist=${3:-false}
    [ -n "$port" ] || port=$(free_ports 1)
    PMQ_STOP="SVC_DIR=$dir MQTT_PORT=$port $SERVICES mqtt-stop"
    PMQ_START="SVC_DIR=$dir MQTT_PORT=$port MQ_PERSIST=$persist $SERVICES mqtt-start"
    bash -c "$PMQ_STOP" 2>/dev/null || true
    rm -rf "$dir"
    bash -c "$PMQ_START" || fail "private mosquitto on $port did not start"
    PMQ_URL=tcp://127.0.0.1:$port
    PMQ_DIR=$dir
    trap 'mq_cleanup' EXIT
}
mq_cleanup() {
    local pid
    for pid in ${MQ_BG_PIDS:-}; do kill "$pid" 2>/dev/null || true; done
    bash -c "$PMQ_STOP" 2>/dev/null || true
    rm -rf "$MQ_ROOT"
}

# mq_relay_cfg FILE URL TOPIC_PREFIX [RELAY_EXTRA] [MQTT_EXTRA]: a relay config
# publishing every event to TOPIC_PREFIX/<aggregate_type>.
mq_relay_cfg() {
    cat >"$1" <<CFG
database = { conninfo = "\${TEST_DSN}"; };
relay = { workers = 2; batch_size = 500; ordering = "aggregate"; poll_interval_ms = 200;
          drivers_dir = "\${OBX_DRIVERS}"; ${4:-max_attempts = 5;}
          backoff = { initial_ms = 100; max_ms = 1000; multiplier = 2.0; jitter = 0.2; }; };
outputs = ( { name = "mq"; driver = "mqtt";
              options = { url = "$2"; client_id_prefix = "relay-test-"; max_in_flight = 500;
                          content_type = "application/json"; ${5:-} }; } );
routes = ( { event_type = "*"; aggregate_type = "*"; output = "mq";
             destination = "$3/\${aggregate_type}"; } );
CFG
}

# msub_start NAME URL FILTER EXPECTED [ARGS...]: the subscriber in the
# background, subscribed before this returns; sets MSUB_PID, MSUB_OUT.
msub_start() {
    local name=$1 url=$2 filter=$3 n=$4
    shift 4
    mkdir -p "$MQ_ROOT/$name"
    MSUB_OUT=$MQ_ROOT/$name/msub.out
    rm -f "$MQ_ROOT/$name/ready"
    "${MSUB[@]}" -u "$url" -t "$filter" -n "$n" -i "msub-$name-$$" -r "$MQ_ROOT/$name/ready" "$@" >"$MSUB_OUT" &
    MSUB_PID=$!
    MQ_BG_PIDS="${MQ_BG_PIDS:-} $MSUB_PID"
    local i
    for i in $(seq 100); do [ -e "$MQ_ROOT/$name/ready" ] && return 0; sleep 0.1; done
    fail "subscriber $name not ready"
}

# msub_wait: waits for the subscriber, prints its summary, fails if it failed.
msub_wait() {
    local rc=0
    wait "$MSUB_PID" || rc=$?
    cat "$MSUB_OUT"
    [ "$rc" -eq 0 ] || fail "subscriber: not every event, or wrong properties or order (rc $rc)"
}

# msub_field NAME: a number from the subscriber's summary line.
msub_field() { sed -n "s/.* $1=\([0-9]*\).*/\1/p" "$MSUB_OUT"; }

# mq_acl NAME [PORT]: a private Mosquitto whose ACL lets anonymous clients
# publish to obx/ok/# only (PUBACK 0x87 Not authorized elsewhere). Sets
# ACL_URL; stopped with the test (mq_cleanup).
mq_acl() {
    local dir=$MQ_ROOT/$1 port=${2:-}
    [ -n "$port" ] || port=$(free_ports 1)
    rm -rf "$dir" && mkdir -p "$dir" && chmod 755 "$dir"
    printf 'topic readwrite obx/ok/#\n' > "$dir/acl"
    printf 'listener %s 127.0.0.1\nallow_anonymous true\nacl_file %s/acl\npersistence false\nlog_dest stderr\n' \
        "$port" "$dir" > "$dir/mosquitto.conf"
    chmod 644 "$dir/acl" "$dir/mosquitto.conf"
    mosquitto -c "$dir/mosquitto.conf" </dev/null >"$dir/mosquitto.log" 2>&1 &
    MQ_BG_PIDS="${MQ_BG_PIDS:-} $!"
    local i
    for i in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
    ACL_URL=tcp://127.0.0.1:$port
}

# mq_denied NAME [PORT]: a private Mosquitto that refuses anonymous clients
# (CONNACK 0x87 Not authorized). Sets DENIED_URL; stopped with the test.
mq_denied() {
    local dir=$MQ_ROOT/$1 port=${2:-}
    [ -n "$port" ] || port=$(free_ports 1)
    rm -rf "$dir" && mkdir -p "$dir" && chmod 755 "$dir"
    printf 'listener %s 127.0.0.1\nallow_anonymous false\npersistence false\nlog_dest stderr\n' \
        "$port" > "$dir/mosquitto.conf"
    chmod 644 "$dir/mosquitto.conf"
    mosquitto -c "$dir/mosquitto.conf" </dev/null >"$dir/mosquitto.log" 2>&1 &
    MQ_BG_PIDS="${MQ_BG_PIDS:-} $!"
    local i
    # a busy machine can take seconds: connecting before it listens is another scenario
    for i in $(seq 300); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || fail "mosquitto (no anonymous access) did not listen on $port"
    DENIED_URL=tcp://127.0.0.1:$port
}
