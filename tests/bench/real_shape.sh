#!/bin/bash
# tests/bench/real_shape.sh: what the relay costs the application, in the
# outbox's real shape (issue 33). Producers (pgbench, 4 clients) commit
# transactions of 1-5 outbox_enqueue calls (200-byte payloads, 1,000
# aggregates) for PHASE seconds on a fresh outbox: alone, then with the relay
# beside them (poll mode, then WAL mode, then the cursor source), alternated (alone, poll, alone, wal,
# ...) for ROUNDS rounds, so each ratio compares phases measured minutes apart.
# Per phase: events/s committed; with the relay, the ratio to the mean of the
# two alone phases around it, how long the relay took to finish after the
# producers stopped, commit-to-acknowledgement p50/p99 (the relay's
# histogram), and per event what the database wrote: WAL bytes, commits,
# dead tuples left in the outbox, the machine's busy CPU and the relay's own CPU
# (ms per 1,000 events). The relay: memory driver, 2 workers, batch
# 500, ordering aggregate, retention mark. Two baselines that are not the
# relay can stand in its place (in --sources): "simplest", the simplest
# claim+mark statement (batch 500, 2 pgbench clients, 10 ms pause when it
# finds nothing), poll mode's database cost; and "recvlogical", PostgreSQL's
# pg_recvlogical reading the relay's slot and publication into /dev/null,
# WAL mode's. "cursor-schema" is the producers alone on the cursor source's
# objects (its column, index and trigger), no relay: what its schema costs.
#
#   tests/bench/real_shape.sh [--phase SECONDS] [--rounds N] [--sources poll,wal,cursor,simplest,recvlogical,cursor-schema] [--out FILE]
#
# Needs the shared services (PostgreSQL with wal_level=logical) and a Release
# build (OBX_BUILD, default build-bench: targets outbox-relay, obx_driver_memory).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/bench_lib.sh"
PHASE=20 ROUNDS=2 SOURCES=poll,wal,cursor OUT=$HERE/results/real_shape.tsv
while [ $# -gt 0 ]; do
    case $1 in
        --phase) PHASE=$2; shift ;;
        --rounds) ROUNDS=$2; shift ;;
        --sources) SOURCES=$2; shift ;;
        --out) OUT=$2; shift ;;
        -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
        *) fail "unknown option $1 (see --help)" ;;
    esac
    shift
done
[ -x "$OBX_BIN" ] || fail "relay $OBX_BIN missing: build $OBX_BUILD (Release)"
command -v pgbench >/dev/null || fail "pgbench missing (package postgresql-client)"
WORK=$(mktemp -d /tmp/obx-realshape.XXXXXX)
DB=obx_bench_shape_$$
PORT=$((20000 + $$ % 20000))
RELAY_PID= BASE_PID=
cleanup() {
    set +e
    [ -n "$RELAY_PID" ] && kill -TERM "$RELAY_PID" 2>/dev/null && wait "$RELAY_PID" 2>/dev/null
    [ -n "$BASE_PID" ] && kill -TERM "$BASE_PID" 2>/dev/null && wait "$BASE_PID" 2>/dev/null
    psql -qAt -d postgres -c "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots
                              WHERE database = '$DB' AND NOT active" >/dev/null 2>&1
    psql -qAt -d postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1
    rm -rf "$WORK"
}
trap cleanup EXIT
q() { psql -qAt -v ON_ERROR_STOP=1 -d "$DB" -c "$1"; }

. "$HERE/memory_relay.sh"
cfg() { memory_relay_cfg "$WORK/relay.cfg" "$1" mark "$PORT"; }  # SOURCE
cat >"$WORK/produce.sql" <<'SQL'
\set n random(1, 5)
\set a random(0, 999)
SELECT count(outbox_enqueue('Order', 'agg-' || ((:a + g) % 1000), 'order.created',
       jsonb_build_object('n', g, 'pad', repeat('x', 180)))) FROM generate_series(1, :n) g;
SQL
simplest_claim_sql "$WORK/simplest.sql"
# start_beside SOURCE: the relay, or a baseline, beside the producers
start_beside() {
    case $1 in
        simplest)
            pgbench -n -f "$WORK/simplest.sql" -c 2 -j 2 -T $((PHASE + 60)) "$DB" >"$WORK/simplest.out" 2>&1 &
            BASE_PID=$! ;;
        recvlogical)
            pg_recvlogical -d "host=$PGHOST port=$PGPORT user=$PGUSER dbname=$DB" -S "${DB}_slot" --start \
                -o proto_version=1 -o publication_names="${DB}_slot" -o messages=true -F 1 -s 1 -f /dev/null \
                2>"$WORK/recv.err" &
            BASE_PID=$! ;;
        *)
            "$OBX_BIN" run -c "$WORK/relay.cfg" 2>>"$WORK/relay.log" &
            RELAY_PID=$!
            for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null && break; sleep 0.1; done ;;
    esac
}

fresh() {  # SOURCE: a fresh database with the relay's schema for SOURCE
    psql -qAt -d postgres -c "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots
                              WHERE database = '$DB'" >/dev/null
    psql -qAt -d postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB" >/dev/null
    cfg "$1"
    "$OBX_BIN" init-db -c "$WORK/relay.cfg" >/dev/null
    q "CHECKPOINT" >/dev/null
}
# quantile Q FILE: from the scrape's commit-to-ack histogram, the bucket bound holding quantile Q (s)
quantile() {
    awk -v q="$1" '/^outbox_relay_commit_to_ack_seconds_bucket/ {
            le = $1; sub(/.*le="/, "", le); sub(/".*/, "", le); b[++n] = le; c[n] = $2 }
        END { for (i = 1; i <= n; i++) if (c[i] >= q * c[n]) { print b[i]; exit } }' "$2"
}

TCK=$(getconf CLK_TCK)
busy_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
proc_ticks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }
# phase SOURCE: one phase (alone when SOURCE is "alone"); prints a result line
phase() {
    local src=$1 wal0 commits0 t_stop caught events rate wal_b commits dead p50=- p99=- lsn busy0 relay_t=0
    case $src in alone | simplest) fresh poll ;; recvlogical) fresh wal ;; cursor-schema) fresh cursor ;; *) fresh "$src" ;; esac
    case $src in alone | cursor-schema) ;; *) start_beside "$src" ;; esac
    wal0=$(q "SELECT pg_current_wal_lsn()")
    commits0=$(q "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")
    busy0=$(busy_ticks)
    pgbench -n -f "$WORK/produce.sql" -c 4 -j 2 -T "$PHASE" "$DB" >"$WORK/pgbench.out" 2>&1 ||
        { cat "$WORK/pgbench.out" >&2; fail "pgbench"; }
    t_stop=$(date +%s.%N)
    events=$(q "SELECT count(*) FROM outbox")
    caught=-
    local done_sql=  # true once the relay (or baseline) has everything the producers committed
    case $src in
        poll | simplest) done_sql=$(memory_relay_done_sql poll) ;;
        cursor) done_sql=$(memory_relay_done_sql cursor) ;;
        wal) done_sql=$(memory_relay_done_sql wal "$(q "SELECT pg_current_wal_lsn()")") ;;
        recvlogical)  # its walsender has sent all (it confirms once a second)
            lsn=$(q "SELECT pg_current_wal_lsn()")
            done_sql="SELECT coalesce(bool_and(sent_lsn >= '$lsn'), false) FROM pg_stat_replication
                      WHERE application_name = 'pg_recvlogical'" ;;
    esac
    if [ -n "$done_sql" ]; then
        for _ in $(seq 600); do [ "$(q "$done_sql")" = t ] && break; sleep 0.05; done
    fi
    [ -z "$done_sql" ] || caught=$(awk -v a="$t_stop" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
    if [ -n "$BASE_PID" ]; then
        relay_t=$(proc_ticks "$BASE_PID")  # the client's own CPU (pgbench or pg_recvlogical)
        kill -TERM "$BASE_PID"; wait "$BASE_PID" || true; BASE_PID=
    elif [ -n "$RELAY_PID" ]; then
        curl -sf "http://127.0.0.1:$PORT/metrics" >"$WORK/metrics.txt"
        p50=$(quantile 0.5 "$WORK/metrics.txt") p99=$(quantile 0.99 "$WORK/metrics.txt")
        relay_t=$(proc_ticks "$RELAY_PID")
        kill -TERM "$RELAY_PID"; wait "$RELAY_PID" || true; RELAY_PID=
    fi
    busy0=$(($(busy_ticks) - busy0))
    q "SELECT pg_stat_force_next_flush()" >/dev/null 2>&1 || true
    sleep 0.6 # the statistics of the ended sessions reach pg_stat_*
    wal_b=$(q "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '$wal0')::bigint")
    commits=$(q "SELECT xact_commit - $commits0 FROM pg_stat_database WHERE datname = current_database()")
    dead=$(q "SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 'outbox'")
    rate=$(awk -v e="$events" -v t="$PHASE" 'BEGIN { printf "%.0f", e / t }')
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%.0f\t%.2f\t%.3f\t%.0f\t%.0f\n' "$src" "$events" "$rate" "$caught" "$p50" "$p99" \
        "$(awk -v w="$wal_b" -v e="$events" 'BEGIN { print w / e }')" \
        "$(awk -v c="$commits" -v e="$events" 'BEGIN { print c / e }')" \
        "$(awk -v d="$dead" -v e="$events" 'BEGIN { print d / e }')" \
        "$(awk -v b="$busy0" -v t="$TCK" -v e="$events" 'BEGIN { print b / t * 1e6 / e }')" \
        "$(awk -v b="$relay_t" -v t="$TCK" -v e="$events" 'BEGIN { print b / t * 1e6 / e }')"
}

IFS=, read -r -a SRC <<<"$SOURCES"
note "real shape: pgbench 4 clients, 1-5 events a transaction, $PHASE s a phase, $ROUNDS rounds, sources ${SOURCES}"
printf 'phase\tevents\tevents_per_s\tcaught_up_s\tp50_le_s\tp99_le_s\twal_bytes_per_event\tcommits_per_event\tdead_tuples_per_event\tmachine_cpu_ms_per_1k\trelay_cpu_ms_per_1k\n' >"$WORK/raw.tsv"
phase alone | tee -a "$WORK/raw.tsv"
for ((r = 1; r <= ROUNDS; r++)); do
    for s in "${SRC[@]}"; do
        phase "$s" | tee -a "$WORK/raw.tsv"
        phase alone | tee -a "$WORK/raw.tsv"
    done
done
# each relay phase against the mean of the alone phases just before and after it
awk -F'\t' 'NR > 1 { k[NR] = $1; r[NR] = $3 }
    END { for (i = 3; i <= NR; i++) if (k[i] != "alone" && k[i-1] == "alone" && k[i+1] == "alone")
              printf "ratio\t%s\t%.2f\n", k[i], r[i] / ((r[i-1] + r[i+1]) / 2) }' "$WORK/raw.tsv" >"$WORK/ratios.tsv"
cat "$WORK/ratios.tsv"
mkdir -p "$(dirname "$OUT")"
cat "$WORK/raw.tsv" "$WORK/ratios.tsv" >"$OUT"
note "written to $OUT"
