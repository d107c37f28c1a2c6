#!/bin/bash
# A graceful stop while Mosquitto hangs (SIGSTOP) with big publishes still
# queued in paho: the relay gives the batch back within its shutdown timeout
# and exits 0 with no sanitizer report (paho 1.3.12 leaves the queued
# publishes in its own heap records at destroy; once the driver was
# unmapped, LeakSanitizer reported them and the relay exited 134). Nothing
# is lost: every row is still pending, and a second relay publishes them all
# once the broker is back.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/mqtt_lib.sh"

N=150
mq_private stophung
fresh_db mqtt_stop_hung
CFG=$PMQ_DIR/relay.cfg
mq_relay_cfg "$CFG" "$PMQ_URL" obx/stophung "shutdown_timeout_ms = 2000; max_transaction_ms = 60000;"
"$OBX_BIN" init-db -c "$CFG" >/dev/null || fail "init-db"
BROKER=$(cat "$PMQ_DIR/mosquitto/mosquitto.pid")

"$OBX_BIN" run -c "$CFG" 2>"$PMQ_DIR/relay.log" &
RELAY_PID=$!
MQ_BG_PIDS="${MQ_BG_PIDS:-} $RELAY_PID"
connected() { grep -c 'connected to' "$PMQ_DIR/relay.log"; }
for _ in $(seq 100); do [ "$(connected)" -ge 2 ] && break; sleep 0.1; done
[ "$(connected)" -ge 2 ] || fail "the relay's outputs did not connect"
kill -STOP "$BROKER"
trap 'kill -CONT "$BROKER" 2>/dev/null; mq_cleanup' EXIT
# 200 kB each: more than the socket buffers hold, so paho still queues most
sql "SELECT count(outbox_enqueue('Doc', 'doc-' || g, 'doc.saved',
         jsonb_build_object('body', repeat('x', 200000))))
     FROM generate_series(1, $N) g" >/dev/null
# a batch in flight holds its claim's transaction open (the lease)
in_flight() { sql "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
                   AND state = 'idle in transaction'"; }
for _ in $(seq 100); do [ "$(in_flight)" -ge 1 ] && break; sleep 0.1; done
[ "$(in_flight)" -ge 1 ] || fail "no batch in flight"
sleep 1
kill -TERM "$RELAY_PID"
rc=0
wait "$RELAY_PID" || rc=$?
kill -CONT "$BROKER"
reports=$(grep -c 'Sanitizer\|runtime error' "$PMQ_DIR/relay.log" || true)
if [ "$rc" -ne 0 ] || [ "$reports" -ne 0 ]; then
    tail -30 "$PMQ_DIR/relay.log"
    fail "relay exited $rc with $reports sanitizer report lines"
fi
grep -q "still in flight are released" "$PMQ_DIR/relay.log" ||
    fail "the stop did not give the batch back"
recorded=$(sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL OR dead_at IS NOT NULL")
expect_eq "rows recorded by the stopped relay" "$recorded" 0

msub_start stophung "$PMQ_URL" 'obx/stophung/#' "$N" -T 120
"$OBX_BIN" run -c "$CFG" --drain >>"$PMQ_DIR/relay.log" 2>&1 || fail "relay run --drain failed"
msub_wait
published=$(sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL")
expect_eq "published rows" "$published" "$N"
expect_eq "received" "$(msub_field unique)" "$N"
echo "PASS mqtt_stop_hung"
