#!/bin/bash
# The chaos suite: a relay under load while faults land at random, checked
# from the outside.
#
#   tests/chaos/run.sh [--broker all|kafka|rabbitmq|mqtt] [--faults N] [--quick] [--parallel]
#                      [--source poll|cursor] [--shards] [--keep DIR] [--private]
#
# Per broker (one after the other, N/brokers faults each): a fresh database,
# chaos_load writing transactions from 4 connections, two relay processes
# (2 workers each, ordering aggregate, a 2 s lease) kept running by a
# supervisor that restarts one whenever it exits, a recording consumer, and
# faults.sh landing one fault every 0.5-3 s: relay SIGKILL, SIGSTOP past the
# lease, SIGTERM; PostgreSQL fast restart and crash; the broker down,
# restarted, killed, hung or its connections dropped. Then the load stops,
# the relays drain, and check.py compares what was committed and rolled back
# with what the consumer received: one summary line per broker. It restarts
# the services of $SVC_DIR (start them with tests/services/services.sh), or
# with --private (ctest's chaos_quick) a set of its own, started here on
# ports from free_ports and stopped at exit, so that other tests run beside it.
# --quick: 12 faults per broker (a few minutes in all). Default: 30 faults.
# --parallel: the brokers at the same time, each with its own database,
# relays and faults; only the first broker's run injects PostgreSQL faults,
# and the others are told of them (they hit every run).
# --source cursor: the relays read the outbox by the cursor source (one
# active, the other its standby) instead of claiming rows; with --shards,
# each relay reads a shard of two (relay.cursor), with no standby.
. "$(dirname "$0")/../lib.sh"

BROKERS=all FAULTS=30 QUICK= KEEP= PARALLEL= SOURCE=poll SHARDS= PRIVATE=
while [ $# -gt 0 ]; do
    case $1 in
    --broker) BROKERS=$2; shift ;;
    --faults) FAULTS=$2; shift ;;
    --quick) QUICK=1 FAULTS=36 ;;
    --keep) KEEP=$2; shift ;;
    --parallel) PARALLEL=1 ;;
    --source) SOURCE=$2; shift ;;
    --shards) SHARDS=1 ;;
    --private) PRIVATE=1 ;;
    *) sed -n '2,25p' "$0" >&2; exit 2 ;;
    esac
    shift
done
[ "$BROKERS" = all ] && BROKERS="kafka rabbitmq mqtt"
[ -z "$SHARDS" ] || [ "$SOURCE" = cursor ] || fail "--shards needs --source cursor"
for b in $BROKERS; do
    case $b in kafka | rabbitmq | mqtt) ;; *) fail "unknown broker '$b' (all|kafka|rabbitmq|mqtt)" ;; esac
done
set -- $BROKERS
NBROKERS=$#
PER_BROKER=$(((FAULTS + NBROKERS - 1) / NBROKERS))
CHAOS_BIN=${CHAOS_BIN:?CHAOS_BIN must name the directory with chaos_load and the consumers}
HERE=$(cd "$(dirname "$0")" && pwd)
if [ -n "$PRIVATE" ]; then
    # PostgreSQL, AMQP, distribution, 8 for rabbitmqctl, epmd, MQTT; the
    # Kafka mock takes ports of the kernel's choice
    PRIV_BASE=$(free_ports 13)
    SVC_DIR=$(mktemp -d /tmp/obx-chaos-svc.XXXXXX)
    chmod 755 "$SVC_DIR"
    PG_PORT=$PRIV_BASE AMQP_PORT=$((PRIV_BASE + 1)) RMQ_DIST_PORT=$((PRIV_BASE + 2))
    RMQ_CTL_PORT_MIN=$((PRIV_BASE + 3)) RMQ_EPMD_PORT=$((PRIV_BASE + 11)) MQTT_PORT=$((PRIV_BASE + 12))
    export SVC_DIR PG_PORT AMQP_PORT RMQ_DIST_PORT RMQ_CTL_PORT_MIN RMQ_EPMD_PORT MQTT_PORT
    trap '"$SERVICES" stop >/dev/null 2>&1 || true; rm -rf "$SVC_DIR"' EXIT
    "$SERVICES" start >"$SVC_DIR/start.log" 2>&1 || { cat "$SVC_DIR/start.log" >&2; fail "the private services did not start"; }
    # shellcheck disable=SC1091
    . "$SVC_DIR/env.sh"
fi
# the fault helpers need the ports of these services (env.sh does not export all)
export SVC_DIR AMQP_PORT MQTT_PORT RMQ_DIST_PORT RMQ_CTL_PORT_MIN RMQ_EPMD_PORT
[ -z "$PRIVATE" ] || export PG_PORT
RELAYS=2 LEASE_S=2
. "$HERE/faults.sh"

ROOT=${KEEP:-$(mktemp -d /tmp/obx-chaos.XXXXXX)}
mkdir -p "$ROOT"
BG=()
cleanup() {
    local p
    touch "$ROOT"/*/stop 2>/dev/null || true
    for p in "${BG[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "$ROOT"/*/relay.*.pid; do [ -s "$p" ] && kill -CONT "$(cat "$p")" 2>/dev/null && kill -TERM "$(cat "$p")" 2>/dev/null; done
    kill -CONT "$KMOCK_PID" 2>/dev/null || true
    [ -n "$KEEP" ] || rm -rf "$ROOT"
    if [ -n "$PRIVATE" ]; then "$SERVICES" stop >/dev/null 2>&1 || true; rm -rf "$SVC_DIR"; fi
}
trap cleanup EXIT

relay_cfg() { # BROKER RUN_ID: writes $WORK/relay.cfg, sets DEST
    local out
    case $1 in
    kafka) DEST=chaos.$2
        out="driver = \"kafka\"; options = { bootstrap_servers = \"\${KAFKA_BOOTSTRAP}\"; message_timeout_ms = 10000; };
             properties = ( [\"linger.ms\", \"5\"] );" ;;
    rabbitmq) DEST=chaos_$2
        out="driver = \"rabbitmq\"; options = { url = \"\${AMQP_URL}\"; declare_queue = \"$DEST\"; heartbeat_ms = 5000; connect_timeout_ms = 3000; };" ;;
    mqtt) DEST=chaos/$2/events
        out="driver = \"mqtt\"; options = { url = \"\${MQTT_URL}\"; client_id_prefix = \"chaos-$2-\"; max_in_flight = 200;
             publish_timeout_ms = 5000; reconnect_max_ms = 500; heartbeat_ms = 5000; };" ;;
    esac
    cat > "$WORK/relay.cfg" <<CFG
database = { conninfo = "\${TEST_DSN}"; };
relay = { source = "$SOURCE"; workers = 2; batch_size = 200; lease_seconds = $LEASE_S; poll_interval_ms = 200;
          ordering = "aggregate"; max_attempts = 1000; shutdown_timeout_ms = 2000;
          backoff = { initial_ms = 100; max_ms = 1000; multiplier = 2.0; jitter = 0.2; };
          drivers_dir = "\${OBX_DRIVERS}"; };
outputs = ( { name = "chaos"; $out } );
routes = ( { output = "chaos"; destination = "$DEST"; } );
CFG
    local k
    for ((k = 0; k < RELAYS; k++)); do # relay.K.cfg: relay slot K's (shard K of RELAYS with --shards)
        if [ -n "$SHARDS" ]; then
            sed "s/^relay = { /relay = { cursor = { shards = $RELAYS; shard = $k; }; /" "$WORK/relay.cfg" >"$WORK/relay.$k.cfg"
        else
            cp "$WORK/relay.cfg" "$WORK/relay.$k.cfg"
        fi
    done
}

# supervise SLOT: keeps one relay process running until $WORK/stop exists;
# records every exit status (a kill is 137, a clean SIGTERM exit 0)
supervise() {
    local pid rc
    while [ ! -e "$WORK/stop" ]; do
        "$OBX_BIN" run -c "$WORK/relay.$1.cfg" 2>> "$WORK/relay.$1.log" &
        pid=$!
        echo "$pid" > "$WORK/relay.$1.pid"
        rc=0; wait "$pid" || rc=$?
        echo "$rc" >> "$WORK/relay.$1.exits"
        [ -e "$WORK/stop" ] || sleep 0.2
    done
}

# kmock_start TOPIC:PARTITIONS: a private mock Kafka cluster; sets KM_PID, KM_BOOTSTRAP
kmock_start() {
    local i
    [ -x "$ROOT/kmock" ] || cc -O2 -Wall -o "$ROOT/kmock" "$OBX_SRC/tests/services/kmock.c" \
        $(pkg-config --cflags --libs rdkafka) -lpthread || fail "kmock build failed"
    "$ROOT/kmock" -f "$WORK/kmock.bootstrap" -t "$1" < /dev/null > "$WORK/kmock.out" 2> "$WORK/kmock.err" &
    KM_PID=$!
    for ((i = 0; i < 200; i++)); do [ -s "$WORK/kmock.bootstrap" ] && break; sleep 0.05; done
    [ -s "$WORK/kmock.bootstrap" ] || { cat "$WORK/kmock.err" >&2; fail "private kmock did not start"; }
    KM_BOOTSTRAP=$(cat "$WORK/kmock.bootstrap")
}

start_consumer() { # BROKER RUN_ID
    case $1 in
    kafka) # a private mock cluster holding the topic; its brokers are the ones faults.sh takes down
        kmock_start "$DEST:3"
        export KAFKA_BOOTSTRAP=$KM_BOOTSTRAP KMOCK_PID=$KM_PID
        BG+=("$KM_PID")
        "$CHAOS_BIN/chaos_kafka" -b "$KAFKA_BOOTSTRAP" -t "$DEST" -o "$WORK/history" 2> "$WORK/consumer.log" & ;;
    rabbitmq)
        "$CHAOS_BIN/chaos_amqp" -u "$AMQP_URL" -q "$DEST" -o "$WORK/history" 2> "$WORK/consumer.log" & ;;
    mqtt)
        ASAN_OPTIONS=detect_leaks=0 "$CHAOS_BIN/chaos_mqtt" -u "$MQTT_URL" -t "chaos/$2/#" -i "chaos-sub-$2" \
            -o "$WORK/history" -r "$WORK/ready" 2> "$WORK/consumer.log" &
        local i; for i in $(seq 100); do [ -e "$WORK/ready" ] && break; sleep 0.1; done
        [ -e "$WORK/ready" ] || fail "mqtt consumer not subscribed" ;;
    esac
    CONSUMER=$!
    BG+=("$CONSUMER")
}

# sqlr QUERY: sql, retried while PostgreSQL is down (another run's fault)
sqlr() { local i; for i in $(seq 60); do sql "$1" 2>/dev/null && return 0; sleep 1; done; sql "$1"; }
pending() {
    if [ "$SOURCE" = cursor ]; then # rows past their shard's cursor (row 0 unsharded)
        sql "SELECT count(*) FROM outbox o, outbox_cursor c WHERE c.shard = CASE WHEN '$SHARDS' = '' THEN 0
             ELSE $RELAYS + (hashtext(o.aggregate_id) & ($RELAYS - 1)) END
             AND ((o.cursor_xid, o.id) > (c.xid, c.id) OR o.cursor_xid IS NULL)"
    else sql "SELECT count(*) FROM outbox WHERE published_at IS NULL AND dead_at IS NULL"; fi
}
lines() { wc -l < "$WORK/history" 2>/dev/null || echo 0; }

# wait_until_settled: nothing pending and the consumer quiet for 3 s (at most 180 s)
wait_until_settled() {
    local t0=$SECONDS last=-1 quiet=0 n
    while [ $((SECONDS - t0)) -lt 180 ]; do
        n=$(lines)
        if [ "$(pending 2>/dev/null || echo 1)" = 0 ] && [ "$n" = "$last" ]; then
            quiet=$((quiet + 1)); [ "$quiet" -ge 3 ] && return 0
        else
            quiet=0
        fi
        last=$n
        sleep 1
    done
    note "not settled after 180 s: $(pending) pending"
}

# load_vs_table: the load generator's records against the table (a row exists
# if and only if its transaction committed): prints "A B C" = committed records
# without a row, rolled back records with a row, rows never recorded
load_vs_table() {
    awk -F'\t' '$1 == "C" { print $2 }' "$WORK"/load.* > "$WORK/committed.ids"
    awk -F'\t' '$1 == "R" { print $2 }' "$WORK"/load.* > "$WORK/rolled_back.ids"
    local i
    for i in $(seq 30); do
        psql -qAt -v ON_ERROR_STOP=1 -d "$TEST_DB" 2> /dev/null <<SQL && return 0
CREATE TEMP TABLE c (e uuid); CREATE TEMP TABLE r (e uuid);
\copy c FROM '$WORK/committed.ids'
\copy r FROM '$WORK/rolled_back.ids'
SELECT (SELECT count(*) FROM c WHERE NOT EXISTS (SELECT 1 FROM outbox o WHERE o.event_id = c.e))
       || ' ' || (SELECT count(*) FROM r WHERE EXISTS (SELECT 1 FROM outbox o WHERE o.event_id = r.e))
       || ' ' || (SELECT count(*) FROM outbox o WHERE NOT EXISTS (SELECT 1 FROM c WHERE c.e = o.event_id));
SQL
        sleep 1
    done
    echo "? ? ?"
}

run_broker() { # BROKER
    local broker=$1 id
    id=$(date +%s)$$
    WORK=$ROOT/$broker
    rm -rf "$WORK"; mkdir -p "$WORK"
    FAULT_LOG=$WORK/faults
    : > "$FAULT_LOG"
    if [ "$broker" = mqtt ] && ! grep -q '^persistence true' "$SVC_DIR/mosquitto/mosquitto.conf"; then
        note "restarting Mosquitto with persistence (queued messages must survive its restarts)"
        svc mqtt-stop; MQ_PERSIST=true svc mqtt-start
    fi
    fresh_db "chaos_${broker}_$id" # a name of its own: two runs may share the server
    relay_cfg "$broker" "$id"
    local slot
    for ((slot = 0; slot < RELAYS; slot++)); do
        "$OBX_BIN" init-db -c "$WORK/relay.$slot.cfg" > /dev/null || fail "init-db"
    done
    sql "CREATE TABLE chaos_seq (agg text PRIMARY KEY, seq bigint NOT NULL);
         INSERT INTO chaos_seq SELECT 'a' || g, 0 FROM generate_series(0, 199) g"
    start_consumer "$broker" "$id"
    local sup=()
    for ((slot = 0; slot < RELAYS; slot++)); do supervise "$slot" & sup+=($!); done
    BG+=("${sup[@]}")
    "$CHAOS_BIN/chaos_load" -d "$TEST_DSN" -o "$WORK/load" -c 4 -a 200 -p 30 2> "$WORK/load.log" &
    local load=$!
    BG+=("$load")
    note "$broker: load and 2 relays running; $PER_BROKER faults"
    local landed=0 t0=$SECONDS i
    touch "$ROOT/ready.$broker"
    if [ -n "$PARALLEL" ] && [ "${PG_FAULTS:-1}" = 1 ]; then # no PostgreSQL fault while the others set up
        for i in $(seq 120); do [ "$(ls "$ROOT"/ready.* | wc -l)" -ge "$NBROKERS" ] && break; sleep 0.5; done
    fi
    sleep 2
    while [ "$landed" -lt "$PER_BROKER" ] && [ ! -e "$ROOT/enough" ]; do # touch ROOT/enough to end early
        fault_inject "$broker" || continue
        landed=$((landed + 1))
        sleep "$((RANDOM % 3)).$((RANDOM % 10))"
        ((landed % 25)) || note "$broker: $landed faults, $(lines) deliveries, $(pending) pending"
    done
    kill -TERM "$load"; wait "$load" || note "load generator exit $?"
    note "$broker: $landed faults in $((SECONDS - t0)) s; draining"
    wait_until_settled
    touch "$WORK/stop"
    for ((slot = 0; slot < RELAYS; slot++)); do
        kill -TERM "$(cat "$WORK/relay.$slot.pid")" 2>/dev/null || true
    done
    sleep 2
    kill -TERM "$CONSUMER"; wait "$CONSUMER" || note "consumer exit $? ($(cat "$WORK/consumer.log"))"
    wait "${sup[@]}"
    [ "$broker" != kafka ] || { kill -TERM "$KM_PID"; wait "$KM_PID" || true; }
    local dead unexpected
    dead=$(sqlr "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")
    [ "$SOURCE" != cursor ] || dead=$(sqlr "SELECT count(*) FROM outbox_dead_letter")
    # expected: 0 (SIGTERM handled), 137 (SIGKILL), 143 (SIGTERM before the handler was set, just
    # after a restart), 1 (the database unreachable at start: a PostgreSQL fault)
    unexpected=$(cat "$WORK"/relay.*.exits | grep -cvxE '0|1|137|143' || true)
    python3 "$HERE/check.py" --name "$broker" --history "$WORK/history" --load "$WORK"/load.* \
        --faults "$FAULT_LOG" $([ "${PG_FAULTS:-1}" = 1 ] || echo --shared-faults "$PG_SHARED_LOG") | tee "$WORK/summary" || RESULT=1
    echo "  $broker relay: dead=$dead restarts=$(cat "$WORK"/relay.*.exits | wc -l)" \
         "exits: $(sort -n "$WORK"/relay.*.exits | uniq -c | awk '{printf "%s%s x%s", (NR > 1 ? ", " : ""), $1, $2}')" \
         "unexpected_exits=$unexpected" \
         "sanitizer_reports=$(cat "$WORK"/relay.*.log | grep -c 'Sanitizer\|runtime error' || true)" | tee -a "$WORK/summary"
    # a sanitizer's report is the whole diagnosis: show the first of each relay log where CI prints
    grep -h -m1 -A40 'ERROR: .*Sanitizer\|runtime error' "$WORK"/relay.*.log | head -60 | sed 's/^/    | /' || true
    local truth
    truth=$(load_vs_table)
    echo "  $broker load records vs the table: $truth (committed without a row, rolled back with a row," \
         "rows never recorded; all 0 or the check above is void)" | tee -a "$WORK/summary"
    [ "$dead" = 0 ] && [ "$unexpected" = 0 ] && [ "$truth" = "0 0 0" ] || RESULT=1
    BG=()
}

RESULT=0
if [ -z "$PARALLEL" ]; then
    for b in $BROKERS; do run_broker "$b"; done
else
    # CHAOS_PG_LOG: append PostgreSQL faults to another run's log too (two runs at once)
    PG_SHARED_LOG=${CHAOS_PG_LOG:-$ROOT/pg-faults}
    [ -n "${CHAOS_PG_LOG:-}" ] || : > "$PG_SHARED_LOG"
    runs=() first=${CHAOS_PG_FAULTS:-1} # CHAOS_PG_FAULTS=0: another run injects them
    for b in $BROKERS; do
        # each in a subshell: its own WORK, BG and cleanup; the first injects PostgreSQL faults
        (
            trap 'touch "$WORK/stop"; for p in "${BG[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT
            PG_FAULTS=$first
            [ "$first" = 1 ] || PG_FAULTS=0
            run_broker "$b"
            exit "$RESULT"
        ) > "$ROOT/$b.out" 2>&1 &
        runs+=($!) first=0
    done
    for p in "${runs[@]}"; do wait "$p" || RESULT=1; done
    for b in $BROKERS; do grep -v '^---' "$ROOT/$b.out" | grep -v Killed || true; done
fi
[ -z "$KEEP" ] || note "histories kept in $ROOT"
[ "$RESULT" = 0 ] || fail "chaos: see the lines above"
echo "PASS chaos ($FAULTS faults over: $BROKERS)"
