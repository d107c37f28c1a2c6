#!/bin/bash
# CloudEvents options as an operator meets them: a bad format or content
# mode, and a template naming an unknown placeholder, are refused by
# check-config with the file and line (exit 2); good ones pass.
set -uo pipefail
relay=${OBX_BIN:?OBX_BIN must name the outbox-relay executable}
dir=${OBX_DRIVERS:?OBX_DRIVERS must name the drivers build directory}
tmp=$(mktemp -d /tmp/obx-ce-config.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# config NAME OPTIONS: a webhook output whose options are on line 5.
config() {
    printf '%s\n' "database = { conninfo = \"dbname=unused\"; };" \
        "relay = { drivers_dir = \"$dir\"; };" "outputs = (" \
        "  { name = \"w\"; driver = \"webhook\";" \
        "    options = { url = \"http://127.0.0.1:9/\"; $2 }; }" ");" >"$tmp/$1.cfg"
}
refused() { # refused NAME OPTIONS WANT
    config "$1" "$2"
    out=$(env -u route "$relay" check-config -c "$tmp/$1.cfg" 2>&1)
    rc=$?
    [ $rc -eq 2 ] || fail "check-config exited $rc for $2 (wanted 2): $out"
    grep -qF -- "$tmp/$1.cfg:5: $3" <<<"$out" || fail "wanted '$tmp/$1.cfg:5: $3' in: $out"
    echo "ok: refused: $out"
}
refused format 'format = "json";' \
    'output "w": option "format" must be one of "plain", "cloudevents" (got "json")'
refused mode 'format = "cloudevents"; ce_mode = "batch";' \
    'output "w": option "ce_mode" must be one of "binary", "structured" (got "batch")'
refused placeholder 'format = "cloudevents"; ce_source = "/orders/${route}";' \
    'setting "ce_source": ${route} is neither a CloudEvents placeholder'
refused unclosed 'format = "cloudevents"; ce_subject = "${aggregate_id";' \
    'setting "ce_subject": unterminated ${ in value'

config good 'format = "cloudevents"; ce_mode = "structured"; ce_source = "/${destination}/${aggregate_type}";
    ce_type = "com.example.${event_type}"; ce_subject = "${aggregate_id}";'
out=$("$relay" check-config -c "$tmp/good.cfg" 2>&1) || fail "check-config refused a good config: $out"
echo "ok: every placeholder accepted"
echo "PASS ce_config"
