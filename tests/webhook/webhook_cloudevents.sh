#!/bin/bash
# CloudEvents over HTTP and Standard Webhooks signatures (issue 30): one
# run, a binary-mode output and a structured-mode one, both signed; a small
# Node receiver checks every signature (401 otherwise: the event would end
# dead) and records the requests; the CloudEvents SDK for JavaScript parses
# and checks each against the rows enqueued.
. "$(dirname "$0")/../lib.sh"
WORK=$(mktemp -d /tmp/obx-wh-ce.XXXXXX)
RECEIVER=
trap '[ -z "$RECEIVER" ] || kill "$RECEIVER" 2>/dev/null; rm -rf "$WORK"' EXIT
. "$OBX_SRC/tests/cloudevents/ce_lib.sh"

OBX_CE_WH_SECRET="whsec_$(head -c 32 /dev/urandom | base64)"
export OBX_CE_WH_SECRET
WH_SECRET=$OBX_CE_WH_SECRET node "$OBX_SRC/tests/webhook/ce_receiver.js" "$WORK/port" "$WORK" &
RECEIVER=$!
for ((i = 0; i < 100; i++)); do [ -s "$WORK/port" ] && break; sleep 0.05; done
[ -s "$WORK/port" ] || fail "the receiver did not start"

fresh_db obx_ce_webhook
ce_cfg "$WORK/relay.cfg" webhook "url = \"http://127.0.0.1:$(cat "$WORK/port")\";
    append_destination = true; signing_secret_env = \"OBX_CE_WH_SECRET\";" bin str
ce_run "$WORK/relay.cfg"
expect_eq "dead rows (a bad signature is answered 401)" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 0
grep -q "$OBX_CE_WH_SECRET" "$WORK/relay.log" && fail "the signing secret was logged"
ce_check http binary "$WORK/bin.json"
ce_check http structured "$WORK/str.json"
echo "PASS webhook_cloudevents"
