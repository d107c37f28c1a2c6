#!/bin/bash
# tests/bench/run.sh: outbox-relay benchmark with its baselines in the same run.
#
#   tests/bench/run.sh [--quick | --smoke] [--events N] [--drivers memory,file,kafka,rabbitmq,mqtt]
#                      [--workers 1,2,4] [--batches 100,500,1000] [--orderings aggregate,none]
#                      [--retentions mark,delete] [--rates 1000,5000] [--latency-seconds S]
#                      [--latency-ordering aggregate|none] [--no-latency] [--no-throughput]
#                      [--hot N] [--hot-drivers memory,kafka] [--pairs N] [--profile] [--out DIR]
#   tests/bench/run.sh --mqtt-defaults   (MQTT with its defaults, see mqtt_defaults.sh)
#   tests/bench/run.sh --processes 1,2,4 (poll mode, one outbox, the --workers total split over
#                      that many processes; see scale_poll.sh)
#   tests/bench/run.sh --wal-slots 1,2,4 (WAL mode sharded over that many slots by row filter,
#                      the walsenders' cost against pg_recvlogical; see scale_wal.sh)
#   tests/bench/run.sh --cursor-shards 1,2,4 (the cursor source in that many shards, one process
#                      each, against the database's read of the same rows; see scale_cursor.sh)
#
# Default: the full matrix, 200,000 events per run. --quick: ordering none, batch 500, mark,
# workers 1/2/4, 50,000 events, latency 10 s. --hot N: also N events of ONE aggregate (default
# 20,000; 0: none), ordering aggregate, 2 workers, beside the same drivers on the 1,000 aggregates
# (twice, alternated). --pairs N: after the matrix, N rounds per configuration of the database
# limit (the faster simplest form), the broker's, then the relay, a ratio per round (pairs.tsv).
# --smoke: 2,000 events, memory driver, one
# configuration, no latency (the ctest check that the tool works; nothing is asserted on timing).
#
# Needs the shared services (tests/services/services.sh start; env in $SVC_DIR/env.sh) and a
# build: OBX_BUILD (default <repo>/build-bench, a Release build) or OBX_BIN + OBX_DRIVERS +
# OBX_BENCH_TOOLS. Starts its own Mosquitto (quiet config) and Kafka mock; uses the shared
# PostgreSQL and RabbitMQ, each run in a private database / on a private queue.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OBX_SRC=${OBX_SRC:-$(cd "$HERE/../.." && pwd)}
OBX_BUILD=${OBX_BUILD:-$OBX_SRC/build-bench}
export OBX_BIN=${OBX_BIN:-$OBX_BUILD/outbox-relay}
export OBX_DRIVERS=${OBX_DRIVERS:-$(dirname "$OBX_BIN")/drivers}
TOOLS=${OBX_BENCH_TOOLS:-$(dirname "$OBX_BIN")/tests/bench}
export PGOPTIONS="-c client_min_messages=warning"
# shellcheck source=../lib.sh
. "$OBX_SRC/tests/lib.sh"

MODE_ARGS="$*"
EVENTS=200000 DRIVERS=memory,file,kafka,rabbitmq,mqtt WORKERS=1,2,4 BATCHES=100,500,1000
ORDERINGS=aggregate,none RETENTIONS=mark,delete RATES=1000,5000 LAT_SECONDS=30 LAT_ORDERING=aggregate
LATENCY=1 PROFILE=0 MODE=full OUT=$HERE/results HOT=20000 HOT_DRIVERS=memory,kafka HOT_WORKERS=2 PAIRS=0
while [ $# -gt 0 ]; do
    case $1 in
        --quick) MODE=quick EVENTS=50000 ORDERINGS=none BATCHES=500 RETENTIONS=mark LAT_SECONDS=10 ;;
        --smoke) MODE=smoke EVENTS=2000 DRIVERS=memory WORKERS=2 ORDERINGS=none BATCHES=500 RETENTIONS=mark LATENCY=0 HOT=0
                 OUT=$(mktemp -d /tmp/obx-bench-smoke.XXXXXX) ;;
        --events) EVENTS=$2; shift ;;
        --drivers) DRIVERS=$2; shift ;;
        --workers) WORKERS=$2; shift ;;
        --batches) BATCHES=$2; shift ;;
        --orderings) ORDERINGS=$2; shift ;;
        --retentions) RETENTIONS=$2; shift ;;
        --rates) RATES=$2; shift ;;
        --latency-seconds) LAT_SECONDS=$2; shift ;;
        --latency-ordering) LAT_ORDERING=$2; shift ;;
        --no-latency) LATENCY=0 ;;
        --no-throughput) WORKERS= ;;
        --profile) PROFILE=1 ;;
        --hot) HOT=$2; shift ;;
        --hot-drivers) HOT_DRIVERS=$2; shift ;;
        --pairs) PAIRS=$2; shift ;;
        --mqtt-defaults) MODE=mqtt-defaults DRIVERS=memory,mqtt ;;
        --processes) MODE=processes PROCESSES=$2 EVENTS=100000 DRIVERS=memory WORKERS=4 BATCHES=500
                     ORDERINGS=aggregate,none RETENTIONS=mark LATENCY=0 HOT=0; shift ;;
        --wal-slots) MODE=wal-slots SLOTS=$2 EVENTS=50000 DRIVERS=memory WORKERS=1 BATCHES=500
                     ORDERINGS=aggregate RETENTIONS=mark LATENCY=0 HOT=0; shift ;;
        --cursor-shards) MODE=cursor-shards SHARDS=$2 EVENTS=200000 DRIVERS=memory WORKERS=1 BATCHES=500
                     ORDERINGS=aggregate RETENTIONS=mark LATENCY=0 HOT=0; shift ;;
        --out) OUT=$2; shift ;;
        -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
        *) fail "unknown option $1 (see --help)" ;;
    esac
    shift
done
for t in bench_db bench_broker bench_producer bench_rusage; do
    [ -x "$TOOLS/$t" ] || fail "$TOOLS/$t missing: build with cmake --build $OBX_BUILD (target $t)"
done
[ -x "$OBX_BIN" ] || fail "relay $OBX_BIN missing"
command -v pgbench >/dev/null || fail "pgbench missing (package postgresql-client)"
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/obx-bench.XXXXXX)
TPL=obx_bench_tpl_$$ EMPTY=obx_bench_empty_$$ RUNDB=obx_bench_run_$$ HOTTPL=obx_bench_hot_$$
BENCH_SVC=/tmp/obx-bench-svc-$$
MQ_PORT=${BENCH_MQTT_PORT:-51983}
KM_PID= RELAY_PID=
IFS=, read -r -a DRV <<<"$DRIVERS"
IFS=, read -r -a WS <<<"$WORKERS"
IFS=, read -r -a BS <<<"$BATCHES"
IFS=, read -r -a OS <<<"$ORDERINGS"
IFS=, read -r -a RS <<<"$RETENTIONS"
IFS=, read -r -a RATE <<<"$RATES"
IFS=, read -r -a HDRV <<<"$HOT_DRIVERS"
has_driver() { [[ ",$DRIVERS," == *",$1,"* ]]; }
in_list() { [[ ",$2," == *",$1,"* ]]; }
if [ "$HOT" -gt 0 ]; then  # the hot-aggregate drivers need their brokers too
    for d in "${HDRV[@]}"; do has_driver "$d" || DRIVERS+=",$d"; done
fi

cleanup() {
    set +e
    [ -n "$RELAY_PID" ] && kill -TERM "$RELAY_PID" 2>/dev/null && wait "$RELAY_PID" 2>/dev/null
    [ -n "$KM_PID" ] && kill -TERM "$KM_PID" 2>/dev/null && wait "$KM_PID" 2>/dev/null
    [ -s "$BENCH_SVC/mosquitto/mosquitto.pid" ] && SVC_DIR=$BENCH_SVC MQTT_PORT=$MQ_PORT "$SERVICES" mqtt-stop
    has_driver rabbitmq && "$TOOLS/bench_broker" rabbitmq-purge -u "$AMQP_URL" -q obx.bench >/dev/null 2>&1
    for db in "$RUNDB" "$TPL" "$EMPTY" "$HOTTPL"; do
        psql -qAt -d postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1
    done
    rm -rf "$WORK" "$BENCH_SVC"
    [ "$MODE" = smoke ] && rm -rf "$OUT"
}
trap cleanup EXIT

# ---------------------------------------------------------------- private brokers
if has_driver mqtt; then   # quiet config (no per-packet log), unlimited queue, window 1000
    SVC_DIR=$BENCH_SVC MQTT_PORT=$MQ_PORT "$SERVICES" mqtt-start
    BENCH_MQTT_URL=tcp://127.0.0.1:$MQ_PORT
fi
if has_driver kafka; then  # a private mock cluster: the shared one is others' test data
    # shellcheck disable=SC2046
    cc -O2 -o "$WORK/kmock" "$OBX_SRC/tests/services/kmock.c" $(pkg-config --cflags --libs rdkafka) -lpthread
    "$WORK/kmock" -f "$WORK/kmock.bootstrap" -t obx.bench:3 </dev/null >/dev/null 2>"$WORK/kmock.err" &
    KM_PID=$!
    for _ in $(seq 100); do [ -s "$WORK/kmock.bootstrap" ] && break; sleep 0.05; done
    BENCH_KAFKA=$(cat "$WORK/kmock.bootstrap") || fail "kmock did not start"
fi

# ---------------------------------------------------------------- databases
dsn_of() { echo "host=$PGHOST port=$PGPORT user=$PGUSER dbname=$1"; }
psql_db() { psql -qAt -v ON_ERROR_STOP=1 -d "$1" -c "$2"; }
# fill_txns DB: EVENTS events over 1,000 aggregates (200-byte payloads) in transactions of 500
fill_txns() {
    local from
    for ((from = 1; from <= EVENTS; from += 500)); do
        echo "SELECT count(outbox_enqueue('Order', 'agg-' || (g % 1000), 'order.created',
              jsonb_build_object('n', g, 'pad', repeat('x', 180)))) FROM generate_series($from, $((from + 499))) g;"
    done | psql -qAt -v ON_ERROR_STOP=1 -d "$1" -f - >/dev/null
}

# ---------------------------------------------------------------- CPU accounting
# What each job costs the machine: CPU seconds per 100,000 events of every process it needs (the
# client, PostgreSQL, the broker), from /proc. PostgreSQL's count is the postmaster's own, the
# backends it reaped (cutime, cstime) and the live ones, so a pgbench or relay connection that ended
# is still counted.
TCK=$(getconf CLK_TCK) NCPU=$(nproc)
listener_pid() { ss -Hltnp "sport = :$1" 2>/dev/null | sed -n 's/.*pid=\([0-9]*\).*/\1/p' | head -1; }
tree_ticks() {  # PID: clock ticks of the process, of the children it reaped and of its live children
    local files=("/proc/$1/stat") c
    for c in $(pgrep -P "$1"); do files+=("/proc/$c/stat"); done
    # after the ")" closing the command name, utime stime cutime cstime are fields 12-15
    cat "${files[@]}" 2>/dev/null | sed 's/^.*) //' | awk '{ s += $12 + $13 + $14 + $15 } END { print s + 0 }'
}
PG_PID=$(listener_pid "$PGPORT")
declare -A SERVER_PID
has_driver kafka && SERVER_PID[kafka]=$KM_PID
has_driver rabbitmq && SERVER_PID[rabbitmq]=$(listener_pid "$(sed -E 's|.*:([0-9]+).*|\1|' <<<"$AMQP_URL")")
has_driver mqtt && SERVER_PID[mqtt]=$(listener_pid "$MQ_PORT")
CPU_OK=1
[ -n "$PG_PID" ] || { CPU_OK=0; note "PostgreSQL's process not found (ss -ltnp needs the right to see it): no CPU limit"; }
for d in "${!SERVER_PID[@]}"; do
    [ -n "${SERVER_PID[$d]}" ] || { CPU_OK=0; note "the $d broker's process not found: no CPU limit"; }
done
pg_ticks() { if [ "$CPU_OK" = 1 ]; then tree_ticks "$PG_PID"; else echo 0; fi; }
broker_ticks() { if [ "$CPU_OK" = 1 ] && [ -n "${SERVER_PID[$1]:-}" ]; then tree_ticks "${SERVER_PID[$1]}"; else echo 0; fi; }
# cpu_per_100k TICKS_BEFORE TICKS_AFTER RUSAGE_FILE EVENTS: the servers' ticks between the two
# readings plus the client's user+sys (bench_rusage's file), in CPU seconds per 100,000 events
cpu_per_100k() {
    local user sys
    read -r _ user sys _ < "$3"
    awk -v a="$1" -v z="$2" -v t="$TCK" -v u="$user" -v s="$sys" -v n="$4" \
        'BEGIN { printf "%.2f", ((z - a) / t + u + s) * 100000 / n }'
}

# ================================================================ MQTT with defaults (separate case)
if [ "$MODE" = mqtt-defaults ]; then
    # shellcheck source=mqtt_defaults.sh
    . "$HERE/mqtt_defaults.sh"
    exit 0
fi
# ================================================================ end of the MQTT case

# relay_cfg FILE DB DRIVER WORKERS BATCH ORDERING RETENTION
relay_cfg() {
    local opts dest
    case $3 in
        memory) opts=""; dest='bench.${aggregate_type}' ;;
        file) opts='path = "/dev/null";'; dest='bench.${aggregate_type}' ;;
        kafka) opts="bootstrap_servers = \"$BENCH_KAFKA\";"; dest=obx.bench ;;
        rabbitmq) opts="url = \"$AMQP_URL\"; declare_exchange = \"obx.bench\"; declare_exchange_type = \"topic\";
                  declare_queue = \"obx.bench\"; bind_routing_key = \"#\";"
                  dest='obx.bench/${aggregate_type}.${event_type}' ;;
        mqtt) opts="url = \"$BENCH_MQTT_URL\";"
              dest='obx/bench/${aggregate_type}/${event_type}' ;;
    esac
    cat > "$1" <<CFG
database = { conninfo = "$(dsn_of "$2")"; };
relay = { workers = $4; batch_size = $5; ordering = "$6"; retention = "$7"; max_attempts = 1000;
          drivers_dir = "$OBX_DRIVERS"; };
log = { level = "warn"; };
outputs = ( { name = "out"; driver = "$3"; options = { $opts }; } );
routes = ( { event_type = "*"; aggregate_type = "*"; output = "out"; destination = "$dest"; } );
CFG
}

note "template database: $EVENTS events (200-byte JSON payloads, 1,000 aggregates)"
for db in "$TPL" "$EMPTY"; do
    psql -qAt -d postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db" >/dev/null
    relay_cfg "$WORK/init.cfg" "$db" memory 1 500 none mark
    "$OBX_BIN" init-db -c "$WORK/init.cfg" >/dev/null
done
t0=$SECONDS
for ((from = 1; from <= EVENTS; from += 50000)); do
    to=$((from + 49999 > EVENTS ? EVENTS : from + 49999))
    psql_db "$TPL" "SELECT count(outbox_enqueue('Order', 'agg-' || (g % 1000), 'order.created',
                    jsonb_build_object('n', g, 'pad', repeat('x', 180)))) FROM generate_series($from, $to) g" >/dev/null
done
psql_db "$TPL" "VACUUM ANALYZE outbox" >/dev/null
if [ "$HOT" -gt 0 ]; then  # the same events, all of ONE aggregate
    psql -qAt -d postgres -c "DROP DATABASE IF EXISTS $HOTTPL WITH (FORCE)" -c "CREATE DATABASE $HOTTPL TEMPLATE $EMPTY" >/dev/null
    psql_db "$HOTTPL" "SELECT count(outbox_enqueue('Order', 'agg-hot', 'order.created',
                       jsonb_build_object('n', g, 'pad', repeat('x', 180)))) FROM generate_series(1, $HOT) g" >/dev/null
    psql_db "$HOTTPL" "VACUUM ANALYZE outbox" >/dev/null
fi
psql_db "$EMPTY" "VACUUM ANALYZE outbox" >/dev/null
PAYLOAD_BYTES=$(psql_db "$TPL" "SELECT round(avg(length(payload::text))) FROM outbox")
note "filled in $((SECONDS - t0)) s; payload $PAYLOAD_BYTES bytes as text"
fresh_run_db() {  # a copy of the filled template (or of the empty one with "empty")
    psql -qAt -d postgres -c "DROP DATABASE IF EXISTS $RUNDB WITH (FORCE)" \
        -c "CREATE DATABASE $RUNDB TEMPLATE ${1:-$TPL}" >/dev/null
}
rmq_purge() { has_driver rabbitmq && "$TOOLS/bench_broker" rabbitmq-purge -u "$AMQP_URL" -q obx.bench >/dev/null || true; }

# ---------------------------------------------------------------- baselines
declare -A DBL DBP DBR BRK BRKC DBLCOST DBPCOST BRKCOST CPUL
# The database limit: the simplest correct claim+mark, one statement per batch (claim the oldest
# pending rows, skip the locked ones, mark them and return them), run by pgbench. Retention delete:
# the same claim, deleting.
# With a third argument "pending", the claim also states the rest of the pending index's predicate
# (dead_at IS NULL AND available_at < 'infinity') so that it can use that partial index: as written,
# no index matches "published_at IS NULL" alone, and the primary key scan passes every row published
# before the first pending one, a cost that grows as the table drains (see --profile).
simplest_sql() {  # BATCH RETENTION [pending]: the statement on stdout
    local verb="UPDATE outbox o SET published_at = now(), attempts = o.attempts + 1 FROM c WHERE o.id = c.id"
    [ "$2" = delete ] && verb="DELETE FROM outbox o USING c WHERE o.id = c.id"
    local pred="published_at IS NULL"
    [ "${3:-}" = pending ] && pred="published_at IS NULL AND dead_at IS NULL AND available_at < 'infinity'"
    cat <<SQL
WITH c AS (SELECT id FROM outbox WHERE $pred ORDER BY id FOR UPDATE SKIP LOCKED LIMIT $1)
$verb
RETURNING o.id, o.event_id, o.aggregate_type, o.aggregate_id, o.event_type, o.payload, o.headers;
SQL
}
# pgbench_eps EVENTS < pgbench's output: events/s (events x transactions/s / transactions: tps x
# batch when all are full)
pgbench_eps() { awk -v n="$1" '/^tps = / { t = $3 } /actually processed/ { x = $NF } END { printf "%.0f", n * t / x }'; }
# simplest_limit RETENTION BATCH CLIENTS [TEMPLATE EVENTS [pending]]: events/s on a fresh copy of the
# template, as many transactions as drain it (events x transactions/s / transactions: tps x batch when
# all are full); its CPU cost (PostgreSQL + pgbench, s/100k) into $WORK/cost.db
simplest_limit() {
    local r=$1 b=$2 c=$3 tpl=${4:-$TPL} n=${5:-$EVENTS} tx out left
    simplest_sql "$b" "$r" "${6:-}" > "$WORK/simplest.sql"
    fresh_run_db "$tpl"
    tx=$(((n + b * c - 1) / (b * c)))
    local t0 t1
    t0=$(pg_ticks)
    out=$("$TOOLS/bench_rusage" "$WORK/pgbench.ru" pgbench -n -M prepared -f "$WORK/simplest.sql" -c "$c" -j "$c" -t "$tx" "$RUNDB" 2>&1) \
        || { echo "$out" >&2; fail "pgbench (simplest claim+mark) failed"; }
    t1=$(pg_ticks)
    left=$(psql_db "$RUNDB" "SELECT count(*) FROM outbox WHERE published_at IS NULL")
    [ "$left" = 0 ] || fail "simplest claim+mark left $left of $n rows ($c clients x $tx transactions)"
    cpu_per_100k "$t0" "$t1" "$WORK/pgbench.ru" "$n" > "$WORK/cost.db"  # PostgreSQL + pgbench
    pgbench_eps "$n" <<<"$out"
}
# relay_sql_alone ORDERING RETENTION BATCH WORKERS [TEMPLATE]: bench_db, the relay's own claim and mark
relay_sql_alone() {
    fresh_run_db "${5:-$TPL}"
    relay_cfg "$WORK/db.cfg" "$RUNDB" memory "$4" "$3" "$1" "$2"
    "$TOOLS/bench_db" -c "$WORK/db.cfg" | awk '{print $3}'
}
# ================================================================ scaling out (separate cases)
if [ "$MODE" = processes ]; then
    # shellcheck source=scale_poll.sh
    . "$HERE/scale_poll.sh"
    exit 0
fi
if [ "$MODE" = wal-slots ]; then
    # shellcheck source=scale_wal.sh
    . "$HERE/scale_wal.sh"
    exit 0
fi
if [ "$MODE" = cursor-shards ]; then
    # shellcheck source=scale_cursor.sh
    . "$HERE/scale_cursor.sh"
    exit 0
fi
# ================================================================ end of the scaling-out cases
note "database limit: the simplest claim+mark (pgbench), beside the relay's own SQL alone (bench_db), alternated"
for r in "${RS[@]}"; do for b in "${BS[@]}"; do for w in "${WS[@]}"; do
    DBL[$r,$b,$w]=$(simplest_limit "$r" "$b" "$w")
    DBLCOST[$r,$b,$w]=$(cat "$WORK/cost.db")
    for o in "${OS[@]}"; do
        DBR[$o,$r,$b,$w]=$(relay_sql_alone "$o" "$r" "$b" "$w")
        note "  db $r b=$b w=$w: simplest claim+mark ${DBL[$r,$b,$w]} ev/s; relay's SQL alone ($o) ${DBR[$o,$r,$b,$w]} ev/s"
    done
    DBP[$r,$b,$w]=$(simplest_limit "$r" "$b" "$w" "$TPL" "$EVENTS" pending)
    DBPCOST[$r,$b,$w]=$(cat "$WORK/cost.db")
    note "  db $r b=$b w=$w: simplest claim+mark with the pending index's predicate ${DBP[$r,$b,$w]} ev/s"
    note "  db $r b=$b w=$w: CPU s/100k, PostgreSQL + pgbench: as written ${DBLCOST[$r,$b,$w]}, with the predicate ${DBPCOST[$r,$b,$w]}"
done; done; done
HB=500 HW=$HOT_WORKERS
if [ "$HOT" -gt 0 ]; then
    [ -n "${DBL[mark,$HB,$HW]:-}" ] || DBL[mark,$HB,$HW]=$(simplest_limit mark "$HB" "$HW")
    [ -n "${DBR[aggregate,mark,$HB,$HW]:-}" ] || DBR[aggregate,mark,$HB,$HW]=$(relay_sql_alone aggregate mark "$HB" "$HW")
    HOT_DBL=$(simplest_limit mark "$HB" "$HW" "$HOTTPL" "$HOT")
    HOT_DBR=$(relay_sql_alone aggregate mark "$HB" "$HW" "$HOTTPL")
    note "  db, ONE aggregate of $HOT events, b=$HB w=$HW: simplest $HOT_DBL ev/s; relay's SQL alone (aggregate) $HOT_DBR ev/s"
fi
# bench_broker's URL and topic for driver $1, or nothing for a driver without a broker
broker_target() {
    case $1 in kafka) echo "$BENCH_KAFKA obx.bench" ;; rabbitmq) echo "$AMQP_URL obx.bench" ;;
               mqtt) echo "$BENCH_MQTT_URL obx/bench" ;; esac
}
# broker_rate DRIVER CLIENTS BATCH: msg/s of bench_broker on all the events (the queue purged after);
# its CPU cost (bench_broker + the broker, s/100k) into $WORK/cost.broker
broker_rate() {
    local u t x t0 t1
    read -r u t <<<"$(broker_target "$1")"
    t0=$(broker_ticks "$1")
    x=$("$TOOLS/bench_rusage" "$WORK/broker.ru" "$TOOLS/bench_broker" "$1" -u "$u" -t "$t" -n "$EVENTS" -w "$2" -b "$3" | awk '{print $3}') || return 1
    t1=$(broker_ticks "$1")
    cpu_per_100k "$t0" "$t1" "$WORK/broker.ru" "$EVENTS" > "$WORK/cost.broker"
    rmq_purge
    echo "$x"
}
# faster_form RETENTION BATCH WORKERS: "pending" when the simplest statement with the pending
# predicate was the faster one measured above, else nothing (as written)
faster_form() { if [ "${DBP[$1,$2,$3]:-0}" -gt "${DBL[$1,$2,$3]:-0}" ]; then echo pending; fi; }
for d in "${DRV[@]}"; do
    read -r u t <<<"$(broker_target "$d")"
    [ -n "$u" ] || continue
    for b in "${BS[@]}"; do for w in "${WS[@]}"; do
        # the best connection count: one client, as many as the relay's workers, or as its lanes
        BRK[$d,$b,$w]=0
        for c in $(printf '%s\n' 1 "$w" $((2 * w)) | sort -nu); do
            x=$(broker_rate "$d" "$c" "$b")
            note "  broker $d b=$b clients=$c: $x msg/s"
            if [ "$x" -gt "${BRK[$d,$b,$w]}" ]; then
                BRK[$d,$b,$w]=$x BRKC[$d,$b,$w]=$c BRKCOST[$d,$b,$w]=$(cat "$WORK/cost.broker")
            fi
        done
    done; done
done
# The CPU limit (DB_COST [BROKER_COST], CPU s/100k): events/s that this machine's cores allow when
# every event costs what the simplest claim+mark and the broker's own client spend on it together.
# A relay must do both jobs on the same cores, which each limit above had to itself; where both
# tools keep the cores busy (the database limit does), no relay can pass it without spending less
# per event than they do. "-" when the processes could not be read.
cpu_limit() {
    [ "$CPU_OK" = 1 ] || { echo -; return; }
    awk -v n="$NCPU" -v a="$1" -v b="${2:-0}" 'BEGIN { printf "%.0f", n * 100000 / (a + b) }'
}
# the cost of the faster simplest form
faster_cost() { if [ -n "$(faster_form "$1" "$2" "$3")" ]; then echo "${DBPCOST[$1,$2,$3]}"; else echo "${DBLCOST[$1,$2,$3]}"; fi; }
for d in "${DRV[@]}"; do for r in "${RS[@]}"; do for b in "${BS[@]}"; do for w in "${WS[@]}"; do
    CPUL[$d,$r,$b,$w]=$(cpu_limit "$(faster_cost "$r" "$b" "$w")" "${BRKCOST[$d,$b,$w]:-}")
    note "  CPU limit $d $r b=$b w=$w: ${CPUL[$d,$r,$b,$w]} ev/s (database $(faster_cost "$r" "$b" "$w") + broker ${BRKCOST[$d,$b,$w]:-0} CPU s/100k on $NCPU cores)"
done; done; done; done

# ---------------------------------------------------------------- relay throughput
RESULTS=$OUT/results.tsv
printf 'driver\tordering\tretention\tworkers\tbatch\tevents\taggregates\trelay_eps\tdb_limit\tdb_relaysql\tdb_simplest_pending\tbroker_limit\tratio\tcpu_s_per_100k\tpeak_rss_mb\twall_s\tmethod\tcpu_limit\trelay_over_cpu_limit\tmachine_cpu_s_per_100k\n' > "$RESULTS"
declare -A STARTUP
startup_overhead() {  # wall time of run --drain on an empty outbox (connect, prepare, drain check)
    local d=$1 w=$2 b=$3 o=$4 key=$1,$2
    if [ -z "${STARTUP[$key]:-}" ]; then
        fresh_run_db "$EMPTY"
        relay_cfg "$WORK/empty.cfg" "$RUNDB" "$d" "$w" "$b" "$o" delete
        "$TOOLS/bench_rusage" "$WORK/empty.ru" "$OBX_BIN" run -c "$WORK/empty.cfg" --drain >/dev/null 2>&1 || true
        STARTUP[$key]=$(awk '{print $1}' "$WORK/empty.ru")
    fi
    echo "${STARTUP[$key]}"
}
# relay_run DRIVER ORDERING RETENTION BATCH WORKERS TEMPLATE EVENTS AGGREGATES DB_LIMIT DB_RELAYSQL
# [DB_PENDING [CPU_LIMIT]]: one drain of a fresh copy of the template; appends a row to results.tsv
# and sets EPS. The ratio is against the lower of the broker's limit and the faster simplest
# claim+mark; the machine's CPU (relay + PostgreSQL + broker) per 100,000 events is beside it.
relay_run() {
    local d=$1 o=$2 r=$3 b=$4 w=$5 tpl=$6 n=$7 aggs=$8 db=$9 dbr=${10} dbp=${11:-} cpul=${12:--} tag t0 t1
    tag="$d/$o/$r/b$b/w$w/$aggs-aggregates"
    fresh_run_db "$tpl"
    relay_cfg "$WORK/run.cfg" "$RUNDB" "$d" "$w" "$b" "$o" "$r"
    t0=$(($(pg_ticks) + $(broker_ticks "$d")))
    "$TOOLS/bench_rusage" "$WORK/run.ru" "$OBX_BIN" run -c "$WORK/run.cfg" --drain 2>"$WORK/relay.err" >/dev/null \
        || { cat "$WORK/relay.err" >&2; fail "relay $tag exited with an error"; }
    t1=$(($(pg_ticks) + $(broker_ticks "$d")))
    rmq_purge
    local wall user sys rss left eps method su brk lim ratio cpu
    read -r wall user sys rss _ < "$WORK/run.ru"
    left=$(psql_db "$RUNDB" "SELECT count(*) FILTER (WHERE published_at IS NULL), count(*) FROM outbox")
    if [ "$r" = mark ]; then
        expect_eq "$tag rows left unpublished, rows" "$left" "0|$n"
        # events per second from the first mark to the last: the batches marked at the first
        # mark's time did their work before it, so they are not counted (intervals, not points)
        eps=$(psql_db "$RUNDB" "WITH s AS (SELECT min(published_at) a, max(published_at) z, count(*) n FROM outbox)
              SELECT round((n - (SELECT count(*) FROM outbox WHERE published_at = a))
                     / greatest(extract(epoch FROM z - a), 0.001)) FROM s")
        method=published_at
    else
        expect_eq "$tag rows left" "$left" "0|0"
        su=$(startup_overhead "$d" "$w" "$b" "$o")
        eps=$(awk -v n="$n" -v w="$wall" -v s="$su" 'BEGIN { t = w - s; if (t < 0.001) t = 0.001; printf "%.0f", n / t }')
        method="wall-${su}s"
    fi
    brk=${BRK[$d,$b,$w]:-}
    lim=$(awk -v a="${db:-0}" -v p="${dbp:-0}" -v b="${brk:-0}" 'BEGIN { if (p > a) a = p
          l = (b > 0 && (a <= 0 || b < a)) ? b : a; print l }')
    ratio=$(awk -v e="$eps" -v l="$lim" 'BEGIN { printf "%.2f", (l > 0) ? e / l : 0 }')
    local over_cpu=- machine=-
    [ "$cpul" != - ] && over_cpu=$(awk -v e="$eps" -v l="$cpul" 'BEGIN { printf "%.2f", (l > 0) ? e / l : 0 }')
    [ "$CPU_OK" = 1 ] && machine=$(cpu_per_100k "$t0" "$t1" "$WORK/run.ru" "$n")
    cpu=$(awk -v u="$user" -v s="$sys" -v n="$n" 'BEGIN { printf "%.2f", (u + s) * 100000 / n }')
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%s\t%s\t%s\t%s\t%s\n' "$d" "$o" "$r" "$w" "$b" "$n" "$aggs" "$eps" \
        "${db:--}" "${dbr:--}" "${dbp:--}" "${brk:--}" "$ratio" "$cpu" "$(awk -v r="$rss" 'BEGIN { print r / 1024 }')" "$wall" "$method" \
        "$cpul" "$over_cpu" "$machine" >> "$RESULTS"
    note "  relay $tag: $eps ev/s, ratio $ratio, against the CPU limit $over_cpu, cpu ${cpu}s/100k (machine $machine), rss $((rss / 1024)) MB"
    EPS=$eps
}
for d in "${DRV[@]}"; do for o in "${OS[@]}"; do for r in "${RS[@]}"; do for b in "${BS[@]}"; do for w in "${WS[@]}"; do
    relay_run "$d" "$o" "$r" "$b" "$w" "$TPL" "$EVENTS" 1000 "${DBL[$r,$b,$w]}" "${DBR[$o,$r,$b,$w]}" "${DBP[$r,$b,$w]}" \
        "${CPUL[$d,$r,$b,$w]}"
done; done; done; done; done

# ---------------------------------------------------------------- paired rounds
# Each relay drain right after its database limit (and its broker's, at the best client count
# found above), N times: a machine whose speed drifts by a quarter within minutes moves all of a
# round alike. The ratio is against the lower of the round's limits.
PAIRRES=$OUT/pairs.tsv
printf 'driver\tordering\tretention\tworkers\tbatch\tround\tdb_limit\tbroker_limit\trelay_eps\tratio\tcpu_limit\trelay_over_cpu_limit\n' > "$PAIRRES"
if [ "$PAIRS" -gt 0 ]; then
    note "paired rounds: $PAIRS per configuration, the simplest claim+mark then the relay"
    MAIN_RESULTS=$RESULTS RESULTS=$WORK/pair_results.tsv
    for d in "${DRV[@]}"; do for o in "${OS[@]}"; do for r in "${RS[@]}"; do for b in "${BS[@]}"; do for w in "${WS[@]}"; do
        for ((round = 1; round <= PAIRS; round++)); do
            lim=$(simplest_limit "$r" "$b" "$w" "$TPL" "$EVENTS" "$(faster_form "$r" "$b" "$w")")
            dbcost=$(cat "$WORK/cost.db")
            brk=0 brkcost=  # the broker's limit too, at its best client count
            if [ -n "$(broker_target "$d")" ]; then
                brk=$(broker_rate "$d" "${BRKC[$d,$b,$w]}" "$b")
                brkcost=$(cat "$WORK/cost.broker")
            fi
            cpul=$(cpu_limit "$dbcost" "$brkcost")
            relay_run "$d" "$o" "$r" "$b" "$w" "$TPL" "$EVENTS" 1000 "$lim" "${DBR[$o,$r,$b,$w]}" "" "$cpul"
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$d" "$o" "$r" "$w" "$b" "$round" "$lim" "$brk" "$EPS" \
                "$(awk -v e="$EPS" -v a="$lim" -v k="$brk" 'BEGIN { if (k > 0 && k < a) a = k; printf "%.2f", e / a }')" \
                "$cpul" "$(tail -1 "$RESULTS" | cut -f19)" >> "$PAIRRES"
        done
    done; done; done; done; done
    RESULTS=$MAIN_RESULTS
fi

# ---------------------------------------------------------------- hot aggregate
# ONE aggregate against the usual 1,000, ordering aggregate: in-order drivers claim runs, so a
# hot aggregate should drain at no less than a quarter of the rate of many. Twice, alternated.
HOTRES=$OUT/hot.tsv
printf 'driver\tworkers\tbatch\trepeat\tmany_eps\thot_eps\thot_over_many\n' > "$HOTRES"
if [ "$HOT" -gt 0 ]; then
    note "hot aggregate: $HOT events of one aggregate vs $EVENTS over 1,000 (ordering aggregate, b=$HB w=$HW)"
    for rep in 1 2; do for d in "${HDRV[@]}"; do
        relay_run "$d" aggregate mark "$HB" "$HW" "$TPL" "$EVENTS" 1000 "${DBL[mark,$HB,$HW]}" "${DBR[aggregate,mark,$HB,$HW]}" "${DBP[mark,$HB,$HW]:-}"
        many=$EPS
        relay_run "$d" aggregate mark "$HB" "$HW" "$HOTTPL" "$HOT" 1 "$HOT_DBL" "$HOT_DBR"
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$d" "$HW" "$HB" "$rep" "$many" "$EPS" \
            "$(awk -v h="$EPS" -v m="$many" 'BEGIN { printf "%.2f", (m > 0) ? h / m : 0 }')" >> "$HOTRES"
    done; done
fi

# ---------------------------------------------------------------- latency
LATRES=$OUT/latency.tsv
printf 'driver\tordering\tworkers\tbatch\trate\tevents\tleft\tp50_ms\tp95_ms\tp99_ms\tmax_ms\tcreated_p99_ms\tcpu_s_per_100k\tpeak_rss_mb\tbroker_p50_ms\tbroker_p99_ms\n' > "$LATRES"
if [ "$LATENCY" = 1 ]; then
    for d in "${DRV[@]}"; do for rate in "${RATE[@]}"; do
        fresh_run_db "$EMPTY"
        relay_cfg "$WORK/lat.cfg" "$RUNDB" "$d" 2 500 "$LAT_ORDERING" mark
        "$TOOLS/bench_rusage" "$WORK/lat.ru" "$OBX_BIN" run -c "$WORK/lat.cfg" 2>"$WORK/lat.err" >/dev/null &
        RELAY_PID=$!
        sleep 1.5   # workers connected and listening
        "$TOOLS/bench_producer" -d "$(dsn_of "$RUNDB")" -r "$rate" -s "$LAT_SECONDS" -o "$WORK/commits.tsv" >"$WORK/prod.out" \
            || note "  producer fell behind the requested rate: $(cat "$WORK/prod.out")"
        for _ in $(seq 300); do
            [ "$(psql_db "$RUNDB" "SELECT count(*) FROM outbox WHERE published_at IS NULL")" = 0 ] && break; sleep 0.1
        done
        kill -TERM "$RELAY_PID"; wait "$RELAY_PID" || { cat "$WORK/lat.err" >&2; fail "relay (latency, $d) failed"; }
        RELAY_PID=
        rmq_purge
        read -r _ user sys rss _ < "$WORK/lat.ru"
        n=$(wc -l < "$WORK/commits.tsv")
        psql -qAt -v ON_ERROR_STOP=1 -d "$RUNDB" \
            -c "CREATE TABLE lat (event_id uuid PRIMARY KEY, commit_us bigint)" \
            -c "\\copy lat FROM '$WORK/commits.tsv'" >/dev/null
        stats=$(psql_db "$RUNDB" "WITH l AS (SELECT (extract(epoch FROM o.published_at) * 1e6 - lat.commit_us) / 1000.0 ms,
                   extract(epoch FROM o.published_at - o.created_at) * 1000.0 cms
              FROM lat JOIN outbox o USING (event_id))
            SELECT count(*) FILTER (WHERE ms IS NULL) || '|' || count(*) || '|' || count(*) || '|' ||
                   round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 1) || '|' ||
                   round(percentile_cont(0.95) WITHIN GROUP (ORDER BY ms)::numeric, 1) || '|' ||
                   round(percentile_cont(0.99) WITHIN GROUP (ORDER BY ms)::numeric, 1) || '|' ||
                   round(max(ms)::numeric, 1) || '|' ||
                   round(percentile_cont(0.99) WITHIN GROUP (ORDER BY cms)::numeric, 1) FROM l")
        IFS='|' read -r unpub cnt _ p50 p95 p99 pmax cp99 <<<"$stats"
        expect_eq "latency $d/$rate: events joined" "$cnt" "$n"
        # a relay that did not keep up is a result, not a tool failure: the
        # percentiles then cover the published rows and `left` says how many were not
        [ "$unpub" = 0 ] || note "  latency $d at $rate/s: $unpub events still unpublished 30 s after the producer stopped"
        cpu=$(awk -v u="$user" -v s="$sys" -v n="$n" 'BEGIN { printf "%.2f", (u + s) * 100000 / n }')
        # the broker's own latency at the same rate, same client library, no database
        bp50=- bp99=-
        read -r u t <<<"$(broker_target "$d")"
        if [ -n "$u" ]; then
            read -r bp50 _ bp99 _ < <("$TOOLS/bench_broker" "$d" -u "$u" -t "$t" -r "$rate" -s "$LAT_SECONDS")
            rmq_purge
        fi
        printf '%s\t%s\t2\t500\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%s\t%s\n' "$d" "$LAT_ORDERING" "$rate" "$n" "$unpub" "$p50" "$p95" "$p99" \
            "$pmax" "$cp99" "$cpu" "$(awk -v r="$rss" 'BEGIN { print r / 1024 }')" "$bp50" "$bp99" >> "$LATRES"
        note "  latency $d at $rate/s: p50 $p50 p95 $p95 p99 $p99 max $pmax ms (broker alone: p50 $bp50 p99 $bp99 ms)"
    done; done
fi

# ---------------------------------------------------------------- profile
if [ "$PROFILE" = 1 ]; then
    # shellcheck source=profile.sh
    . "$HERE/profile.sh"
fi

# ---------------------------------------------------------------- table, plot, report
TABLE=$WORK/table.md
{
    echo '| driver | ordering | retention | workers | batch | events | aggregates | relay ev/s | db limit: simplest claim+mark | relay'"'"'s SQL alone | simplest + pending predicate | broker limit | relay/min(limits) | CPU limit | relay/CPU limit | relay CPU s/100k | machine CPU s/100k | peak RSS MB |'
    echo '|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|'
    tail -n +2 "$RESULTS" | awk -F'\t' '{ printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$18,$19,$14,$20,$15 }'
} > "$TABLE"
LTABLE=$WORK/ltable.md
{
    echo '| driver | ordering | workers | batch | rate/s | events | unpublished at end | p50 ms | p95 ms | p99 ms | max ms | p99 from created_at | CPU s/100k | peak RSS MB | broker alone p50 ms | broker alone p99 ms |'
    echo '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|'
    tail -n +2 "$LATRES" | awk -F'\t' '{ printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16 }'
} > "$LTABLE"
echo
column -t -s $'\t' "$RESULTS"
[ "$(wc -l < "$LATRES")" -gt 1 ] && { echo; column -t -s $'\t' "$LATRES"; }
[ "$(wc -l < "$HOTRES")" -gt 1 ] && { echo; column -t -s $'\t' "$HOTRES"; }

if command -v gnuplot >/dev/null && [ "$MODE" != smoke ] && [ "$(wc -l < "$RESULTS")" -gt 1 ]; then
    pb=500; [[ ",$BATCHES," == *",500,"* ]] || pb=${BS[0]}
    po=none; [[ ",$ORDERINGS," == *",none,"* ]] || po=${OS[0]}
    plot=""
    for d in "${DRV[@]}"; do
        awk -F'\t' -v d="$d" -v b="$pb" -v o="$po" '$1 == d && $2 == o && $3 == "mark" && $5 == b && $7 == 1000 { print $4, $8 }' "$RESULTS" > "$WORK/plot.$d"
        plot+="${plot:+, }'$WORK/plot.$d' using 1:2 with linespoints lw 2 title '$d'"
    done
    awk -F'\t' -v b="$pb" -v o="$po" '$1 == "'"${DRV[0]}"'" && $2 == o && $3 == "mark" && $5 == b && $7 == 1000 { print $4, $9, $10, $11 }' "$RESULTS" > "$WORK/plot.db"
    plot+=", '$WORK/plot.db' using 1:2 with linespoints dt 2 lw 2 title 'simplest claim+mark (pgbench)'"
    plot+=", '$WORK/plot.db' using 1:3 with linespoints dt 3 lw 2 title 'relay SQL alone'"
    plot+=", '$WORK/plot.db' using 1:4 with linespoints dt 4 lw 2 title 'simplest + pending predicate'"
    gnuplot <<GP
set terminal pngcairo size 900,560 noenhanced
set output '$OUT/throughput.png'
set title 'outbox-relay throughput: ordering $po, batch $pb, retention mark, $EVENTS events'
set xlabel 'workers'; set ylabel 'events/s'; set key outside right; set grid
set xtics (${WORKERS}); set yrange [0:*]
plot $plot
GP
fi

[ "$MODE" = smoke ] && exit 0
PGSET=$(psql -qAt -d postgres -c "SELECT string_agg(name || ' = ' || setting || coalesce(' ' || unit, ''), ', ' ORDER BY name) FROM pg_settings
    WHERE name IN ('fsync','synchronous_commit','full_page_writes','wal_level','shared_buffers','max_wal_size','checkpoint_timeout','work_mem','autovacuum')")
{
    echo "# outbox-relay benchmark report"
    echo
    echo "Generated $(date -u '+%Y-%m-%d %H:%M UTC') by \`tests/bench/run.sh $MODE_ARGS\` (mode $MODE) at commit $(git -C "$OBX_SRC" rev-parse --short HEAD 2>/dev/null || echo '?')."
    echo
    echo "## Machine and servers"
    echo "- Load average at the end of the run: $(cut -d' ' -f1-3 /proc/loadavg) (other sessions share this machine: figures taken at different moments are noisy; the ratios compare figures taken minutes apart)"
    echo "- $(uname -srm); $(nproc) cores: $(lscpu | sed -n 's/^Model name: *//p'); $(free -g | awk '/Mem:/ {print $2}') GiB RAM"
    echo "- $(psql -qAt -d postgres -c 'SELECT version()' | cut -d, -f1), same machine, loopback TCP"
    echo "- PostgreSQL settings (SHOW): $PGSET"
    echo "- Brokers on the same machine: Kafka = librdkafka $(pkg-config --modversion rdkafka) mock cluster (private, 1 broker, topic obx.bench with 3 partitions, in memory); RabbitMQ $(dpkg-query -W -f='${Version}' rabbitmq-server 2>/dev/null) (shared test server, durable topic exchange + durable queue, persistent messages, purged after each run); Mosquitto $(dpkg-query -W -f='${Version}' mosquitto 2>/dev/null) (private, quiet log, no persistence, no subscriber: PUBACK 0x10)"
    echo "- Relay build: $(grep -E '^CMAKE_BUILD_TYPE' "$(dirname "$OBX_BIN")/CMakeCache.txt" 2>/dev/null | cut -d= -f2 || echo '?') (no sanitizers)"
    echo
    echo "## Settings"
    echo "- Events per throughput run: $EVENTS, pre-filled with outbox_enqueue in transactions of 50,000, 1,000 aggregates, payload jsonb of $PAYLOAD_BYTES bytes as text, then VACUUM ANALYZE; every run starts from a copy of that database (CREATE DATABASE ... TEMPLATE)."
    echo "- Matrix: drivers $DRIVERS; workers $WORKERS; batch $BATCHES; ordering $ORDERINGS; retention $RETENTIONS."
    echo "- Relay: \`outbox-relay run --drain\`, lease 30 s, poll interval 1 s, log level warn; driver defaults except: file to /dev/null; kafka acks=all idempotent (driver default), key aggregate_id; rabbitmq mandatory + persistent + confirms; mqtt QoS 1, max_in_flight default (64)."
    echo "- relay ev/s (retention mark): rows / (max(published_at) - min(published_at)), not counting the rows marked at the first mark's instant (their work was done before it). Retention delete leaves no rows to date, so: events / (wall time of run --drain - wall time of the same relay on an empty outbox)."
    echo "- Database limit: the simplest correct claim+mark, one statement per batch, run by \`pgbench -n -M prepared -c W -j W -t T\` (W = the run's workers, T transactions per client so that the table is drained; events/s = events x tps / transactions, tps x batch when every transaction is full) on a fresh copy of the same table:"
    echo
    echo '```sql'
    simplest_sql 500 mark
    echo '```'
    echo
    echo "  (retention delete: the same claim, \`DELETE ... USING c\`). \"Relay's SQL alone\" is \`bench_db\`: W connections run the relay's own claim and mark statements, prepared by core/poll/queries.c (the ordered claim with runs of up to the batch size, as for an in-order driver), back to back with no broker, on a fresh copy; it is what the relay's statements cost by themselves. \"Simplest + pending predicate\" is the same pgbench statement with \`AND dead_at IS NULL AND available_at < 'infinity'\` added to its WHERE, so that it can use the table's partial pending index (as written, no index matches \`published_at IS NULL\` alone, and its primary-key scan passes every row already published: see the profile). All three are measured in this run, one after the other for each worker count."
    echo "- Broker limit: \`bench_broker\`, the driver's client library, the same 200-byte payload and 5 headers, same acknowledgement, the best of one client, as many clients as workers and twice as many (the relay's lanes), each publishing windows of the batch size and waiting for all acknowledgements of a window (the relay's cycle), no database."
    echo "- Ratio = relay / min(the faster of the simplest claim+mark as written and with the pending predicate, broker limit); for memory/file only the database applies."
    echo "- CPU limit: $NCPU cores x 100,000 / (CPU seconds per 100,000 events of the faster simplest claim+mark, PostgreSQL + pgbench, + those of the broker limit's run, bench_broker + the broker's process), from /proc (PostgreSQL: the postmaster, the backends it reaped and the live ones). A relay does both jobs on the same cores, which each limit had to itself; where both keep the cores busy (the database limit does), a relay can pass it only by spending less per event than the two tools. Machine CPU s/100k: the relay's own CPU + PostgreSQL's + the broker's during its drain, the same count as the CPU limit's. A shared broker's idle work (RabbitMQ's VM) is counted in both."
    [ "$HOT" -gt 0 ] && echo "- Hot aggregate: $HOT events of ONE aggregate (same payloads), ordering aggregate, $HW workers, batch $HB, run right after the same driver on the $EVENTS events over 1,000 aggregates, twice, alternated (hot.tsv). The simplest claim+mark on the hot table: $HOT_DBL events/s; the relay's SQL alone, ordering aggregate: $HOT_DBR events/s."
    echo "- Cost: CPU (user+sys) and peak RSS of the relay process from wait4()'s rusage."
    echo "- Latency: producer \`bench_producer\` commits events at a steady rate for $LAT_SECONDS s (a 1 ms tick, the events due in one small transaction), relay running with LISTEN/NOTIFY (workers 2, batch 500, ordering $LAT_ORDERING). Latency = published_at (the relay's record statement, run right after the driver's last completion of the batch; it is the statement's now(), so it is the start of the mark, before its commit) minus the producer's wall clock when COMMIT returned. The p99 from created_at (clock_timestamp() at insert) is an upper bound including the producer's own round trip."
    echo "- Broker alone (latency baseline, run right after the relay's latency run): \`bench_broker -r RATE -s $LAT_SECONDS\`, one client of the driver's library, no database; every millisecond the messages due go out as one window and wait for their acknowledgements; latency from the moment a message was due to its acknowledgement. The relay cannot beat it."
    echo
    echo "## Throughput and cost"
    cat "$TABLE"
    echo
    echo "![throughput vs workers](throughput.png)"
    echo
    if [ "$(wc -l < "$PAIRRES")" -gt 1 ]; then
        echo "## Paired rounds: each relay drain right after its limits"
        echo "Ratio = relay / min(the faster simplest claim+mark and the broker's limit at its best client count, both measured just before it); relay / CPU limit from the same two runs' CPU; $PAIRS rounds per configuration (pairs.tsv)."
        echo
        echo '| driver | ordering | retention | workers | batch | rounds | ratio min | median | max | relay/CPU limit min | median | max |'
        echo '|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|'
        tail -n +2 "$PAIRRES" | awk -F'\t' '
            function med(a, c, s) { return (c % 2) ? a[(c + 1) / 2] : (a[c / 2] + a[c / 2 + 1]) / 2 }
            function put(k, x, c, a, i, j, t) {  # the sorted values of key k, column x
                for (i = 1; i <= c; i++) a[i] = v[k, x, i]
                for (i = 2; i <= c; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
                return sprintf("%.2f | %.2f | %.2f", a[1], med(a, c), a[c])
            }
            { k = $1 "|" $2 "|" $3 "|" $4 "|" $5; if (!(k in n)) order[++m] = k; n[k]++
              v[k, 10, n[k]] = $10; v[k, 12, n[k]] = ($12 == "-") ? 0 : $12 }
            END { for (i = 1; i <= m; i++) { k = order[i]; split(k, f, "|")
                      printf "| %s | %s | %s | %s | %s | %d | %s | %s |\n", f[1], f[2], f[3], f[4], f[5], n[k], put(k, 10, n[k]), put(k, 12, n[k]) } }'
        echo
    fi
    if [ "$(wc -l < "$HOTRES")" -gt 1 ]; then
        echo "## Hot aggregate: ONE aggregate against 1,000"
        echo '| driver | workers | batch | repeat | 1,000 aggregates ev/s | one aggregate ev/s | one / 1,000 |'
        echo '|---|---:|---:|---:|---:|---:|---:|'
        tail -n +2 "$HOTRES" | awk -F'\t' '{ printf "| %s | %s | %s | %s | %s | %s | %s |\n", $1,$2,$3,$4,$5,$6,$7 }'
        echo
    fi
    echo "## Latency (commit to acknowledgement)"
    cat "$LTABLE"
    if [ "$PROFILE" = 1 ]; then
        echo; echo "## Profile"
        [ -s "$OUT/profile.txt" ] && { echo; echo '```'; cat "$OUT/profile.txt"; echo '```'; }
        echo; echo '```'; grep -E '^###|Execution Time|Planning Time' "$OUT/explain.txt"; echo '```'
        echo; echo "Full plans: explain.txt"
        echo; echo "### Write amplification per event (writes.tsv)"
        echo '| workload | heap tuples updated | of them HOT | heap updates, non-HOT (WAL) | row locks (WAL) | index entries inserted (WAL) | WAL records | WAL bytes |'
        echo '|---|---:|---:|---:|---:|---:|---:|---:|'
        tail -n +2 "$OUT/writes.tsv" | awk -F'\t' '{ printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", $1,$3,$4,$6,$7,$8,$10,$11 }'
        echo; echo "### The simplest claim+mark while the table drains (simplest_drift.tsv; $PW clients, batch $PB, mean statement time)"
        echo '| statement | transactions | first tenth ms | last tenth ms | events/s |'
        echo '|---|---:|---:|---:|---:|'
        tail -n +2 "$OUT/simplest_drift.tsv" | awk -F'\t' '{ printf "| %s | %s | %s | %s | %s |\n", $1,$2,$3,$4,$5 }'
    fi
} > "$OUT/REPORT.md"
note "report: $OUT/REPORT.md, plot: $OUT/throughput.png, data: $RESULTS $LATRES"
