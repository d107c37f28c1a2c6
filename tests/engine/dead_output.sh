#!/bin/bash
# The dead_letter output (SOURCE_MODE=wal: the same in WAL mode). Events go to
# a memory output; those of no route (misc.*) and those whose headers are not
# an object of scalars die. dead_letter publishes them to RabbitMQ once more:
#  1. every dead event reaches the dead-letter queue once, with its error in
#     dead_letter_error (the database's text), dead_letter_attempts and
#     dead_letter_at; <table>_dead_forwarded and
#     outbox_relay_dead_forwarded_total count them; the events stay dead in
#     the database (requeue and purge see them as before);
#  2. with the dead_letter output down (a webhook nobody listens on), the
#     main flow goes on: every new event published, the new dead events
#     wait, the log says why;
#  3. once it is back, the dead events that waited go out, and only they;
#  4. a route with a dead_letter of its own (another output, another queue)
#     takes its route's dead events; the global one takes the rest.
. "$(dirname "$0")/mode_lib.sh" deadout
RCONSUME=${RCONSUME:?RCONSUME must name the rconsume helper}

X=obx_deadout_x
Q=obx_deadout_${MODE}_$$
Q2=obx_deadroute_${MODE}_$$
eng_extra_cleanup() {
    "$RCONSUME" "$AMQP_URL" delete "$Q" >/dev/null 2>&1 || true
    "$RCONSUME" "$AMQP_URL" delete "$Q2" >/dev/null 2>&1 || true
    if [ "$MODE" = wal ] && [ -n "${TEST_DB:-}" ]; then wal_drop_slots "$TEST_DB" || true; fi
}
"$RCONSUME" "$AMQP_URL" declare "$Q" "$X" "dead.$Q.#" || fail "declare $Q"
mode_db deadout
# cfg FILE DLQ_OUTPUT
cfg() {
    cat >"$1" <<EOF
database = { conninfo = "\${TEST_DSN}"; };
relay = { drivers_dir = "\${OBX_DRIVERS}"; poll_interval_ms = 200; workers = 2; batch_size = 50;
          max_attempts = 1; $SOURCE };
metrics = { listen = "127.0.0.1:$PORT"; };
outputs = ( { name = "mem"; driver = "memory"; options = { record_file = "$REC"; }; },
            $2 );
routes = ( { event_type = "order.*"; output = "mem"; destination = "orders"; } );
dead_letter = { output = "dlq"; destination = "$X/dead.$Q.\${event_type}"; };
EOF
}
cfg "$WORK/up.cfg" "{ name = \"dlq\"; driver = \"rabbitmq\"; options = { url = \"$AMQP_URL\"; declare_exchange = \"$X\"; }; }"
cfg "$WORK/down.cfg" "{ name = \"dlq\"; driver = \"webhook\"; options = { url = \"http://127.0.0.1:1/dead\"; timeout_ms = 500; }; }"
init_db "$WORK/up.cfg"

# enqueue N TYPE PREFIX HEADERS_SQL: N events, each of an aggregate of its own, payload {"n": n}
enqueue() {
    sql "SELECT count(outbox_enqueue('Order', '$3-' || g, '$2', jsonb_build_object('n', g), $4))
         FROM generate_series(1, $1) g" >/dev/null
}
dead_count() {
    if [ "$MODE" = wal ]; then sql "SELECT count(*) FROM outbox_dead_letter"
    else sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL"; fi
}
# the dead events as (event_id, error), in table dead
dead_table() {
    if [ "$MODE" = wal ]; then
        sql "DROP TABLE IF EXISTS dead; CREATE TABLE dead AS SELECT event_id::text, dl_error AS error FROM outbox_dead_letter"
    else
        sql "DROP TABLE IF EXISTS dead; CREATE TABLE dead AS SELECT event_id::text, last_error AS error FROM outbox WHERE dead_at IS NOT NULL"
    fi >/dev/null
}
forwarded() { sql "SELECT count(*) FROM outbox_dead_forwarded"; }

# ---- 1. forwarded once, with why
start_relay "$WORK/up.cfg" "$WORK/relay.log"
enqueue 50 order.created ok "NULL"
enqueue 10 misc.thing misc "NULL"
enqueue 5 order.created badh "jsonb_build_object('nested', jsonb_build_object('a', 1))"
wait_sql "SELECT count(*) FROM outbox_dead_forwarded" 15 60
r=$("$RCONSUME" "$AMQP_URL" read "$Q" 15 5000 --ids "$WORK/got1.tsv" --id-header dead_letter_error) ||
    { echo "$r"; fail "dead-letter queue: consumer checks failed"; }
echo "1: $r"
expect_eq "dead events" "$(dead_count)" 15
dead_table
sql "CREATE TABLE got (event_id text, error text)" >/dev/null
sql "COPY got FROM STDIN" <"$WORK/got1.tsv"
expect_eq "dead-letter messages whose dead_letter_error is the database's" \
    "$(sql "SELECT count(DISTINCT g.event_id) FROM got g JOIN dead d ON d.event_id = g.event_id AND d.error = g.error")" 15
expect_eq "misc events: no route" "$(sql "SELECT count(*) FROM got WHERE error LIKE 'no route matches%'")" 10
scrape "$WORK/m1.txt"
expect_eq "outbox_relay_dead_forwarded_total" "$(value "$WORK/m1.txt" outbox_relay_dead_forwarded_total)" 15
expect_eq "published to the dead-letter output (its own counter)" \
    "$(value "$WORK/m1.txt" 'outbox_relay_output_published_total{output="dlq"}')" 15
stop_relay "$RELAY_PID" 30

# ---- 2. the dead-letter output down: the main flow goes on
: >"$WORK/relay2.log"
start_relay "$WORK/down.cfg" "$WORK/relay2.log"
enqueue 100 order.created more "NULL"
enqueue 5 misc.other misc2 "NULL"
for ((i = 0; i < 600; i++)); do
    [ "$(dead_count)" = 20 ] && [ "$(grep -c '"status":"ok"' "$REC")" -ge 150 ] && break
    sleep 0.1
done
expect_eq "events published while the dead-letter output is down" \
    "$(load_record; sql "SELECT count(DISTINCT event_id) FROM r WHERE status = 'ok'")" 150
expect_eq "dead events" "$(dead_count)" 20
wait_log "$WORK/relay2.log" "dead-letter output dlq: .* not acknowledged" 60
expect_eq "forwarded while it was down" "$(forwarded)" 15
stop_relay "$RELAY_PID" 30

# ---- 3. back: what waited goes out, and only that
start_relay "$WORK/up.cfg" "$WORK/relay3.log"
wait_sql "SELECT count(*) FROM outbox_dead_forwarded" 20 60
r=$("$RCONSUME" "$AMQP_URL" read "$Q" 5 5000 --ids "$WORK/got3.tsv" --id-header dead_letter_error) ||
    { echo "$r"; fail "dead-letter queue after the outage: consumer checks failed"; }
echo "3: $r"
dead_table
sql "CREATE TABLE got3 (event_id text, error text)" >/dev/null
sql "COPY got3 FROM STDIN" <"$WORK/got3.tsv"
expect_eq "the dead events that waited, with their errors, none sent before" \
    "$(sql "SELECT count(*) FROM got3 g JOIN dead d USING (event_id) WHERE d.error = g.error
              AND g.event_id NOT IN (SELECT event_id FROM got)")" 5
stop_relay "$RELAY_PID" 30

# ---- 4. a route's own dead_letter, on an output of its own
"$RCONSUME" "$AMQP_URL" declare "$Q2" "$X" "routedead.$Q2.#" || fail "declare $Q2"
cat >"$WORK/route.cfg" <<EOF
database = { conninfo = "\${TEST_DSN}"; };
relay = { drivers_dir = "\${OBX_DRIVERS}"; poll_interval_ms = 200; workers = 2; batch_size = 50;
          max_attempts = 1; $SOURCE };
outputs = ( { name = "mem"; driver = "memory"; options = { record_file = "$REC"; }; },
            { name = "dlq"; driver = "rabbitmq"; options = { url = "$AMQP_URL"; declare_exchange = "$X"; }; },
            { name = "orders-dlq"; driver = "rabbitmq"; options = { url = "$AMQP_URL"; declare_exchange = "$X"; }; } );
routes = ( { event_type = "order.*"; output = "mem"; destination = "orders";
             dead_letter = { output = "orders-dlq"; destination = "$X/routedead.$Q2.\${aggregate_id}"; }; } );
dead_letter = { output = "dlq"; destination = "$X/dead.$Q.\${event_type}"; };
EOF
start_relay "$WORK/route.cfg" "$WORK/relay4.log"
enqueue 4 order.created badr "jsonb_build_object('nested', jsonb_build_object('a', 1))"
enqueue 3 misc.third misc3 "NULL"
wait_sql "SELECT count(*) FROM outbox_dead_forwarded" 27 60
r=$("$RCONSUME" "$AMQP_URL" read "$Q2" 4 5000 --ids "$WORK/got4.tsv" --id-header dead_letter_error) ||
    { echo "$r"; fail "the route's dead-letter queue: consumer checks failed"; }
r2=$("$RCONSUME" "$AMQP_URL" read "$Q" 3 5000 --ids "$WORK/got5.tsv" --id-header dead_letter_error) ||
    { echo "$r2"; fail "the global dead-letter queue: consumer checks failed"; }
echo "4: $r / $r2"
sql "CREATE TABLE got4 (event_id text, error text); CREATE TABLE got5 (event_id text, error text)" >/dev/null
sql "COPY got4 FROM STDIN" <"$WORK/got4.tsv"
sql "COPY got5 FROM STDIN" <"$WORK/got5.tsv"
dead_table
expect_eq "the route's dead events, on its own output" \
    "$(sql "SELECT count(*) FROM got4 g JOIN dead d USING (event_id) WHERE d.error = g.error AND d.error LIKE 'header %nested%'")" 4
expect_eq "the others, on the global one" \
    "$(sql "SELECT count(*) FROM got5 g JOIN dead d USING (event_id) WHERE d.error = g.error AND d.error LIKE 'no route matches%'
              AND g.event_id NOT IN (SELECT event_id FROM got UNION SELECT event_id FROM got3)")" 3
stop_relay "$RELAY_PID" 30
echo "PASS dead_output ($MODE: 15 dead forwarded with their errors; the main flow went on with the output down; 5 more once back; a route's own dead_letter took its 4, the global one the other 3)"
