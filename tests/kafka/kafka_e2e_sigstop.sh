#!/bin/bash
# A hung Kafka holds no relay transaction past relay.max_transaction_ms
# (issue 29). A PRIVATE mock cluster is SIGSTOPped for 60 s (its brokers
# connected, never answering) while producers commit 100 events/s;
# max_attempts = 2, so any attempt the hang cost would dead-letter events.
# No relay transaction older than the 5 s default bound (with a margin for a
# busy machine), a bystander table's rows deleted during the hang all
# removable by VACUUM; after SIGCONT every committed event is in the topic,
# first deliveries in order per aggregate, none dead; duplicates printed.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/kafka_lib.sh"

HANG_S=60
BOUND_MS=5000 # relay.max_transaction_ms, the default
N=7000        # 100 events/s for 70 s: the producers outlast the hang
topic=kt.sigstop
kmock_start "$topic:6"
fresh_db kt_e2e_sigstop
write_relay_cfg "$WORK/relay.cfg" "$KM_BOOTSTRAP" "$topic" 2
sed -i 's/max_attempts = 1000;/max_attempts = 2;/' "$WORK/relay.cfg"
"$OBX_BIN" init-db -c "$WORK/relay.cfg" >/dev/null || fail "init-db"
bystander_make

"$KCONSUME" -b "$KM_BOOTSTRAP" -t "$topic" -n "$N" -i 200000 -k -h seq >"$WORK/got" 2>"$WORK/consumer.err" &
consumer=$!
"$OBX_BIN" run -c "$WORK/relay.cfg" 2>"$WORK/relay.log" &
relay=$!
produce_paced $N 50
trap 'kill -CONT "$KM_PID" 2>/dev/null || true; kill "$relay" "$PRODUCER" "$consumer" 2>/dev/null || true; cleanup' EXIT
hang_round "$KM_PID" $N
kill -TERM "$relay"
wait "$relay" || { tail -30 "$WORK/relay.log" >&2; fail "the relay exited non-zero"; }
wait "$consumer" || { cat "$WORK/consumer.err" >&2; fail "consumer checks failed"; }

check_hang_bounded $BOUND_MS
expect_eq "dead rows during the hang" "$DURING" 0
expect_eq "published rows" "$(published_count)" "$N"
expect_eq "dead rows" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 0
sql "SELECT event_id FROM outbox" >"$WORK/ids"
check_delivery "$WORK/ids" "$WORK/got"
awk -F'\t' '!seen[$4]++' "$WORK/got" >"$WORK/first"
check_order "$WORK/first" 5 3
echo "PASS kafka_e2e_sigstop ($N events, hung ${HANG_S}s, oldest transaction ${MAX_XACT_MS} ms, $DUPS duplicates)"
