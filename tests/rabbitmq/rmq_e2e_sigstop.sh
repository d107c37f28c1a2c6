#!/bin/bash
# A hung RabbitMQ holds no relay transaction past relay.max_transaction_ms
# (issue 29). A PRIVATE broker is SIGSTOPped for 60 s (connected, never
# answering) while producers commit 100 events/s; max_attempts = 2, so any
# attempt the hang cost would dead-letter events. Throughout, the relay's
# sessions are sampled in pg_stat_activity: no transaction older than the
# 5 s default bound (with a margin for a busy machine). Rows of a bystander
# table deleted during the hang are all removable by VACUUM before the broker
# wakes. After SIGCONT: every committed event reaches the consumer, in order
# per aggregate, none dead; the duplicates are printed.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/rmq_lib.sh"
priv_start
HANG_S=60
BOUND_MS=5000 # relay.max_transaction_ms, the default
N=7000        # 100 events/s for 70 s: the producers outlast the hang
Q=$(rmq_queue e2e_sigstop)
fresh_db rmq_e2e_sigstop
write_relay_cfg "$WORK/relay.cfg" "$PRIV_URL" "$Q" "declare_queue = \"$Q\";" 2
"$OBX_BIN" init-db -c "$WORK/relay.cfg" >/dev/null || fail "init-db"
bystander_make
BROKER=$(cat "/tmp/obx-rmqfault-$$/rabbitmq/rabbit.pid")

"$OBX_BIN" run -c "$WORK/relay.cfg" 2>"$WORK/relay.log" &
RELAY=$!
produce_paced $N 50
trap 'kill -CONT "$BROKER" 2>/dev/null || true; kill "$RELAY" "$PRODUCER" 2>/dev/null || true; priv stop >/dev/null 2>&1 || true;
      rm -rf /tmp/obx-rmqfault-$$ "$WORK"' EXIT
hang_round "$BROKER" $N
kill -TERM "$RELAY"
wait "$RELAY" || { tail -30 "$WORK/relay.log" >&2; fail "the relay exited non-zero"; }

check_hang_bounded $BOUND_MS
expect_eq "dead rows during the hang" "$DURING" 0
expect_eq "published rows" "$(published_count)" "$N"
expect_eq "dead rows" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 0
r=$("$RCONSUME" "$PRIV_URL" read "$Q" "$N" 10000 --header-n seq "") || { echo "$r"; fail "consumer checks failed"; }
echo "$r"
echo "PASS rmq_e2e_sigstop ($N events, hung ${HANG_S}s, oldest transaction ${MAX_XACT_MS} ms, duplicates $(field duplicates "$r"))"
