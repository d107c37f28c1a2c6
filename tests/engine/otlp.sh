#!/bin/bash
# Tracing (SOURCE_MODE=wal: the same in WAL mode): with tracing.otlp_endpoint
# set, each publish of an event whose headers carry a valid W3C traceparent
# is a span sent as OTLP/HTTP JSON to a stand-in collector. 20 such events
# published, 2 refused for good (poison), 5 without a traceparent and 1 with
# a malformed one: 22 spans, each a child of its row's span (trace id and
# parent span id from the traceparent), kind PRODUCER, named "publish
# <destination>", with the event id, destination and driver as attributes,
# status OK or ERROR with the driver's reason, under the configured
# service.name; none for the others. A non-http endpoint is refused at start.
. "$(dirname "$0")/mode_lib.sh" otlp
python3 "$(dirname "$0")/otlp_collector.py" "$WORK/spans.jsonl" "$WORK/collector.port" &
COLLECTOR=$!
eng_extra_cleanup() {
    kill "$COLLECTOR" 2>/dev/null || true
    if [ "$MODE" = wal ] && [ -n "${TEST_DB:-}" ]; then wal_drop_slots "$TEST_DB" || true; fi
}
for ((i = 0; i < 100; i++)); do [ -s "$WORK/collector.port" ] && break; sleep 0.1; done
CPORT=$(cat "$WORK/collector.port") || fail "the collector did not start"

mode_db otlp
cat >"$WORK/relay.cfg" <<EOF
database = { conninfo = "\${TEST_DSN}"; };
relay = { drivers_dir = "\${OBX_DRIVERS}"; poll_interval_ms = 100; max_attempts = 1; $SOURCE };
tracing = { otlp_endpoint = "http://127.0.0.1:$CPORT/v1/traces"; service_name = "shop-relay"; };
outputs = ( { name = "mem"; driver = "memory";
              options = { record_file = "$REC"; permanent_event_type = "order.poison"; }; } );
routes = ( { output = "mem"; destination = "orders.\${aggregate_id}"; } );
EOF
init_db "$WORK/relay.cfg"
sql "SELECT count(outbox_enqueue('Order', 'o' || (g % 4), CASE WHEN g > 20 THEN 'order.poison' ELSE 'order.created' END,
       jsonb_build_object('n', g),
       jsonb_build_object('traceparent', '00-' || lpad(to_hex(4096 + g), 32, 'a') || '-' || lpad(to_hex(g), 16, 'b') || '-01',
                          'tracestate', 'k=v')))
     FROM generate_series(1, 22) g;
     SELECT count(outbox_enqueue('Order', 'x', 'order.created', '{}')) FROM generate_series(1, 5);
     SELECT outbox_enqueue('Order', 'y', 'order.created', '{}', '{\"traceparent\": \"00-nothex-01\"}')" >/dev/null
drain "$WORK/relay.cfg" "$WORK/relay.log" 120
grep -q "tracing: a span per publish" "$WORK/relay.log" || fail "no tracing line in the log"

# one line per span: event id, trace id, parent id, name, kind, status, message, start <= end, system, destination
jq -r '.resourceSpans[] | (.resource.attributes[] | select(.key == "service.name") | .value.stringValue) as $svc
       | .scopeSpans[].spans[] | (.attributes | map({(.key): .value.stringValue}) | add) as $a
       | [$a["messaging.message.id"], .traceId, .parentSpanId, .name, .kind, .status.code,
          (.status.message // ""), ((.startTimeUnixNano | tonumber) <= (.endTimeUnixNano | tonumber)),
          $a["messaging.system"], $a["messaging.destination.name"], $svc, (.spanId | length)] | @tsv' \
    "$WORK/spans.jsonl" | sort >"$WORK/spans.got" || fail "spans: $(head -c 300 "$WORK/spans.jsonl")"
sql "SELECT event_id, substr(headers->>'traceparent', 4, 32), substr(headers->>'traceparent', 37, 16),
            'publish orders.' || aggregate_id, 4, CASE WHEN event_type = 'order.poison' THEN 2 ELSE 1 END,
            CASE WHEN event_type = 'order.poison' THEN 'rejected by memory driver' ELSE '' END, 'true', 'memory',
            'orders.' || aggregate_id, 'shop-relay', 16
     FROM outbox WHERE headers->>'traceparent' LIKE '00-a%' ORDER BY 1" | tr '|' '\t' | sort >"$WORK/spans.want"
expect_eq "spans" "$(wc -l <"$WORK/spans.got")" 22
diff "$WORK/spans.want" "$WORK/spans.got" >&2 || fail "spans differ from the rows (want < > got)"

# an endpoint that is not an http URL: refused with file and line
sed "s|otlp_endpoint = \"http://|otlp_endpoint = \"ftp://|" "$WORK/relay.cfg" >"$WORK/bad.cfg"
if "$OBX_BIN" check-config -c "$WORK/bad.cfg" >"$WORK/bad.out" 2>&1; then fail "an ftp endpoint was accepted"; fi
grep -q 'bad.cfg:3: .*tracing.otlp_endpoint "ftp://.*must be an http:// or https:// URL' "$WORK/bad.out" ||
    fail "no reason for the bad endpoint: $(cat "$WORK/bad.out")"
echo "PASS otlp ($MODE: 22 spans, each the child of its row's traceparent, 2 with the driver's refusal; none for 6 events without a valid one)"
