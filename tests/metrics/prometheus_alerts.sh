#!/bin/bash
# The shipped alert rules in a real Prometheus (Debian's package) scraping a
# running relay every second: the output goes down (the memory driver's
# unavailable_file) while events wait, OutboxRelayOutputDown goes pending,
# then firing after its `for` (1 m), and resolves once the output is back and
# the events are published. Every dashboard query is also run by this
# Prometheus (its variables set): each must parse and evaluate.
ENG_TEST=prom_alerts
. "$(dirname "$0")/../engine/engine_lib.sh"
MC=${METRICS_CLIENT:?METRICS_CLIENT must name the metrics_client executable}
PORT=$("$MC" freeport)
# a fixed port in the range tests/run.sh reserves: two ephemeral ones picked
# in a row can be the same, or taken by a connection before Prometheus binds
PROM_PORT=${PROMETHEUS_TEST_PORT:-$(free_ports 1)}
PROM=http://127.0.0.1:$PROM_PORT

fresh_db prom_alerts
write_cfg "$WORK/relay.cfg" "workers = 1;" "unavailable_file = \"$WORK/down\";" \
    "metrics = { listen = \"127.0.0.1:$PORT\"; };"
init_db "$WORK/relay.cfg"
start_relay "$WORK/relay.cfg" "$WORK/relay.log"
RELAY=$RELAY_PID

cat >"$WORK/prometheus.yml" <<EOF2
global: { scrape_interval: 1s, evaluation_interval: 1s }
rule_files: ["$OBX_SRC/conf/prometheus/outbox-relay.rules.yml"]
scrape_configs:
  - job_name: outbox-relay
    static_configs: [ { targets: ["127.0.0.1:$PORT"] } ]
EOF2
prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
    --web.listen-address="127.0.0.1:$PROM_PORT" >"$WORK/prometheus.log" 2>&1 &
PROM_PID=$!
eng_extra_cleanup() { kill "$PROM_PID" 2>/dev/null || true; }

# query PROMQL: the first sample's value ("" when none); fails on an error
query() {
    local r
    r=$(curl -sf --get "$PROM/api/v1/query" --data-urlencode "query=$1") || fail "query failed: $1: $(curl -s --get "$PROM/api/v1/query" --data-urlencode "query=$1")"
    [ "$(jq -r .status <<<"$r")" = success ] || fail "query $1: $r"
    jq -r '.data.result[0].value[1] // ""' <<<"$r"
}
# alert_state NAME: pending, firing, or "" (inactive)
alert_state() { curl -sf "$PROM/api/v1/alerts" | jq -r --arg n "$1" '[.data.alerts[] | select(.labels.alertname == $n) | .state][0] // ""'; }
# wait_for WHAT SECONDS CMD...: until CMD succeeds
wait_for() {
    local what=$1 i
    for ((i = 0; i < $2 * 5; i++)); do "${@:3}" && return 0; sleep 0.2; done
    fail "waited $2 s for $what (log: $(tail -3 "$WORK/prometheus.log"))"
}
scraped() { [ "$(query 'up{job="outbox-relay"}' 2>/dev/null)" = 1 ]; }
wait_for "Prometheus to scrape the relay" 60 scraped
[ "$(curl -sf "$PROM/api/v1/rules" | jq '[.data.groups[].rules[]] | length')" -eq 8 ] || fail "Prometheus did not load the 8 rules"

n=0
while read -r expr; do
    expr=${expr//\$__rate_interval/1m}
    expr=${expr//\$instance/.*}
    query "${expr//\$job/outbox-relay}" >/dev/null
    n=$((n + 1))
done < <(jq -r '.. | .expr? // empty' "$OBX_SRC/conf/grafana/outbox-relay.json")
note "$n dashboard queries evaluated"

touch "$WORK/down"
enqueue_bulk 50 5
is_state() { [ "$(alert_state OutboxRelayOutputDown)" = "$1" ]; }
wait_for "the alert to go pending" 60 is_state pending
expect_eq "output_up seen by Prometheus" "$(query 'outbox_relay_output_up{output="mem"}')" 0
wait_for "the alert to fire" 150 is_state firing
# seen firing only after it is, so this is never less than the truth
ACTIVE_AT=$(curl -sf "$PROM/api/v1/alerts" | jq -r '.data.alerts[] | select(.labels.alertname == "OutboxRelayOutputDown") | .activeAt')
FIRED_AFTER=$(($(date +%s) - $(date -d "$ACTIVE_AT" +%s)))
note "pending since $ACTIVE_AT, seen firing $FIRED_AFTER s later"
[ "$FIRED_AFTER" -ge 59 ] || fail "firing $FIRED_AFTER s after it went pending: its for (1 m) was not kept"
expect_eq "published while the output is down" "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL")" 0

rm "$WORK/down"
wait_for "the alert to resolve" 120 is_state ""
wait_sql "SELECT count(*) FROM outbox WHERE published_at IS NULL" 0 60
expect_eq "output_up seen by Prometheus after" "$(query 'outbox_relay_output_up{output="mem"}')" 1
stop_relay "$RELAY" 30
echo "PASS prometheus_alerts: OutboxRelayOutputDown pending, seen firing $FIRED_AFTER s later, resolved; $n dashboard queries evaluated"
