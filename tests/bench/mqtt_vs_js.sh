#!/bin/bash
# tests/bench/mqtt_vs_js.sh: outbox-relay's MQTT drivers against a
# straightforward relay on mqtt.js (tests/bench/mqtt_js/mqtt_js_relay.js:
# claim FOR UPDATE SKIP LOCKED in id order, publish QoS 1, await the PUBACKs,
# mark published_at, commit), and the memory driver with the same relay
# settings as the ceiling, on one private Mosquitto and the same outbox.
#
#   tests/bench/mqtt_vs_js.sh [--events N] [--rounds N] [--broker tuned|stock]
#                             [--setups "ORDERING AGGREGATES;..."] [--paho-lib DIR]
#                             [--who "memory mqtt mosquitto js paho mosq"]
#
# Setups (default "none 1000;aggregate 100"): EVENTS events (default 20,000,
# payload about 200 bytes) over AGGREGATES aggregates, topics
# outbox/${aggregate_type}/${aggregate_id}. The relay: 2 workers, batch 500,
# that ordering, mqtt options url and qos = 1 only. mqtt.js: batch 500, 2
# workers for ordering none, 1 for aggregate (one loop is what keeps an
# aggregate's order there). Per round the contenders run in turn, the order
# reversed every other round (memory, mqtt, js; js, mqtt, memory; ...), each on
# a fresh copy of one template database; wall time of the whole process
# (connects and exit included), its CPU (user+sys, /usr/bin/time), rows left
# unpublished (must be 0). mqtt is the paho driver (driver = "mqtt"),
# mosquitto the libmosquitto one (driver = "mosquitto"), with the same
# options. --who picks the contenders (default all of them).
# --paho-lib DIR adds a contender: the driver with
# the paho library in DIR first on the library path (e.g. one built with
# -DPAHO_HIGH_PERFORMANCE=ON). paho: the broker's limit through Debian's paho,
# no database (bench_broker mqtt: 2 clients, each keeping 64 publishes in
# flight, the same messages, properties and per-aggregate topics; no order
# kept): what any relay on this library and broker stays below. mosq: the
# broker's own client, mosquitto_pub -l (libmosquitto, one client, one topic,
# QoS 1, the same payloads and as many properties, fixed), no database.
# Broker: tuned = the test Mosquitto's settings
# (max_inflight_messages 1000, set_tcp_nodelay true, max_queued_messages 0),
# stock = Mosquitto's defaults (Receive Maximum 20, Nagle on).
# Writes $OUT/mqtt_vs_js.tsv and .md (OUT default tests/bench/results).
# Needs the shared services, a Release build (OBX_BUILD, default build-bench),
# node and npm (npm ci fills tests/bench/mqtt_js/node_modules when missing).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/bench_lib.sh"

EVENTS=20000 ROUNDS=3 BROKER=tuned SETUPS="none 1000;aggregate 100" PAHO_LIB=
WHO_ARG="memory mqtt mosquitto js paho mosq"
OUT=${OUT:-$HERE/results}
while [ $# -gt 0 ]; do
    case $1 in
        --events) EVENTS=$2; shift ;;
        --rounds) ROUNDS=$2; shift ;;
        --broker) BROKER=$2; shift ;;
        --setups) SETUPS=$2; shift ;;
        --paho-lib) PAHO_LIB=$2; shift ;;
        --who) WHO_ARG=$2; shift ;;
        --out) OUT=$2; shift ;;
        -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
        *) fail "unknown option $1 (see --help)" ;;
    esac
    shift
done
[ -x "$OBX_BIN" ] || fail "relay $OBX_BIN missing: build $OBX_BUILD (Release) or set OBX_BIN"
[ -x /usr/bin/time ] || fail "/usr/bin/time missing (package time)"
JS=$HERE/mqtt_js
if [[ " $WHO_ARG " == *" js "* ]]; then
    command -v node >/dev/null || fail "node missing"
    [ -d "$JS/node_modules/mqtt" ] || (cd "$JS" && npm ci --no-audit --no-fund >/dev/null) || fail "npm ci in $JS failed"
fi
WORK=$(mktemp -d /tmp/obx-mvj.XXXXXX) && chmod 777 "$WORK"
PFX=${TEST_DB_PREFIX:-}mvj_$$
PORT=$((20000 + $$ % 20000))
MQ_PID=
cleanup() {
    set +e
    [ -n "$MQ_PID" ] && kill -TERM "$MQ_PID" && wait "$MQ_PID"
    for db in $(psql -qAt -d postgres -c "SELECT datname FROM pg_database WHERE datname LIKE '${PFX}%'"); do
        psql -qAt -d postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null
    done
    rm -rf "$WORK"
}
trap cleanup EXIT

{
    printf 'listener %s 127.0.0.1\nallow_anonymous true\npersistence false\nlog_dest stderr\n' "$PORT"
    [ "$BROKER" = tuned ] && printf 'max_queued_messages 0\nmax_inflight_messages 1000\nset_tcp_nodelay true\nlog_type error\n'
} > "$WORK/mosquitto.conf"
mosquitto -c "$WORK/mosquitto.conf" </dev/null >"$WORK/mosquitto.log" 2>&1 &
MQ_PID=$!
for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.1; done

# cfg FILE DB DRIVER ORDERING OPTIONS
cfg() {
    cat > "$1" <<CFG
database = { conninfo = "host=$PGHOST port=$PGPORT user=$PGUSER dbname=$2"; };
relay = { workers = 2; batch_size = 500; ordering = "$4"; drivers_dir = "$OBX_DRIVERS"; };
log = { level = "info"; };
outputs = ( { name = "out"; driver = "$3"; options = { $5 }; } );
routes = ( { event_type = "*"; aggregate_type = "*"; output = "out";
             destination = "outbox/\${aggregate_type}/\${aggregate_id}"; } );
CFG
}
# template AGGREGATES: a filled outbox to copy for every run
template() {
    local db=${PFX}_tpl_$1
    if ! psql -qAt -d postgres -c "SELECT 1 FROM pg_database WHERE datname = '$db'" | grep -q 1; then
        psql -qAt -d postgres -c "CREATE DATABASE $db" >/dev/null
        cfg "$WORK/init.cfg" "$db" memory none ""
        "$OBX_BIN" init-db -c "$WORK/init.cfg" >/dev/null
        psql -qAt -d "$db" -c "SELECT count(outbox_enqueue('Order', 'agg-' || (g % $1), 'order.created',
            jsonb_build_object('n', g, 'pad', repeat('x', 180)))) FROM generate_series(1, $EVENTS) g" >/dev/null
        psql -qAt -d "$db" -c "VACUUM ANALYZE outbox" >/dev/null
    fi
    echo "$db"
}
# contend WHO ORDERING AGGREGATES: prints "wall_s cpu_s"
contend() {
    local db=${PFX}_run t0 t1 left
    psql -qAt -d postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" \
        -c "CREATE DATABASE $db TEMPLATE $(template "$3")" >/dev/null
    local mq="url = \"tcp://127.0.0.1:$PORT\"; qos = 1;"
    local cmd=("$OBX_BIN" run -c "$WORK/run.cfg" --drain) env=() in=/dev/null
    case $1 in
        memory) cfg "$WORK/run.cfg" "$db" memory "$2" "" ;;
        mqtt) cfg "$WORK/run.cfg" "$db" mqtt "$2" "$mq" ;;
        mosquitto) cfg "$WORK/run.cfg" "$db" mosquitto "$2" "$mq" ;;
        mqtt-paho) cfg "$WORK/run.cfg" "$db" mqtt "$2" "$mq"; env=(LD_LIBRARY_PATH="$PAHO_LIB") ;;
        paho) cmd=("$TOOLS/bench_broker" mqtt -u "tcp://127.0.0.1:$PORT" -t outbox -p -a "$3" -n "$EVENTS"
                   -w 2 -b "$EVENTS" -i 64) ;;
        mosq) cmd=(mosquitto_pub -h 127.0.0.1 -p "$PORT" -V mqttv5 -q 1 -t outbox/Order/agg-0 -l
                   -D publish content-type application/json)
            for k in event_id event_type aggregate_type aggregate_id created_at aggregate_seq; do
                cmd+=(-D publish user-property "$k" 00000000-0000-4000-8000-000000000000)
            done
            in=$WORK/lines ;;
        js) cmd=(node "$JS/mqtt_js_relay.js")
            env=(PGDATABASE="$db" MQTT_URL="mqtt://127.0.0.1:$PORT" BATCH=500 WORKERS="$([ "$2" = none ] && echo 2 || echo 1)") ;;
    esac
    t0=$(date +%s.%N)
    env "${env[@]}" /usr/bin/time -o "$WORK/time" -f '%U %S' "${cmd[@]}" <"$in" >"$WORK/out" 2>"$WORK/err" \
        || { cat "$WORK/err" >&2; fail "$1 exited with an error"; }
    t1=$(date +%s.%N)
    case $1 in
        paho) ;;  # exits 1 on any message not acknowledged
        mosq) ! grep -Ei 'warning|error' "$WORK/err" >&2 || fail "mosquitto_pub: a publish failed" ;;
        *) left=$(psql -qAt -d "$db" -c "SELECT count(*) FROM outbox WHERE published_at IS NULL")
           expect_eq "$1 $2 $3: rows left unpublished" "$left" 0 ;;
    esac
    if grep -E ' (warn|error) ' "$WORK/err" >&2; then note "$1: warnings above"; fi
    awk -v a="$t0" -v b="$t1" '{ printf "%.2f %.2f\n", b - a, $1 + $2 }' "$WORK/time"
}

[ -x "$TOOLS/bench_broker" ] || fail "$TOOLS/bench_broker missing: build $OBX_BUILD (target bench_broker)"
command -v mosquitto_pub >/dev/null || fail "mosquitto_pub missing (package mosquitto-clients)"
for ((i = 0; i < EVENTS; i++)); do printf '{"n": %d, "pad": "%0180d"}\n' "$i" 0; done >"$WORK/lines"
read -r -a WHO <<<"$WHO_ARG"
[ -n "$PAHO_LIB" ] && WHO+=(mqtt-paho)
mkdir -p "$OUT"
TSV=$OUT/mqtt_vs_js.tsv
printf 'round\tordering\taggregates\tevents\twho\twall_s\tevents_per_s\tcpu_s\tload1\n' > "$TSV"
IFS=';' read -r -a SETS <<<"$SETUPS"
for s in "${SETS[@]}"; do
    read -r o a <<<"$s"
    template "$a" >/dev/null
    for r in $(seq "$ROUNDS"); do
        order=("${WHO[@]}")
        if [ $((r % 2)) = 0 ]; then for ((i = ${#WHO[@]} - 1, j = 0; i >= 0; i--, j++)); do order[j]=${WHO[i]}; done; fi
        for w in "${order[@]}"; do
            read -r wall cpu <<<"$(contend "$w" "$o" "$a")"
            eps=$(awk -v n="$EVENTS" -v t="$wall" 'BEGIN { printf "%.0f", n / t }')
            load=$(cut -d' ' -f1 /proc/loadavg)
            note "round $r, $o, $a aggregates: $w $wall s, $eps ev/s, CPU $cpu s (load $load)"
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$o" "$a" "$EVENTS" "$w" "$wall" "$eps" "$cpu" "$load" >> "$TSV"
        done
    done
done

{
    echo "# MQTT drivers against mqtt.js and the memory driver ($(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$OBX_SRC" rev-parse --short HEAD 2>/dev/null || echo '?'))"
    echo
    echo "$EVENTS events per run, about 200-byte payloads, topics outbox/\${aggregate_type}/\${aggregate_id}; relay 2 workers, batch 500, mqtt and mosquitto options url and qos = 1 only; mqtt.js batch 500, 2 workers for ordering none, 1 for aggregate; paho = bench_broker, 2 clients of 64 in flight, no database; mosq = mosquitto_pub -l, one client, one topic, no database; Mosquitto $BROKER ($(dpkg-query -W -f='${Version}' mosquitto 2>/dev/null)); $ROUNDS rounds, contenders in turn, order reversed every other round. ev/s = events / wall time of the whole process; CPU = its user+sys seconds."
    echo
    echo '| round | ordering | aggregates | who | wall s | ev/s | CPU s | load |'
    echo '|---:|---|---:|---|---:|---:|---:|---:|'
    tail -n +2 "$TSV" | awk -F'\t' '{ printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $5, $6, $7, $8, $9 }'
    echo
    echo 'Ratios per round (same round, events/s): mqtt (paho driver) / memory, mqtt / js, mqtt / paho alone; paho alone and mosquitto_pub / memory; mosquitto (libmosquitto driver) / memory, / js, / mqtt (a contender not run: nan)'
    echo
    echo '| ordering | aggregates | round | mqtt / memory | mqtt / js | mqtt / paho | paho / memory | mosq / memory | mosquitto / memory | mosquitto / js | mosquitto / mqtt |'
    echo '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|'
    tail -n +2 "$TSV" | awk -F'\t' '{ k = $2 "|" $3 "|" $1; e[k, $5] = $7; if (!(k in seen)) { seen[k] = 1; keys[++n] = k } }
        END { for (i = 1; i <= n; i++) { k = keys[i]; split(k, p, "|");
              printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", p[1], p[2], p[3],
                     r(e[k, "mqtt"], e[k, "memory"]), r(e[k, "mqtt"], e[k, "js"]), r(e[k, "mqtt"], e[k, "paho"]),
                     r(e[k, "paho"], e[k, "memory"]), r(e[k, "mosq"], e[k, "memory"]),
                     r(e[k, "mosquitto"], e[k, "memory"]), r(e[k, "mosquitto"], e[k, "js"]),
                     r(e[k, "mosquitto"], e[k, "mqtt"]) } }
        function r(a, b) { return a == "" || b == "" ? "nan" : sprintf("%.2f", a / b) }'
} > "$OUT/mqtt_vs_js.md"
cat "$OUT/mqtt_vs_js.md"
