# shellcheck shell=bash
# Helpers for the connection churn and failover tests (tests/engine/churn.sh,
# failover.sh, max_connections.sh, tests/wal/churn.sh, tests/wal/failover.sh):
# a RabbitMQ output into a queue of the test's own on the shared broker, a
# producer writing events while the relay runs, a killer of the relay's own
# backends, and the broker-side count (rconsume reads the queue back after the
# run and writes every delivery's event id, compared with the table in SQL).
# Source after engine_lib.sh (or wal_lib.sh).
RCONSUME=${RCONSUME:?RCONSUME must name the rconsume helper}
CHURN_Q=obx_churn_${ENG_TEST}_$$
CHURN_X=obx_churn_x

# failover_pair PORT DB: a private primary on PORT and a synchronous standby
# of it on PORT + 1 (pg1 and pg2 run services.sh on each; cleaned up at
# exit), DB made on the primary, and TEST_DSN naming both hosts with
# target_session_attrs=read-write, as an application's failover conninfo.
failover_pair() {
    P1=$1 P2=$(($1 + 1)) FO_DIR=/tmp/obx-$ENG_TEST
    pg1() { SVC_DIR=$FO_DIR-$P1 PG_PORT=$P1 bash "$SERVICES" "$@"; }
    pg2() { SVC_DIR=$FO_DIR-$P2 PG_PORT=$P2 bash "$SERVICES" "$@"; }
    eng_extra_cleanup() {
        churn_queue_cleanup
        pg1 pg-stop >/dev/null 2>&1 || true
        pg2 pg-stop >/dev/null 2>&1 || true
        rm -rf "$FO_DIR-$P1" "$FO_DIR-$P2"
    }
    for p in pg1 pg2; do $p pg-stop >/dev/null 2>&1 || true; done
    rm -rf "$FO_DIR-$P1" "$FO_DIR-$P2"

    pg1 pg-start
    export PGHOST=127.0.0.1 PGPORT=$P1 PGUSER=postgres PGDATABASE=postgres
    fresh_db "$2"
    pg2 pg-standby "$P1"
    wait_sql "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'" 1 60
    psql -qAt -c "ALTER SYSTEM SET synchronous_standby_names = '*'" -c "SELECT pg_reload_conf()" >/dev/null
    wait_sql "SELECT sync_state FROM pg_stat_replication" sync 30
    export TEST_DSN="host=127.0.0.1,127.0.0.1 port=$P1,$P2 user=postgres dbname=$TEST_DB target_session_attrs=read-write connect_timeout=5"
}

# churn_cfg FILE [RELAY_SETTINGS]: the relay on ${TEST_DSN}, one rabbitmq
# output (exchange, queue and binding declared by the driver).
churn_cfg() {
    cat >"$1" <<CFG
database = { conninfo = "\${TEST_DSN}"; };
relay = { drivers_dir = "\${OBX_DRIVERS}"; workers = 2; batch_size = 200; poll_interval_ms = 200;
          lease_seconds = 5; max_attempts = 1000; ${2:-}
          backoff = { initial_ms = 100; max_ms = 1000; multiplier = 2.0; jitter = 0.2; }; };
outputs = ( { name = "rabbit"; driver = "rabbitmq";
              options = { url = "$AMQP_URL"; declare_exchange = "$CHURN_X"; declare_queue = "$CHURN_Q";
                          bind_routing_key = "churn.$CHURN_Q.#"; }; } );
routes = ( { event_type = "*"; aggregate_type = "*"; output = "rabbit";
             destination = "$CHURN_X/churn.$CHURN_Q.\${event_type}"; } );
CFG
}
churn_queue_cleanup() { "$RCONSUME" "$AMQP_URL" delete "$CHURN_Q" >/dev/null 2>&1 || true; }

# producer_start DSN AGGREGATES BATCH PAUSE [FIRST_K]: writes events in
# transactions of BATCH every PAUSE seconds until $WORK/stop_producer exists
# (FIRST_K: go on after a stopped producer, from PRODUCED_K). The payload's n
# grows with every batch tried (a failed batch's n are never used again), so
# each aggregate's n grow in id order: the consumer's order check. Its
# sessions are named obx_producer (never killed). Counts in $WORK/producer.*;
# the batches committed in $WORK/producer.ok (their k: n from k*BATCH+1).
producer_start() {
    local dsn=$1 aggs=$2 batch=$3 pause=$4 first=${5:-0}
    rm -f "$WORK/stop_producer"
    [ "$first" -gt 0 ] || : >"$WORK/producer.ok"
    (
        k=$first ok=0 failed=0
        while [ ! -e "$WORK/stop_producer" ]; do
            if PGAPPNAME=obx_producer psql -qAt -v ON_ERROR_STOP=1 "$dsn" -c \
                "SELECT count(outbox_enqueue('Order', 'agg-' || (g % $aggs), 'order.created',
                    jsonb_build_object('n', g, 'pad', repeat('x', 100)))) FROM generate_series($((k * batch + 1)), $(((k + 1) * batch))) g" \
                >/dev/null 2>>"$WORK/producer.err"; then
                ok=$((ok + 1))
                echo "$k" >>"$WORK/producer.ok"
            else
                failed=$((failed + 1))
            fi
            k=$((k + 1))
            echo "$ok $failed $k" >"$WORK/producer.count"
            sleep "$pause"
        done
    ) &
    PRODUCER_PID=$!
    ENG_PIDS+=("$PRODUCER_PID")
}
# producer_stop: waits for the producer's last batch; sets PRODUCED_OK (batches
# committed), PRODUCED_FAILED (batches whose commit was refused or unknown)
# and PRODUCED_K (the next batch's k).
producer_stop() {
    touch "$WORK/stop_producer"
    wait "$PRODUCER_PID" || true
    read -r PRODUCED_OK PRODUCED_FAILED PRODUCED_K <"$WORK/producer.count"
}

# kill_loop SECONDS: every 1-5 s, terminates the relay's backends: all of
# them, one at random, or one inside a transaction (looked for up to 2 s),
# or with WAL_KILLS=1 the walsender instead. Sets KILL_ROUNDS, KILLED
# (backends ended), KILLED_IN_TXN (of those, in a transaction at the time),
# KILLED_WALSENDER.
kill_loop() {
    local until=$((SECONDS + $1)) what r try ended in_txn walsenders
    RANDOM=$$
    KILL_ROUNDS=0 KILLED=0 KILLED_IN_TXN=0 KILLED_WALSENDER=0
    local backends="FROM pg_stat_activity WHERE datname = '$TEST_DB' AND application_name LIKE 'outbox-relay%'
                    AND pid <> pg_backend_pid()"
    while [ "$SECONDS" -lt "$until" ]; do
        sleep "$((1 + RANDOM % 4)).$((RANDOM % 10))"
        case $((RANDOM % 3)) in
        0) what="$backends" ;;
        1) what="$backends ORDER BY random() LIMIT 1" ;;
        *) if [ "${WAL_KILLS:-0}" = 1 ]; then
               what="$backends AND backend_type = 'walsender'"
           else
               what="$backends AND xact_start IS NOT NULL AND backend_type <> 'walsender' ORDER BY random() LIMIT 1"
           fi ;;
        esac
        for ((try = 0; try < 40; try++)); do
            r=$(sql "WITH v AS (SELECT pid, xact_start IS NOT NULL AND backend_type <> 'walsender' AS in_txn,
                                       backend_type = 'walsender' AS ws $what)
                     SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)), count(*) FILTER (WHERE in_txn),
                            count(*) FILTER (WHERE ws) FROM v" | tr '|' ' ') || r="0 0 0"
            [ "${r%% *}" = 0 ] || break
            sleep 0.05
        done
        read -r ended in_txn walsenders <<<"$r"
        KILL_ROUNDS=$((KILL_ROUNDS + 1))
        KILLED=$((KILLED + ended)) KILLED_IN_TXN=$((KILLED_IN_TXN + in_txn)) KILLED_WALSENDER=$((KILLED_WALSENDER + walsenders))
        kill -0 "$RELAY_PID" 2>/dev/null || fail "the relay exited during the kills (log: $(tail -3 "$WORK/relay.log"))"
    done
}

# broker_read FILE [EXPECTED]: reads the queue (rconsume checks every
# message's properties and the order of first deliveries per aggregate);
# every delivery's event id into FILE. Without EXPECTED, reads until the
# queue has been quiet for 3 s (the relay stopped before). Sets BROKER_LINE.
broker_read() {
    local rc=0 want=${2:-999999999} idle=20000
    [ -n "${2:-}" ] || idle=3000
    BROKER_LINE=$("$RCONSUME" "$AMQP_URL" read "$CHURN_Q" "$want" "$idle" --ids "$1") || rc=$?
    if [ -n "${2:-}" ] && [ "$rc" -ne 0 ]; then fail "broker-side check failed: $BROKER_LINE"; fi
    expect_eq "consumer: messages with a wrong property ($BROKER_LINE)" "$(sed -n 's/.* bad=\([0-9]*\).*/\1/p' <<<"$BROKER_LINE")" 0
    expect_eq "consumer: order violations ($BROKER_LINE)" "$(sed -n 's/.*order_violations=\([0-9]*\).*/\1/p' <<<"$BROKER_LINE")" 0
}

# broker_compare FILE...: the deliveries of FILEs, in that order, against
# table outbox: none missing, none unknown, and per aggregate the first
# deliveries in id order (the payload's n). Sets BROKER_DUPS.
broker_compare() {
    local f
    sql "DROP TABLE IF EXISTS received; CREATE TABLE received (line bigserial, event_id uuid NOT NULL)"
    for f in "$@"; do
        psql -qAt -v ON_ERROR_STOP=1 -d "$TEST_DB" -c "\\copy received(event_id) FROM '$f'" >/dev/null
    done
    expect_eq "events in the table never received by the broker's consumer" \
        "$(sql "SELECT count(*) FROM outbox o WHERE NOT EXISTS (SELECT 1 FROM received r WHERE r.event_id = o.event_id)")" 0
    expect_eq "events received that are not in the table" \
        "$(sql "SELECT count(*) FROM received r WHERE NOT EXISTS (SELECT 1 FROM outbox o WHERE o.event_id = r.event_id)")" 0
    expect_eq "events first received after a later event of their aggregate" \
        "$(sql "SELECT count(*) FROM (SELECT o.id, lag(o.id) OVER (PARTITION BY o.aggregate_id ORDER BY f.line) AS prev
                FROM (SELECT event_id, min(line) AS line FROM received GROUP BY event_id) f JOIN outbox o USING (event_id)) x
                WHERE prev > id")" 0
    BROKER_DUPS=$(sql "SELECT count(*) - count(DISTINCT event_id) FROM received")
}

# broker_check EXPECTED: broker_read of EXPECTED events, then broker_compare.
broker_check() {
    broker_read "$WORK/received.ids" "$1"
    broker_compare "$WORK/received.ids"
}
