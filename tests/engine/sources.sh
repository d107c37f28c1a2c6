#!/bin/bash
# Several sources in one process (issue 32): outboxes a and b (poll mode, two
# databases) and w (WAL mode, a third), one config, one process, one
# memory-driver output shared.
#  - the config's refusals: a repeated name, two sources on one table, a
#    setting a source may not hold; requeue without --outbox.
#  - init-db installs every source; each source's events are published.
#  - /metrics labels every series with its source and declares each family
#    once; /readyz answers for all and for ?source=NAME.
#  - b's database refuses connections: a and w keep publishing, /readyz says
#    b is not ready (and a is); once b is back, every event of b committed
#    during the outage is published.
#  - reload: w, no longer listed, stops; c, newly listed, starts.
#  - per source: every committed row published, order per aggregate held.
ENG_TEST=sources
. "$(dirname "$0")/engine_lib.sh"
. "$(dirname "$0")/../wal/walmode.sh"
MC=${METRICS_CLIENT:?METRICS_CLIENT must name the metrics_client executable}
PORT=$("$MC" freeport)
. "$(dirname "$0")/../metrics/scrape.sh"

fresh_db sources_c && DB_C=$TEST_DB DSN_C=$TEST_DSN
fresh_db sources_b && DB_B=$TEST_DB DSN_B=$TEST_DSN
fresh_wal_db sources_w && DB_W=$TEST_DB DSN_W=$TEST_DSN
fresh_db sources_a && DB_A=$TEST_DB DSN_A=$TEST_DSN
eng_extra_cleanup() {
    psql -qAt -d postgres -c "ALTER DATABASE $DB_B ALLOW_CONNECTIONS true" >/dev/null 2>&1 || true
    wal_drop_slots "$DB_W" || true
}

# in_db DB SQL: SQL in database DB.
in_db() { psql -qAt -v ON_ERROR_STOP=1 -d "$1" -c "$2"; }
# enqueue_in DB PREFIX N: N events over 20 aggregates PREFIX-0..19, one transaction.
enqueue_in() {
    in_db "$1" "SELECT count(outbox_enqueue('Order', '$2-' || (g % 20), 'order.created',
             jsonb_build_object('n', g))) FROM generate_series(1, $3) g" >/dev/null
}
published() { distinct_ok "$REC" "$1-"; }
wait_published() { wait_distinct "$REC" "$2" "$3" "$1-"; }
ready() { "$MC" get "$PORT" GET "/readyz$1" | head -1; }

# write_sources FILE SOURCES...: the shared top level and the sources given.
write_sources() {
    local f=$1
    shift
    cat >"$f" <<EOF
database = { conninfo = "$DSN_A"; };
relay = { drivers_dir = "\${OBX_DRIVERS}"; poll_interval_ms = 200; workers = 2; };
metrics = { listen = "127.0.0.1:$PORT"; };
outputs = ( { name = "mem"; driver = "memory"; options = { record_file = "$REC"; }; } );
sources = ( $(IFS=,; echo "$*") );
EOF
}
SRC_A='{ name = "a"; }'
SRC_B="{ name = \"b\"; database = { conninfo = \"$DSN_B\"; }; }"
SRC_W="{ name = \"w\"; database = { conninfo = \"$DSN_W\"; }; relay = { source = \"wal\"; wal = { slot = \"$DB_W\"; }; }; }"
SRC_C="{ name = \"c\"; database = { conninfo = \"$DSN_C\"; }; relay = { workers = 1; }; }"
CFG=$WORK/relay.cfg

# ---- the config's refusals ----
refused() { # refused WHAT PATTERN SOURCES...
    local what=$1 pattern=$2
    shift 2
    write_sources "$WORK/bad.cfg" "$@"
    "$OBX_BIN" check-config -c "$WORK/bad.cfg" >"$WORK/bad.out" 2>&1 && fail "$what: accepted"
    grep -q -- "$pattern" "$WORK/bad.out" || fail "$what: $(cat "$WORK/bad.out")"
}
refused "a repeated name" "sources a and a have the same name" "$SRC_A" "$SRC_A"
refused "one table twice" "relay the same table" "$SRC_A" '{ name = "again"; }'
refused "a source's metrics" 'unknown setting "metrics" in a source of sources' \
    '{ name = "a"; metrics = { listen = "127.0.0.1:1"; }; }'
refused "a source without a name" "has no name" '{ relay = { workers = 1; }; }'
refused "a bad name" 'source name "a b"' '{ name = "a b"; }'

write_sources "$CFG" "$SRC_A" "$SRC_B" "$SRC_W"
"$OBX_BIN" requeue -c "$CFG" --all >"$WORK/bad.out" 2>&1 && fail "requeue without --outbox succeeded"
grep -q "choose one with --outbox NAME" "$WORK/bad.out" || fail "requeue: $(cat "$WORK/bad.out")"
"$OBX_BIN" requeue -c "$CFG" --outbox nosuch --all >"$WORK/bad.out" 2>&1 && fail "requeue --outbox nosuch succeeded"
grep -q 'no source named "nosuch" (its sources: a, b, w)' "$WORK/bad.out" || fail "requeue --outbox nosuch: $(cat "$WORK/bad.out")"

# ---- every source installed and relayed ----
"$OBX_BIN" init-db -c "$CFG" >"$WORK/init.out" || fail "init-db: $(cat "$WORK/init.out")"
expect_eq "init-db's sources" "$(grep -c "^source [abw]: " "$WORK/init.out")" 3
expect_eq "init-db's schemas" "$(grep -c "schema version" "$WORK/init.out")" 3
start_relay "$CFG" "$WORK/relay.log"
for s in a b w; do wait_log "$WORK/relay.log" "\[$s\] relay starting" 30; done
enqueue_in "$DB_A" a 300
enqueue_in "$DB_B" b 300
enqueue_in "$DB_W" w 300
for s in a b w; do wait_published "$s" 300 60; done
"$OBX_BIN" status -c "$CFG" --json >"$WORK/status.json" || fail "status: $(cat "$WORK/status.json")"
expect_eq "status --json lines" "$(grep -c '"source":' "$WORK/status.json")" 3
"$OBX_BIN" status -c "$CFG" --outbox b >"$WORK/status.out" || fail "status --outbox b"
grep -q "^source b" "$WORK/status.out" || fail "status --outbox b: $(cat "$WORK/status.out")"

scrape "$WORK/metrics.txt"
expect_eq "a's published" "$(value "$WORK/metrics.txt" 'outbox_relay_published_total{source="a"}')" 300
expect_eq "b's published" "$(value "$WORK/metrics.txt" 'outbox_relay_published_total{source="b"}')" 300
value "$WORK/metrics.txt" 'outbox_relay_wal_streaming{source="w"}' >/dev/null
value "$WORK/metrics.txt" 'outbox_relay_output_up{source="b",output="mem"}' >/dev/null
expect_eq "families declared twice" \
    "$(grep '^# TYPE ' "$WORK/metrics.txt" | sort | uniq -d | wc -l)" 0
# the process' own series (process_*, build_info) are once, unlabelled
expect_eq "series without a source label, but the process' own" \
    "$(grep -v '^#' "$WORK/metrics.txt" | sed 1d | grep -v '{source="' | grep -vcE '^(process_[a-z_]+|outbox_relay_build_info\{[^}]*\}) ' || true)" 0
expect_eq "the process' own series" "$(grep -cE '^(process_[a-z_]+|outbox_relay_build_info\{[^}]*\}) ' "$WORK/metrics.txt")" 7
check_histograms "$WORK/metrics.txt"
expect_eq "/readyz" "$(ready "")" 200
expect_eq "/readyz?source=nosuch" "$(ready "?source=nosuch")" 404

# ---- b's database away: the others go on ----
# a session opened first is the only one that can still commit to b
mkfifo "$WORK/b.fifo"
PGAPPNAME=obx_b_writer psql -qAt -v ON_ERROR_STOP=1 -d "$DB_B" <"$WORK/b.fifo" >"$WORK/b_writer.out" 2>&1 &
WRITER=$!
ENG_PIDS+=("$WRITER")
exec 3>"$WORK/b.fifo"
echo "SELECT 1;" >&3
TEST_DB=postgres wait_sql "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'obx_b_writer'" 1 30
in_db postgres "ALTER DATABASE $DB_B ALLOW_CONNECTIONS false" >/dev/null
in_db postgres "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                WHERE datname = '$DB_B' AND application_name <> 'obx_b_writer'" >/dev/null
echo "SELECT count(outbox_enqueue('Order', 'b-' || (g % 20), 'order.created', jsonb_build_object('n', g)))
      FROM generate_series(1, 200) g;" >&3 # committed while the relay cannot connect
exec 3>&-
wait "$WRITER" || fail "b's writer: $(cat "$WORK/b_writer.out")"
enqueue_in "$DB_A" a 300
enqueue_in "$DB_W" w 300
wait_published a 600 60
wait_published w 600 60
expect_eq "b's events published while its database refused connections" "$(published b)" 300
for ((i = 0; i < 300; i++)); do [ "$(ready "?source=b")" = 503 ] && break; sleep 0.1; done
expect_eq "/readyz?source=b while away" "$(ready "?source=b")" 503
expect_eq "/readyz?source=a while b is away" "$(ready "?source=a")" 200
expect_eq "/readyz while b is away" "$(ready "")" 503
grep -q "\[b\] .*worker" "$WORK/relay.log" || fail "b's failures are not named in the log"
psql -qAt -d postgres -c "ALTER DATABASE $DB_B ALLOW_CONNECTIONS true" >/dev/null
wait_published b 500 120

# ---- reload: w goes, c comes ----
write_sources "$CFG" "$SRC_A" "$SRC_B" "$SRC_C"
"$OBX_BIN" init-db -c "$CFG" --outbox c >/dev/null || fail "init-db --outbox c"
"$OBX_BIN" reload -c "$CFG" >/dev/null || fail "reload"
wait_log "$WORK/relay.log" "\[w\] relay stopped" 30
wait_log "$WORK/relay.log" "\[c\] relay starting" 30
enqueue_in "$DB_C" c 100
enqueue_in "$DB_W" w 100
enqueue_in "$DB_A" a 100
wait_published c 100 60
wait_published a 700 60
expect_eq "w's events after it was removed" "$(published w)" 600
stop_relay "$RELAY_PID" 60
check_logs_clean

# ---- per poll source: all published, in order per aggregate ----
for db in "$DB_A" "$DB_B" "$DB_C"; do
    TEST_DB=$db
    load_record
    expect_eq "$db: rows not published" "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NULL")" 0
    expect_eq "$db: rows without an ok line" "$(sql "SELECT count(*) FROM outbox o WHERE NOT EXISTS
        (SELECT 1 FROM r WHERE r.event_id = o.event_id AND r.status = 'ok')")" 0
    check_order
done
TEST_DB=$DB_W
load_record
expect_eq "w: rows without an ok line" "$(sql "SELECT count(*) FROM outbox o WHERE o.id <= 600 AND NOT EXISTS
    (SELECT 1 FROM r WHERE r.event_id = o.event_id AND r.status = 'ok')")" 0
check_order
wal_drop_slots "$DB_W" || fail "w's slot is still in use"
TEST_DB=$DB_A
note "sources: a 700, b 500, c 100, w 600 published; b's outage and the reload held nothing back"
