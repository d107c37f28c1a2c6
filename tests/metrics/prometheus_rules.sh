#!/bin/bash
# The shipped alerts and dashboard, checked without a server: promtool checks
# the rules file and runs its unit tests (each alert fires after its `for` on
# the series that should fire it, and stays quiet on its near miss); every
# metric the rules and the dashboard query is one the relay exports (the
# names in core/ops/metrics_render.c and the sources' own *_metrics.c; histograms by
# their _bucket series).
set -euo pipefail
SRC=${OBX_SRC:?OBX_SRC must name the source tree}
fail() { echo "FAIL: $*" >&2; exit 1; }
RULES=$SRC/conf/prometheus/outbox-relay.rules.yml
DASH=$SRC/conf/grafana/outbox-relay.json

promtool check rules "$RULES" || fail "promtool check rules"
(cd "$SRC/conf/prometheus" && promtool test rules outbox-relay.rules.test.yml) || fail "promtool test rules"

exported=$(grep -ohE '"outbox_relay_[a-z_]+"' "$SRC"/core/ops/metrics_render.c "$SRC"/core/*/*_metrics.c | tr -d '"' | sort -u)
[ "$(echo "$exported" | wc -l)" -ge 20 ] || fail "found only $(echo "$exported" | wc -l) metric names in metrics_render.c"
# used FILE: the outbox_relay_* names FILE queries, histogram suffixes cut
used() { grep -ohE 'outbox_relay_[a-z_]+' "$1" | sed -E 's/_(bucket|sum|count)$//' | sort -u; }

QUERIES=$(mktemp)
trap 'rm -f "$QUERIES"' EXIT
jq -r '.. | .expr? // empty' "$DASH" >"$QUERIES" || fail "the dashboard is not JSON"
[ "$(wc -l <"$QUERIES")" -ge 10 ] || fail "the dashboard has only $(wc -l <"$QUERIES") queries"
for f in "$RULES" "$QUERIES"; do
    unknown=$(comm -23 <(used "$f") <(echo "$exported"))
    [ -z "$unknown" ] || fail "queried but not exported: $unknown"
done
jq -e '[.panels[].targets[] | select(.expr == "")] | length == 0' "$DASH" >/dev/null || fail "a dashboard target has no query"
# each alert's runbook is a section of docs/troubleshooting.md
TROUBLE=$SRC/docs/troubleshooting.md
for a in $(sed -n 's/^ *- alert: //p' "$RULES"); do
    slug=$(echo "$a" | tr 'A-Z' 'a-z')
    grep -q "runbook_url: \"docs/troubleshooting.md#$slug\"" "$RULES" || fail "alert $a has no runbook_url to docs/troubleshooting.md#$slug"
    grep -qx "### $a" "$TROUBLE" || fail "docs/troubleshooting.md has no section for alert $a"
done
jq -e '[.templating.list[].name] | index("source")' "$DASH" >/dev/null || fail "the dashboard has no source variable"
missing=$(comm -13 <(used "$QUERIES") <(echo "$exported") | tr '\n' ' ')
echo "PASS prometheus_rules: $(grep -c '^ *- alert:' "$RULES") alerts tested by promtool," \
     "$(wc -l <"$QUERIES") dashboard queries over $(used "$QUERIES" | wc -l) of $(echo "$exported" | wc -l) metrics (not charted: ${missing:-none})"
