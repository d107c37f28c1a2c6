#!/bin/bash
# A hung Mosquitto holds no relay transaction past relay.max_transaction_ms
# (issue 29). A PRIVATE broker is SIGSTOPped for 60 s (connected, never
# answering) while producers commit 100 events/s; max_attempts = 2, so any
# attempt the hang cost would dead-letter events. No relay transaction older
# than the 5 s default bound (with a margin for a busy machine), a bystander
# table's rows deleted during the hang all removable by VACUUM; after
# SIGCONT every committed event reaches the subscriber, in order per
# aggregate, none dead; the duplicates are printed.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/mqtt_lib.sh"

HANG_S=60
BOUND_MS=5000 # relay.max_transaction_ms, the default
N=7000        # 100 events/s for 70 s: the producers outlast the hang
mq_private sigstop "" true
fresh_db mqtt_e2e_sigstop
CFG=$PMQ_DIR/relay.cfg
mq_relay_cfg "$CFG" "$PMQ_URL" obx/sigstop "max_attempts = 2;"
"$OBX_BIN" init-db -c "$CFG" >/dev/null || fail "init-db"
bystander_make
BROKER=$(cat "$PMQ_DIR/mosquitto/mosquitto.pid")

# the subscriber waits as long as the test may (ctest's 600 s): on a loaded machine
# the producer alone took 460 s, and a subscriber giving up at 400 s failed the test
msub_start sigstop "$PMQ_URL" 'obx/sigstop/#' "$N" -P -T 590 -l 3000
"$OBX_BIN" run -c "$CFG" 2>"$PMQ_DIR/relay.log" &
RELAY=$!
produce_paced $N 50
MQ_BG_PIDS="$MQ_BG_PIDS $RELAY $PRODUCER"
trap 'kill -CONT "$BROKER" 2>/dev/null || true; mq_cleanup' EXIT
hang_round "$BROKER" $N
kill -TERM "$RELAY"
wait "$RELAY" || { tail -30 "$PMQ_DIR/relay.log" >&2; fail "the relay exited non-zero"; }
msub_wait

check_hang_bounded $BOUND_MS
expect_eq "dead rows during the hang" "$DURING" 0
expect_eq "published rows" "$(published_count)" "$N"
expect_eq "dead rows" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 0
echo "PASS mqtt_e2e_sigstop ($N events, hung ${HANG_S}s, oldest transaction ${MAX_XACT_MS} ms," \
     "received $(msub_field unique), duplicates $(msub_field duplicates))"
