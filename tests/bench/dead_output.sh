#!/bin/bash
# tests/bench/dead_output.sh: does a dead-letter output that is down slow the
# main flow? N events (default 50,000; 1,000 aggregates, one in ten of a type
# no route takes, so dead) drained by `run --drain` into the memory driver
# (2 workers, batch 500, ordering aggregate), on a fresh copy each time, in
# three settings alternated ROUNDS times: no dead_letter output; one up
# (RabbitMQ); one down (a webhook nobody listens on). Prints the drain time
# of each and the ratios to the run without one in the same round.
#
#   tests/bench/dead_output.sh [--events N] [--rounds N]
#
# Needs the shared services and a Release build (OBX_BUILD, default build-bench:
# outbox-relay, the memory, rabbitmq and webhook drivers, bench_broker).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/bench_lib.sh"
EVENTS=50000 ROUNDS=3
while [ $# -gt 0 ]; do
    case $1 in
        --events) EVENTS=$2; shift ;;
        --rounds) ROUNDS=$2; shift ;;
        -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
        *) fail "unknown option $1 (see --help)" ;;
    esac
    shift
done
WORK=$(mktemp -d /tmp/obx-deadbench.XXXXXX)
TPL=obx_bench_dead_tpl_$$ DB=obx_bench_dead_$$
purge() { "$TOOLS/bench_broker" rabbitmq-purge -u "$AMQP_URL" -q obx.bench.dead >/dev/null 2>&1 || true; }
cleanup() {
    purge
    for d in "$DB" "$TPL"; do psql -qAt -d postgres -c "DROP DATABASE IF EXISTS $d WITH (FORCE)" >/dev/null 2>&1; done
    [ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT

cfg() {  # FILE DB DEAD_LETTER_OUTPUT_OR_EMPTY
    local out="" dl=""
    [ -n "$3" ] && out=", $3" dl='dead_letter = { output = "dlq"; destination = "obx.bench.dead/dead"; };'
    cat >"$1" <<CFG
database = { conninfo = "host=$PGHOST port=$PGPORT user=$PGUSER dbname=$2"; };
relay = { workers = 2; batch_size = 500; ordering = "aggregate"; max_attempts = 1; drivers_dir = "$OBX_DRIVERS"; };
log = { level = "${BENCH_LOG_LEVEL:-error}"; };
outputs = ( { name = "mem"; driver = "memory"; } $out );
routes = ( { event_type = "order.*"; output = "mem"; destination = "bench"; } );
$dl
CFG
}
UP='{ name = "dlq"; driver = "rabbitmq"; options = { url = "'$AMQP_URL'"; declare_exchange = "obx.bench.dead"; declare_queue = "obx.bench.dead"; bind_routing_key = "#"; }; }'
DOWN='{ name = "dlq"; driver = "webhook"; options = { url = "http://127.0.0.1:1/dead"; timeout_ms = 500; }; }'
cfg "$WORK/none.cfg" "$DB" ""
cfg "$WORK/up.cfg" "$DB" "$UP"
cfg "$WORK/down.cfg" "$DB" "$DOWN"
psql -qAt -d postgres -c "DROP DATABASE IF EXISTS $TPL" -c "CREATE DATABASE $TPL" >/dev/null
cfg "$WORK/tpl.cfg" "$TPL" ""
"$OBX_BIN" init-db -c "$WORK/tpl.cfg" >/dev/null
psql -qAt -d "$TPL" -c "SELECT count(outbox_enqueue('Order', 'agg-' || (g % 1000),
    CASE WHEN g % 10 = 0 THEN 'misc.thing' ELSE 'order.created' END,
    jsonb_build_object('n', g, 'pad', repeat('x', 180)))) FROM generate_series(1, $EVENTS) g" >/dev/null
psql -qAt -d "$TPL" -c "VACUUM ANALYZE outbox" >/dev/null

drain() {  # CONFIG: seconds to drain a fresh copy
    psql -qAt -d postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB TEMPLATE $TPL" >/dev/null
    local t0 t1
    t0=$(date +%s.%N)
    "$OBX_BIN" run --drain -c "$1" 2>>"$WORK/relay.log" || fail "run --drain ($1): $(tail -5 "$WORK/relay.log")"
    t1=$(date +%s.%N)
    [ "$(psql -qAt -d "$DB" -c "SELECT count(*) FROM outbox WHERE published_at IS NULL AND dead_at IS NULL")" = 0 ] ||
        fail "events left pending after the drain"
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }'
}
note "dead-letter output: $EVENTS events (10% dead), 2 workers, batch 500, ordering aggregate; drain seconds"
printf 'round\tnone_s\tup_s\tdown_s\tup_over_none\tdown_over_none\n'
for ((r = 1; r <= ROUNDS; r++)); do
    n=$(drain "$WORK/none.cfg") u=$(drain "$WORK/up.cfg") d=$(drain "$WORK/down.cfg")
    purge
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$n" "$u" "$d" \
        "$(awk -v a="$u" -v b="$n" 'BEGIN { printf "%.2f", a / b }')" \
        "$(awk -v a="$d" -v b="$n" 'BEGIN { printf "%.2f", a / b }')"
done
