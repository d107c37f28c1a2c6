#!/bin/bash
# The driver conformance runner against webhook.so and a private whserver,
# then the server's records: every request signed right, all headers present.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/wh_lib.sh"

wh_server conformance
CFG=$(dirname "$0")/webhook.cfg
# WH_RUNNER: a prefix such as valgrind; WH_BAD_OUTPUTS: outputs create must refuse
for bad in ${WH_BAD_OUTPUTS:-bad bad_url bad_property}; do
    ${WH_RUNNER:-} "$OBX_BIN" check-driver webhook -c "$CFG" -o main --bad-output $bad --drivers-dir "$OBX_DRIVERS" \
        --destination "conf/test $$" --timeout 60 >"$WH_DIR/check-$bad.out" 2>&1 ||
        { cat "$WH_DIR/check-$bad.out"; fail "check-driver webhook (--bad-output $bad)"; }
done
cat "$WH_DIR/check-bad.out"
wh_stop
requests=$(wc -l <"$WH_REC")
[ "$requests" -gt 1000 ] || fail "the server saw only $requests requests"
expect_eq "requests with a bad signature" "$(awk -F'\t' '$13 != 1' "$WH_REC" | wc -l)" 0
expect_eq "requests without an identity header" \
    "$(awk -F'\t' '$4 == "-" || $5 == "-" || $6 == "-" || $7 == "-" || $8 == "-" || $12 == "-"' "$WH_REC" | wc -l)" 0
expect_eq "requests to another path" \
    "$(awk -F'\t' -v p="/conformance/conf%2Ftest%20$$" '$10 != p' "$WH_REC" | wc -l)" 0
echo "PASS webhook_conformance ($requests requests, all signed)"
