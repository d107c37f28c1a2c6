# Helpers for the MQTT tests; source after tests/lib.sh.
MQTT_TEST_BIN=${MQTT_TEST_BIN:?MQTT_TEST_BIN must name the directory with msub and mharness}
# msub is a test tool: leaks inside paho (a connect pending at destroy) are not ours
MSUB=(env ASAN_OPTIONS=detect_leaks=0 "$MQTT_TEST_BIN/msub")
MHARNESS=$MQTT_TEST_BIN/mharness
# The driver under test: a scenario the same for both MQTT drivers is one
# script, registered as mqtt_NAME and (with MQTT_DRIVER=mosquitto) mosq_NAME
# (tests/mosquitto/CMakeLists.txt). MQ_TEST is the test names' prefix.
MQTT_DRIVER=${MQTT_DRIVER:-mqtt}
case $MQTT_DRIVER in
mqtt) MQ_TEST=mqtt ;;
mosquitto) MQ_TEST=mosq ;;
*) fail "MQTT_DRIVER=$MQTT_DRIVER: mqtt or mosquitto" ;;
esac
MQTT_SO=${OBX_DRIVERS:-$(dirname "$OBX_BIN")/drivers}/$MQTT_DRIVER.so
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
# publishing every event to TOPIC_PREFIX/<aggregate_type> through MQTT_DRIVER.
mq_relay_cfg() {
    cat >"$1" <<CFG
database = { conninfo = "\${TEST_DSN}"; };
relay = { workers = 2; batch_size = 500; ordering = "aggregate"; poll_interval_ms = 200;
          drivers_dir = "\${OBX_DRIVERS}"; ${4:-max_attempts = 5;}
          backoff = { initial_ms = 100; max_ms = 1000; multiplier = 2.0; jitter = 0.2; }; };
outputs = ( { name = "mq"; driver = "$MQTT_DRIVER";
              options = { url = "$2"; client_id_prefix = "relay-test-"; max_in_flight = 500;
                          content_type = "application/json"; ${5:-} }; } );
routes = ( { event_type = "*"; aggregate_type = "*"; output = "mq";
             destination = "$3/\${aggregate_type}"; } );
CFG
}

# mq_relay_start CFG: `run --drain` in the background, its log in
# $PMQ_DIR/relay.log; sets RELAY_PID (mq_relay_wait waits for it).
mq_relay_start() {
    "$OBX_BIN" run -c "$1" --drain >"$PMQ_DIR/relay.log" 2>&1 &
    RELAY_PID=$!
    MQ_BG_PIDS="${MQ_BG_PIDS:-} $RELAY_PID"
}
mq_relay_wait() {
    local rc=0
    wait "$RELAY_PID" || rc=$?
    [ "$rc" -eq 0 ] || { tail -20 "$PMQ_DIR/relay.log"; fail "relay run --drain exited $rc"; }
}

# mq_ran_driver: the relay's log shows MQTT_DRIVER ran the output (the host
# names the driver on every line it logs for it).
mq_ran_driver() {
    grep -q "($MQTT_DRIVER)" "$PMQ_DIR/relay.log" ||
        { grep -m3 'closed ' "$PMQ_DIR/relay.log"; fail "the output did not run the $MQTT_DRIVER driver"; }
}

# mq_published: the rows published so far.
mq_published() { sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL"; }

# mq_stop_after N MIN: once MIN of the N rows are published (60 s at most),
# stops the private broker with the relay mid-stream; sets MQ_BEFORE, the
# rows published then.
mq_stop_after() {
    local _
    for _ in $(seq 600); do [ "$(mq_published)" -ge "$2" ] && break; sleep 0.1; done
    MQ_BEFORE=$(mq_published)
    [ "$MQ_BEFORE" -lt "$1" ] || fail "relay finished before the broker could be stopped"
    note "stopping mosquitto after $MQ_BEFORE of $1 published"
    bash -c "$PMQ_STOP" || fail "mosquitto stop"
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
