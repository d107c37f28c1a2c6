#!/bin/bash
# The frame end to end (issue 2) with the FILE driver: 10,000 events in
# committed transactions and 1,000 in rolled-back ones (ids chosen by the
# test); `run --drain` writes exactly the 10,000 committed to the file, each
# once, with its headers, payload and destination; `status` then reports 0
# pending, 0 in flight, 0 dead.
ENG_TEST=frame
. "$(dirname "$0")/engine_lib.sh"

fresh_db eng_frame
OUT=$WORK/out.jsonl
cat >"$WORK/relay.cfg" <<EOF
database = { conninfo = "\${TEST_DSN}"; };
relay = { workers = 2; batch_size = 500; drivers_dir = "\${OBX_DRIVERS}"; };
outputs = ( { name = "file"; driver = "file"; options = { path = "$OUT"; }; } );
routes = ( { output = "file"; destination = "orders.\${aggregate_type}.\${event_type}"; } );
EOF
init_db "$WORK/relay.cfg"
for t in 1 2 3 4 5 6 7 8 9 10; do
    sql "BEGIN;
         SELECT count(outbox_enqueue('Order', 'agg-' || (g % 100), 'order.created',
                jsonb_build_object('tx', $t, 'n', g), jsonb_build_object('trace', 'c-' || g)))
         FROM generate_series(1, 1000) g;
         COMMIT;" >/dev/null
    if [ "$t" -le 2 ]; then
        sql "BEGIN;
             INSERT INTO outbox (event_id, aggregate_type, aggregate_id, event_type, payload)
             SELECT md5('rolled-$t-' || g)::uuid, 'Order', 'agg-' || (g % 100), 'order.rolledback', '{}'
             FROM generate_series(1, 500) g;
             ROLLBACK;"
    fi
done
expect_eq "committed rows" "$(sql "SELECT count(*) FROM outbox")" 10000

drain "$WORK/relay.cfg" "$WORK/relay.log" 150
[ -s "$OUT" ] || fail "the file driver wrote nothing"
load_record "$OUT"
expect_eq "lines written" "$(sql "SELECT count(*) FROM r")" 10000
expect_eq "distinct events written" "$(sql "SELECT count(DISTINCT event_id) FROM r")" 10000
expect_eq "committed events missing from the file" \
    "$(sql "SELECT count(*) FROM outbox o WHERE NOT EXISTS (SELECT 1 FROM r WHERE r.event_id = o.event_id)")" 0
expect_eq "rolled-back events in the file" \
    "$(sql "SELECT count(*) FROM rec WHERE j->>'event_type' = 'order.rolledback'
            OR (j->>'event_id')::uuid IN (SELECT md5('rolled-' || t || '-' || g)::uuid
                                          FROM generate_series(1, 2) t, generate_series(1, 500) g)")" 0
expect_eq "lines whose payload, headers or destination differ from the row" \
    "$(sql "SELECT count(*) FROM rec JOIN outbox o ON o.event_id = (rec.j->>'event_id')::uuid
            WHERE rec.j->'payload' IS DISTINCT FROM o.payload OR rec.j->'headers' IS DISTINCT FROM o.headers
            OR rec.j->>'destination' <> 'orders.Order.order.created' OR rec.j->>'aggregate_id' <> o.aggregate_id")" 0
STATUS=$("$OBX_BIN" status -c "$WORK/relay.cfg")
echo "$STATUS" | grep -qE '^pending: +0$' || fail "status: $STATUS"
echo "$STATUS" | grep -qE '^in flight: +0$' || fail "status: $STATUS"
echo "$STATUS" | grep -qE '^dead: +0$' || fail "status: $STATUS"
expect_eq "rows not published" "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NULL")" 0
check_logs_clean
echo "PASS frame_e2e"
