#!/bin/bash
# WAL mode's throughput and latency beside each broker's own limit, poll mode
# and the database's limit, measured one after the other in one session (not a
# ctest test: run by hand on a Release build, tests/bench's tools built):
#   OBX_BIN=$PWD/build-rel/outbox-relay SVC_DIR=... [BENCH_MQTT_PORT=...] tests/wal/bench.sh
# - throughput: a backlog of BENCH_EVENTS (50,000) events over 1,000 aggregates,
#   in transactions of 500, drained by `run --drain` in WAL mode for each driver
#   of BENCH_DRIVERS (memory,kafka,rabbitmq,mqtt) and ordering (aggregate, none):
#   events / (wall time - the same relay's wall time on an empty slot), CPU and
#   peak RSS from bench_rusage; the walsender's CPU (from /proc, sampled every
#   20 ms: a lower bound) per 100k events and as a share of one core over that
#   time ("busy" near 1.0: the walsender is what limits). The source's limit, once per round: PostgreSQL's
#   own pg_recvlogical (pgoutput, proto_version 1, the bench publication, into
#   /dev/null) on the same backlog, from --start until it reached the end LSN
#   of the enqueued events (--endpos), less its time on an empty slot: how
#   fast the walsender hands the events over, with no code of ours. Beside it, the broker's limit (bench_broker: same
#   client library and acknowledgement, no database, one client, windows of what
#   the relay may have in flight: max_in_flight 10,000 with ordering none, 1,000
#   with ordering aggregate (one per aggregate), MQTT's window 1,000 for both);
#   then, memory driver only, poll mode (2 workers, batch 500) and the simplest
#   claim+mark (pgbench, 2 clients, batch 500): the database's limit when
#   writing per event. BENCH_ROUNDS (1) rounds. Ratios: to the broker's limit,
#   and to min(source limit, broker limit), the most the relay could reach.
# - latency at BENCH_RATE (1,000) events/s for BENCH_SECONDS (15), ordering
#   aggregate, per driver: bench_producer commits one small transaction per 1 ms
#   tick; "confirmed" = the first time (sampled every ms) the slot's
#   confirmed_flush_lsn passed the event's commit record (pg_walinspect), minus
#   the producer's clock when COMMIT returned; memory also gives the
#   acknowledgement itself (its record's t_us). Beside it, bench_broker -r RATE.
# BENCH_THROUGHPUT=0, BENCH_POLL=0 and BENCH_LATENCY=0 leave out the throughput,
# poll-mode and latency parts. BENCH_PER_TXN (500): events per transaction of the
# throughput part's backlog (1: the drain of one-event transactions).
ENG_TEST=walbench
. "$(dirname "$0")/wal_lib.sh"
N=${BENCH_EVENTS:-50000} PER_TXN=${BENCH_PER_TXN:-500} ROUNDS=${BENCH_ROUNDS:-1} RATE=${BENCH_RATE:-1000} SECS=${BENCH_SECONDS:-15}
IFS=, read -r -a DRV <<<"${BENCH_DRIVERS:-memory,kafka,rabbitmq,mqtt}"
TOOLS=${OBX_BENCH_TOOLS:-$(dirname "$OBX_BIN")/tests/bench}
MQ_PORT=${BENCH_MQTT_PORT:-52783} BENCH_SVC=/tmp/obx-walbench-svc-$$
for t in bench_broker bench_producer bench_rusage; do [ -x "$TOOLS/$t" ] || fail "$TOOLS/$t missing"; done

# private brokers, as tests/bench/run.sh: Mosquitto (quiet, window 1,000) and a Kafka mock
SVC_DIR=$BENCH_SVC MQTT_PORT=$MQ_PORT "$SERVICES" mqtt-start >/dev/null
# shellcheck disable=SC2046
cc -O2 -o "$WORK/kmock" "$OBX_SRC/tests/services/kmock.c" $(pkg-config --cflags --libs rdkafka) -lpthread
"$WORK/kmock" -f "$WORK/kmock.bootstrap" -t obx.bench:3 </dev/null >/dev/null 2>"$WORK/kmock.err" &
ENG_PIDS+=($!)
disown $! # killed at exit: no "Killed" notice
for _ in $(seq 100); do [ -s "$WORK/kmock.bootstrap" ] && break; sleep 0.05; done
KAFKA=$(cat "$WORK/kmock.bootstrap") || fail "kmock did not start"
purge() { "$TOOLS/bench_broker" rabbitmq-purge -u "$AMQP_URL" -q obx.bench >/dev/null || true; }
eng_extra_cleanup() {
    [ -z "${TEST_DB:-}" ] || wal_drop_slots "$TEST_DB" || true
    SVC_DIR=$BENCH_SVC MQTT_PORT=$MQ_PORT "$SERVICES" mqtt-stop >/dev/null 2>&1 || true
    rm -rf "$BENCH_SVC"
    purge
}

# cfg FILE DRIVER ORDERING: WAL mode, one output of DRIVER (options as tests/bench/run.sh)
cfg() {
    local opts="" dest='bench.${aggregate_type}'
    case $2 in
        memory) [ -z "${RECORD:-}" ] || opts="record_file = \"$REC\";" ;;
        kafka) opts="bootstrap_servers = \"$KAFKA\";" dest=obx.bench ;;
        rabbitmq) opts="url = \"$AMQP_URL\"; declare_exchange = \"obx.bench\"; declare_exchange_type = \"topic\";
                  declare_queue = \"obx.bench\"; bind_routing_key = \"#\";"
                  dest='obx.bench/${aggregate_type}.${event_type}' ;;
        mqtt) opts="url = \"tcp://127.0.0.1:$MQ_PORT\"; window = 1000;" dest='obx/bench/${aggregate_type}/${event_type}' ;;
    esac
    cat >"$1" <<CFG
database = { conninfo = "$TEST_DSN"; };
relay = { source = "wal"; wal = { slot = "$TEST_DB"; }; ordering = "$3"; max_attempts = 1000;
          drivers_dir = "$OBX_DRIVERS"; };
outputs = ( { name = "out"; driver = "$2"; options = { $opts }; } );
routes = ( { event_type = "*"; aggregate_type = "*"; output = "out"; destination = "$dest"; } );
CFG
}
# bench_broker's target for a driver
target() { case $1 in kafka) echo "$KAFKA obx.bench" ;; rabbitmq) echo "$AMQP_URL obx.bench" ;;
                      mqtt) echo "tcp://127.0.0.1:$MQ_PORT obx/bench" ;; esac; }

# sampled RUSAGE_OUT LOG COMMAND...: COMMAND under bench_rusage, the slot's walsender
# sampled meanwhile; prints the walsender's CPU seconds (utime + stime when last seen)
sampled() {
    local out=$1 log=$2 ws="" ticks=0 f
    shift 2
    "$TOOLS/bench_rusage" "$out" "$@" >"$log" 2>&1 &
    local pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        [ -n "$ws" ] || ws=$(sql "SELECT active_pid FROM pg_replication_slots WHERE slot_name = '$TEST_DB' AND active" 2>/dev/null)
        if [ -n "$ws" ] && read -r -a f 2>/dev/null <"/proc/$ws/stat"; then ticks=$((f[13] + f[14])); fi
        sleep 0.02
    done
    wait "$pid" || true
    awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", t / hz }'
}

# wal_drain DRIVER ORDERING EVENTS: "wall user sys maxrss_kb" of run --drain on a fresh slot
wal_drain() {
    fresh_wal_db wal_bench
    cfg "$WORK/w.cfg" "$1" "$2"
    init_db "$WORK/w.cfg"
    [ "$3" = 0 ] || enqueue_txns "$3" 1000 "$PER_TXN"
    local ws
    ws=$(sampled "$WORK/w.ru" "$WORK/w.log" "$OBX_BIN" run -c "$WORK/w.cfg" --drain)
    [ "$(cut -d' ' -f5 "$WORK/w.ru")" = 0 ] || fail "run --drain ($1, $2) exited $(cut -d' ' -f5 "$WORK/w.ru"): $(tail -3 "$WORK/w.log")"
    [ "$1" != rabbitmq ] || purge
    echo "$(cut -d' ' -f1-4 "$WORK/w.ru") $ws"
}

# source_drain EVENTS: "wall user sys" of pg_recvlogical from --start to the end
# LSN of EVENTS enqueued events, on a fresh slot (the walsender does the work)
source_drain() {
    fresh_wal_db wal_bench
    cfg "$WORK/w.cfg" memory aggregate
    init_db "$WORK/w.cfg"
    [ "$1" = 0 ] || enqueue_txns "$1" 1000 "$PER_TXN"
    local end
    end=$(sql "SELECT pg_current_wal_lsn()")
    local ws
    ws=$(sampled "$WORK/s.ru" "$WORK/recvlogical.log" pg_recvlogical -d "$TEST_DSN" -S "$TEST_DB" --start --no-loop \
        -o proto_version=1 -o publication_names="$TEST_DB" -o messages=true -F 0 -f /dev/null -E "$end")
    [ "$(cut -d' ' -f5 "$WORK/s.ru")" = 0 ] || fail "pg_recvlogical exited $(cut -d' ' -f5 "$WORK/s.ru"): $(tail -3 "$WORK/recvlogical.log")"
    expect_eq "slot caught up to the end LSN" \
        "$(sql "SELECT confirmed_flush_lsn >= '$end' FROM pg_replication_slots WHERE slot_name = '$TEST_DB'")" t
    echo "$(cut -d' ' -f1-3 "$WORK/s.ru") $ws"
}

if [ "${BENCH_THROUGHPUT:-1}" != 0 ]; then
    echo "driver ordering wal_eps source_limit broker_limit ratio_broker ratio_min(source,broker) cpu_s_per_100k peak_rss_mb walsender_cpu_s_per_100k walsender_busy"
    for ((k = 1; k <= ROUNDS; k++)); do
        r=$(source_drain 0) && read -r sw0 _ <<<"$r"
        r=$(source_drain "$N") && read -r sw _ _ sws <<<"$r"
        src=$(awk -v n="$N" -v w="$sw" -v w0="$sw0" 'BEGIN { printf "%.0f", n / (w - w0 > 0.001 ? w - w0 : 0.001) }')
        awk -v n="$N" -v w="$sw" -v w0="$sw0" -v ws="$sws" -v e="$src" 'BEGIN {
            printf "source (pg_recvlogical) %s ev/s, walsender_cpu_s_per_100k %.2f walsender_busy %.2f\n", e, ws * 100000 / n,
                   ws / (w - w0 > 0.001 ? w - w0 : 0.001) }'
        for d in "${DRV[@]}"; do
            r=$(wal_drain "$d" aggregate 0) && read -r w0 _ <<<"$r"
            for o in aggregate none; do
                r=$(wal_drain "$d" "$o" "$N") && read -r w u s rss ws <<<"$r"
                lim=- win=1000
                [ "$o" = aggregate ] || [ "$d" = mqtt ] || win=10000
                read -r url topic <<<"$(target "$d")"
                if [ -n "$url" ]; then
                    lim=$("$TOOLS/bench_broker" "$d" -u "$url" -t "$topic" -n "$N" -w 1 -b "$win" | awk '{print $3}')
                    [ "$d" != rabbitmq ] || purge
                fi
                awk -v d="$d" -v o="$o" -v n="$N" -v w="$w" -v w0="$w0" -v l="$lim" -v src="$src" -v u="$u" -v s="$s" -v r="$rss" -v ws="$ws" 'BEGIN {
                    e = n / (w - w0 > 0.001 ? w - w0 : 0.001)
                    m = (l == "-" || src + 0 < l + 0) ? src : l
                    printf "%s %s %.0f %s %s %s %.2f %.2f %.1f %.2f %.2f\n", d, o, e, src, l, l == "-" ? "-" : sprintf("%.2f", e / l),
                           e / m, (u + s) * 100000 / n, r / 1024, ws * 100000 / n, ws / (w - w0 > 0.001 ? w - w0 : 0.001) }'
            done
        done
    done
fi

# poll mode and the database's limit, memory driver (the figures before WAL mode)
poll_run() {
    rm -f "$REC"
    fresh_db wal_bench_poll
    write_cfg "$WORK/poll.cfg" "workers = 2; batch_size = 500; ordering = \"none\";" ""
    init_db "$WORK/poll.cfg"
    enqueue_txns "$N" 1000 500
    sql "VACUUM ANALYZE outbox"
    drain "$WORK/poll.cfg" "$WORK/poll.log" 600
    load_record
    sql "SELECT round(count(DISTINCT event_id) / greatest((max(t_us) - min(t_us)) / 1e6, 1e-3)) FROM r WHERE status = 'ok'"
}
simplest_run() {
    fresh_db wal_bench_simplest
    write_cfg "$WORK/s.cfg" "" ""
    init_db "$WORK/s.cfg"
    enqueue_txns "$N" 1000 500
    sql "VACUUM ANALYZE outbox"
    cat >"$WORK/simplest.sql" <<'SQL'
WITH c AS (SELECT id FROM outbox WHERE published_at IS NULL ORDER BY id FOR UPDATE SKIP LOCKED LIMIT 500)
UPDATE outbox o SET published_at = now(), attempts = o.attempts + 1 FROM c WHERE o.id = c.id
RETURNING o.id, o.event_id, o.aggregate_type, o.aggregate_id, o.event_type, o.payload, o.headers;
SQL
    local tx=$(((N + 999) / 1000)) out tps ntx
    out=$(pgbench -n -M prepared -f "$WORK/simplest.sql" -c 2 -j 2 -t "$tx" "$TEST_DB" 2>&1) || fail "pgbench: $out"
    tps=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' <<<"$out")
    ntx=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' <<<"$out")
    awk -v n="$N" -v t="$tps" -v x="$ntx" 'BEGIN { printf "%.0f", n * t / x }'
}
[ "${BENCH_POLL:-1}" = 0 ] ||
    echo "memory: poll mode (2 workers, batch 500, none) $(poll_run) ev/s; simplest claim+mark $(simplest_run) ev/s"
[ "${BENCH_LATENCY:-1}" != 0 ] || { echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"; exit 0; }

# latency at RATE events/s: commit -> confirmed (all drivers), commit -> acknowledged (memory)
PCT="round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 1) || ' ' ||
     round(percentile_cont(0.99) WITHIN GROUP (ORDER BY ms)::numeric, 1) || ' ' || round(max(ms)::numeric, 1)"
echo "driver rate_reached confirmed_p50 p99 max ack_p50 p99 max broker_alone_p50 p99"
for d in "${DRV[@]}"; do
    rm -f "$REC"
    fresh_wal_db wal_bench
    sql "CREATE EXTENSION IF NOT EXISTS pg_walinspect"
    sql "CREATE FUNCTION sample_confirmed(secs float8) RETURNS TABLE (t_us bigint, lsn pg_lsn) LANGUAGE plpgsql AS \$\$
         DECLARE t0 timestamptz := clock_timestamp(); BEGIN
           WHILE clock_timestamp() < t0 + make_interval(secs => secs) LOOP
             t_us := (extract(epoch FROM clock_timestamp()) * 1e6)::bigint;
             SELECT confirmed_flush_lsn INTO lsn FROM pg_replication_slots WHERE slot_name = current_database();
             RETURN NEXT; PERFORM pg_sleep(0.001);
           END LOOP; END \$\$"
    RECORD=1 cfg "$WORK/l.cfg" "$d" aggregate
    init_db "$WORK/l.cfg"
    "$TOOLS/bench_rusage" "$WORK/l.ru" "$OBX_BIN" run -c "$WORK/l.cfg" >"$WORK/lat.log" 2>&1 &
    RELAY_PID=$!
    ENG_PIDS+=("$RELAY_PID")
    wait_log "$WORK/lat.log" "streaming from replication slot" 30
    LSN0=$(sql "SELECT pg_current_wal_lsn()")
    psql -qAt -d "$TEST_DB" -c "\\copy (SELECT * FROM sample_confirmed($SECS + 5)) TO '$WORK/confirmed.tsv'" &
    SAMPLER=$!
    read -r _ _ reached < <("$TOOLS/bench_producer" -d "$TEST_DSN" -r "$RATE" -s "$SECS" -o "$WORK/commits.tsv" || true)
    wait "$SAMPLER" || fail "sampler failed"
    kill -TERM "$RELAY_PID"
    wait "$RELAY_PID" || fail "relay (latency, $d) failed: $(tail -3 "$WORK/lat.log")"
    [ "$d" != rabbitmq ] || purge
    sql "CREATE TABLE lat (event_id uuid PRIMARY KEY, commit_us bigint); CREATE TABLE conf (t_us bigint, lsn pg_lsn);
         CREATE INDEX ON conf (lsn)"
    psql -qAt -d "$TEST_DB" -c "\\copy lat FROM '$WORK/commits.tsv'" -c "\\copy conf FROM '$WORK/confirmed.tsv'" >/dev/null
    conf=$(sql "WITH c AS (SELECT xid, end_lsn FROM pg_get_wal_records_info('$LSN0', pg_current_wal_lsn()) WHERE record_type = 'COMMIT'),
                x AS (SELECT ((SELECT min(t_us) FROM conf WHERE conf.lsn >= c.end_lsn) - lat.commit_us) / 1000.0 AS ms
                      FROM lat JOIN outbox o USING (event_id) JOIN c ON c.xid = o.xmin)
                SELECT count(*) FILTER (WHERE ms IS NULL) || ' ' || $PCT FROM x")
    read -r unconfirmed conf <<<"$conf"
    [ "$unconfirmed" = 0 ] || note "$d: $unconfirmed events not confirmed within 5 s of the last commit"
    ack="- - -"
    if [ "$d" = memory ]; then
        load_record
        ack=$(sql "SELECT $PCT FROM (SELECT (min(r.t_us) - lat.commit_us) / 1000.0 AS ms FROM lat JOIN r USING (event_id)
                   WHERE r.status = 'ok' GROUP BY lat.event_id, lat.commit_us) x")
    fi
    alone="- -"
    read -r url topic <<<"$(target "$d")"
    if [ -n "$url" ]; then
        alone=$("$TOOLS/bench_broker" "$d" -u "$url" -t "$topic" -r "$RATE" -s "$SECS" | awk '{print $1, $3}')
        [ "$d" != rabbitmq ] || purge
    fi
    echo "$d $reached $conf $ack $alone"
done
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
