#!/bin/bash
# AMQP properties from templates (issue 30, shaping): type, message_id,
# content_type, priority and expiration of one output set from the row's
# fields (two placeholders, one, a constant); rconsume dumps every message
# and each property is compared with its row. Events whose priority expands
# to 300 or to no number are dead at once with the reason; two routed
# nowhere come back from the broker (mandatory) under a templated message_id
# and are still put down to their own events (dead, NO_ROUTE); the rest are
# delivered. A template with an unknown placeholder, a constant priority of
# 300 and a message_id without ${event_id} fail check-config, naming the
# option. With PROPS_SOURCE=wal (wal_rmq_properties) the same in
# WAL mode.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/rmq_lib.sh"
SOURCE=${PROPS_SOURCE:-poll}
Q=$(rmq_queue props)
X=obx_props_x_$$
trap '"$RCONSUME" "$AMQP_URL" delete "$Q" "$X" >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
if [ "$SOURCE" = wal ]; then
    . "$OBX_SRC/tests/wal/walmode.sh"
    trap '"$RCONSUME" "$AMQP_URL" delete "$Q" "$X" >/dev/null 2>&1 || true; drop_wal_slots; rm -rf "$WORK"' EXIT
    fresh_wal_db rmq_props_wal
else
    fresh_db rmq_props
fi
"$RCONSUME" "$AMQP_URL" declare "$Q" "$X" "props.#" || fail "declare $Q"

# props_cfg FILE [PRIORITY_TEMPLATE]
props_cfg() {
    local priority=${2:-'${aggregate_id}'}
    cat >"$1" <<EOF
database = { conninfo = "\${TEST_DSN}"; };
relay = { drivers_dir = "\${OBX_DRIVERS}"; poll_interval_ms = 100; max_attempts = 5; };
outputs = ( { name = "rabbit"; driver = "rabbitmq";
              options = { url = "$AMQP_URL";
                          type = "\${aggregate_type}.\${event_type}";
                          message_id = "\${aggregate_type}-\${event_id}";
                          content_type = "application/vnd.obx+json";
                          priority = "$priority";
                          expiration = "\${aggregate_id}00000"; }; } );
routes = ( { event_type = "order.lost"; output = "rabbit"; destination = "$X/nowhere.lost"; },
           { event_type = "*"; output = "rabbit"; destination = "$X/props.\${event_type}"; } );
EOF
    [ "$SOURCE" = poll ] || to_wal_mode "$1"
}
props_cfg "$WORK/relay.cfg"
"$OBX_BIN" init-db -c "$WORK/relay.cfg" >/dev/null || fail "init-db"

# a bad template: refused before anything runs, naming the option
# (through the environment: the config file itself refuses an unknown ${...})
props_cfg "$WORK/bad.cfg" '${BAD_TPL}'
if BAD_TPL='x${bogus}' "$OBX_BIN" check-config -c "$WORK/bad.cfg" >"$WORK/bad.out" 2>&1; then
    fail "check-config took priority = \"x\${bogus}\""
fi
grep -q 'priority: unknown placeholder ${bogus}' "$WORK/bad.out" ||
    fail "check-config: no reason naming the option: $(cat "$WORK/bad.out")"
# refuse_cfg SED WANT: the config changed by SED fails check-config with WANT
refuse_cfg() {
    sed "$1" "$WORK/relay.cfg" >"$WORK/bad.cfg"
    ! "$OBX_BIN" check-config -c "$WORK/bad.cfg" >"$WORK/bad.out" 2>&1 || fail "check-config took $1"
    grep -qF "$2" "$WORK/bad.out" || fail "check-config ($1): $(cat "$WORK/bad.out")"
}
refuse_cfg 's/priority = "[^"]*"/priority = "300"/' 'option priority = "300" is not a priority'
refuse_cfg 's/message_id = "[^"]*"/message_id = "${aggregate_id}"/' 'option message_id must contain ${event_id}'

sql "SELECT outbox_enqueue('Order', g::text, CASE WHEN g % 2 = 0 THEN 'order.paid' ELSE 'order.created' END,
        jsonb_build_object('n', g)) FROM generate_series(1, 9) g" >/dev/null
sql "SELECT outbox_enqueue('Order', a, 'order.created', '{}') FROM unnest(ARRAY['300', 'x1']) a" >/dev/null
sql "SELECT outbox_enqueue('Order', g::text, 'order.lost', jsonb_build_object('n', g))
     FROM generate_series(3, 4) g" >/dev/null
sql "SELECT outbox_enqueue('Customer', '7', 'customer.created', '{\"n\": 10}')" >/dev/null
timeout 60 "$OBX_BIN" run -c "$WORK/relay.cfg" --drain 2>"$WORK/relay.log" ||
    { tail -20 "$WORK/relay.log" >&2; fail "relay run --drain"; }

# what each routed row must have been sent with, and what came
sql "SELECT event_id, aggregate_type || '-' || event_id, aggregate_type || '.' || event_type,
            'application/vnd.obx+json', aggregate_id, aggregate_id || '00000'
     FROM outbox WHERE event_type <> 'order.lost' AND aggregate_id NOT IN ('300', 'x1')" | tr '|' '\t' |
    sort >"$WORK/want.tsv"
"$RCONSUME" "$AMQP_URL" dump "$Q" 10 5000 >"$WORK/got.json" || fail "not every message arrived"
jq -r '[.headers.event_id, .message_id, .type, .content_type, (.priority | tostring), .expiration] | @tsv' \
    "$WORK/got.json" | sort >"$WORK/got.tsv"
diff "$WORK/want.tsv" "$WORK/got.tsv" >&2 || fail "properties differ from the rows (< wanted, > received)"

# dead_error AGGREGATE_ID EVENT_TYPE: the dead event's error
dead_error() {
    if [ "$SOURCE" = poll ]; then
        sql "SELECT last_error FROM outbox WHERE aggregate_id = '$1' AND event_type = '$2' AND dead_at IS NOT NULL"
    else
        sql "SELECT dl_error FROM outbox_dead_letter WHERE aggregate_id = '$1' AND event_type = '$2'"
    fi
}
e=$(dead_error 300 order.created)
grep -q 'priority "300" (from "${aggregate_id}") is not a priority (a number from 0 to 255)' <<<"$e" ||
    fail "priority 300: not dead with the reason: '$e'"
e=$(dead_error x1 order.created)
grep -q 'priority "x1" (from "${aggregate_id}") is not a priority' <<<"$e" ||
    fail "priority x1: not dead with the reason: '$e'"
for a in 3 4; do
    e=$(dead_error "$a" order.lost)
    grep -q "NO_ROUTE (exchange '$X', routing key 'nowhere.lost')" <<<"$e" ||
        fail "returned event of aggregate $a: not put down to it: '$e'"
done
! grep -q "basic.return for no unconfirmed message" "$WORK/relay.log" || fail "a return matched no publish"
echo "PASS rmq_properties ($SOURCE)"
