#!/bin/bash
# WAL mode sharded over two slots (README, "Scaling out"): two configs whose
# relay.wal.row_filter split the aggregates by a hash of aggregate_id, each
# with its own slot and publication, two relays at once, writing one broker
# log. Producers commit while the relays run, some transactions spanning
# both shards. Every committed event is published exactly once across the
# two, each relay only its shard's aggregates, in commit order per
# aggregate. init-db run again keeps each publication's row filter.
ENG_TEST=wal_shards
. "$(dirname "$0")/wal_lib.sh"

fresh_wal_db obx_scale_wal_shards
WRITERS=4 TXNS=40 PER=25 AGGS=60
# shard_cfg K: the config of shard K of 2 (slot and publication of its own)
shard_cfg() {
    cat >"$WORK/shard$1.cfg" <<EOF
database = { conninfo = "\${TEST_DSN}"; };
relay = { drivers_dir = "\${OBX_DRIVERS}"; source = "wal";
          wal = { slot = "${TEST_DB}_s$1"; row_filter = "(hashtext(aggregate_id) & 1) = $1"; }; };
outputs = ( { name = "mem"; driver = "memory"; options = { record_file = "$REC"; }; } );
EOF
}
for k in 0 1; do
    shard_cfg $k
    init_db "$WORK/shard$k.cfg"
done
init_db "$WORK/shard0.cfg" # again: the filter must stay
expect_eq "publications and their row filters" \
    "$(sql "SELECT string_agg(pubname || ':' || rowfilter, ',' ORDER BY pubname) FROM pg_publication_tables WHERE tablename = 'outbox'")" \
    "${TEST_DB}_s0:((hashtext(aggregate_id) & 1) = 0),${TEST_DB}_s1:((hashtext(aggregate_id) & 1) = 1)"

start_relay "$WORK/shard0.cfg" "$WORK/shard0.log"
PID0=$RELAY_PID
start_relay "$WORK/shard1.cfg" "$WORK/shard1.log"
PID1=$RELAY_PID
wait_log "$WORK/shard0.log" "relay starting" 30
wait_log "$WORK/shard1.log" "relay starting" 30

# producers while both relays stream, most transactions spanning both
spanning_writers "$WRITERS" "$TXNS" "$PER" "$AGGS"
TOTAL=$((WRITERS * TXNS * PER))
expect_eq "events committed" "$(sql "SELECT count(*) FROM outbox")" "$TOTAL"
for ((i = 0; i < 300 && $(ok_events) < TOTAL; i++)); do sleep 0.1; done
sleep 1 # a duplicate would come now
stop_relay "$PID0" 30
stop_relay "$PID1" 30

load_record
wal_expected
check_wal_published
check_wal_order
expect_eq "ok lines beyond one per event (published twice)" \
    "$(sql "SELECT count(*) - count(DISTINCT event_id) FROM r WHERE status = 'ok'")" 0
expect_eq "lines that are not ok" "$(sql "SELECT count(*) FROM r WHERE status <> 'ok'")" 0
expect_eq "events published by the other shard's relay" \
    "$(sql "SELECT count(*) FROM r WHERE (hashtext(aggregate_id) & 1) <> CASE pid WHEN $PID0 THEN 0 WHEN $PID1 THEN 1 END
              OR pid NOT IN ($PID0, $PID1)")" 0
split=$(sql "SELECT string_agg(n::text, '/' ORDER BY p) FROM (SELECT pid = $PID1 AS p, count(*) n FROM r GROUP BY 1) x")
[[ $split =~ ^[1-9][0-9]*/[1-9][0-9]*$ ]] || fail "both shards publish: $split"
check_logs_clean
drop_wal_slots
echo "PASS wal_shards: $TOTAL events over $AGGS aggregates, two shards by row filter ($split), each once, in order per aggregate"
