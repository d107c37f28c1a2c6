#!/bin/bash
# aggregate_seq through a real broker, in poll mode or (argument "wal") WAL
# mode: 8 writers at once, each 150 transactions of two events on two of 12
# aggregates (in a consistent order, as the README asks), one transaction in
# ten rolled back. A Kafka consumer of its own (kconsume, a private mock
# cluster) reads the aggregate_seq and event_version headers: the first
# delivery of each event, per aggregate, numbers exactly 1..n with no gap and
# no repeat (n = the aggregate's committed events), in order within its
# partition. In WAL mode every fifth event is an outbox_emit (no row left).
MODE=${1:-poll}
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../kafka/kafka_lib.sh"
. "$(dirname "$0")/../wal/walmode.sh"

WRITERS=8 TXNS=150 AGGS=12
topic=kt.seq
kmock_start "$topic:4"
fresh_wal_db "eng_seq_$MODE"
write_relay_cfg "$WORK/relay.cfg" "$KM_BOOTSTRAP" "$topic" 2
[ "$MODE" = wal ] && to_wal_mode "$WORK/relay.cfg"
"$OBX_BIN" init-db -c "$WORK/relay.cfg" >/dev/null || fail "init-db"
"$OBX_BIN" init-db -c "$WORK/relay.cfg" >/dev/null || fail "init-db again"
sql "CREATE TABLE committed (event_id uuid, aggregate_id text)"

use_emit=false
[ "$MODE" = wal ] && use_emit=true
# one writer: each transaction records its event ids beside its events, so
# what committed is known in both modes (outbox_emit leaves no row)
writer() {
    psql -qAt -v ON_ERROR_STOP=1 -d "$TEST_DB" -c "DO \$\$ DECLARE a int; b int; e uuid; f uuid; BEGIN
      FOR i IN 1..$TXNS LOOP
        a := floor(random() * $((AGGS - 1)))::int;
        b := a + 1 + floor(random() * ($((AGGS - 1)) - a))::int;
        IF $use_emit AND random() < 0.2 THEN
          e := outbox_emit('Order', 'agg-' || a, 'order.changed', jsonb_build_object('w', $1, 'i', i), p_event_version => '2');
        ELSE
          e := outbox_enqueue('Order', 'agg-' || a, 'order.changed', jsonb_build_object('w', $1, 'i', i), p_event_version => '2');
        END IF;
        f := outbox_enqueue('Order', 'agg-' || b, 'order.changed', jsonb_build_object('w', $1, 'i', i), p_event_version => '2');
        INSERT INTO committed VALUES (e, 'agg-' || a), (f, 'agg-' || b);
        IF random() < 0.1 THEN ROLLBACK; ELSE COMMIT; END IF;
      END LOOP; END \$\$" >"$WORK/writer$1.out" 2>&1
}
pids=()
for ((w = 1; w <= WRITERS; w++)); do writer $w & pids+=($!); done
for p in "${pids[@]}"; do wait "$p" || fail "a writer failed: $(cat "$WORK"/writer*.out | head -3)"; done
N=$(sql "SELECT count(*) FROM committed")
ROLLED=$((WRITERS * TXNS * 2 - N))
[ "$ROLLED" -gt 0 ] || fail "no transaction rolled back"

# columns: partition offset key event_id aggregate_seq event_version
"$KCONSUME" -b "$KM_BOOTSTRAP" -t "$topic" -n "$N" -i 60000 -k -h aggregate_seq -h event_version \
    >"$WORK/got" 2>"$WORK/consumer.err" &
consumer=$!
timeout 300 "$OBX_BIN" run -c "$WORK/relay.cfg" --drain 2>"$WORK/relay.log" || { tail -20 "$WORK/relay.log" >&2; fail "relay run --drain"; }
wait "$consumer" || { cat "$WORK/consumer.err" >&2; fail "consumer checks failed"; }
[ "$MODE" = wal ] && drop_wal_slots

sql "CREATE TABLE got (part int, off bigint, key text, event_id uuid, seq text, version text)"
psql -qAt -v ON_ERROR_STOP=1 -d "$TEST_DB" -c "\copy got FROM '$WORK/got'" || fail "loading what was consumed"
expect_eq "committed events never consumed" "$(sql "SELECT count(*) FROM committed c WHERE NOT EXISTS (SELECT 1 FROM got g WHERE g.event_id = c.event_id)")" 0
expect_eq "consumed events never committed" "$(sql "SELECT count(*) FROM got g WHERE NOT EXISTS (SELECT 1 FROM committed c WHERE g.event_id = c.event_id)")" 0
expect_eq "events whose copies disagree on aggregate_seq" "$(sql "SELECT count(*) FROM (SELECT event_id FROM got GROUP BY 1 HAVING count(DISTINCT seq) > 1) x")" 0
expect_eq "messages without aggregate_seq 1.. or event_version 2" "$(sql "SELECT count(*) FROM got WHERE seq !~ '^[1-9][0-9]*$' OR version IS DISTINCT FROM '2'")" 0
# per aggregate, over the events' first deliveries: 1..n, n its committed events
expect_eq "aggregates with a gap or a repeat" "$(sql "WITH f AS (SELECT DISTINCT ON (event_id) key, seq::bigint AS seq FROM got ORDER BY event_id, part, off)
    SELECT count(*) FROM (SELECT key, count(*) n, count(DISTINCT seq) d, min(seq) lo, max(seq) hi FROM f GROUP BY key) a
    WHERE n <> d OR lo <> 1 OR hi <> n OR n <> (SELECT count(*) FROM committed c WHERE c.aggregate_id = a.key)")" 0
expect_eq "aggregates consumed" "$(sql "SELECT count(DISTINCT key) FROM got")" "$(sql "SELECT count(DISTINCT aggregate_id) FROM committed")"
DUPS=$(sql "SELECT count(*) - count(DISTINCT event_id) FROM got")
awk -F'\t' '!seen[$4]++' "$WORK/got" >"$WORK/first"
check_order "$WORK/first" 5 3
if [ "$MODE" = poll ]; then
    expect_eq "rows whose aggregate_seq differs from the broker's" "$(sql "SELECT count(*) FROM outbox o JOIN got g USING (event_id) WHERE o.aggregate_seq::text <> g.seq")" 0
fi
echo "PASS aggregate_seq $MODE ($N events committed by $WRITERS writers, $ROLLED rolled back, $(sql "SELECT count(DISTINCT key) FROM got") aggregates numbered 1..n on the broker, $DUPS duplicates)"
