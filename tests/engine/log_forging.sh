#!/bin/bash
# Row data in a log message cannot forge a log line (issue 12, item 8): an
# event_type holding a newline, a carriage return and a terminal escape is
# dead-lettered ("no route matches event_type ...") and logged. In the text
# log every line is a real log line (timestamp, level) and the control
# characters appear escaped; in the JSON log every line parses.
ENG_TEST=log_forging
. "$(dirname "$0")/engine_lib.sh"

fresh_db eng_log_forging
FORGED='2026-01-01T00:00:00.000Z error FORGED'
for format in text json; do
    write_cfg "$WORK/$format.cfg" "" "" \
        "routes = ( { event_type = \"order.*\"; output = \"mem\"; } );
log = { format = \"$format\"; };"
done
init_db "$WORK/text.cfg"
sql "INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES
       ('A', '1', 'x' || E'\\n' || '$FORGED newline' || E'\\r' || '$FORGED cr', '{}'),
       ('A', '2', E'\\x1b[2J' || 'escape', '{}'),
       ('A', '3', 'order.ok', '{}')"

for format in text json; do
    sql "UPDATE outbox SET dead_at = NULL, published_at = NULL, attempts = 0" >/dev/null
    : >"$WORK/$format.log"
    drain "$WORK/$format.cfg" "$WORK/$format.log" 60
    expect_eq "$format: rows dead-lettered" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 2
    grep -q "FORGED" "$WORK/$format.log" || fail "$format: the dead-letter warning is not in the log"
    if grep -n "^$FORGED" "$WORK/$format.log"; then fail "$format: a forged line in the log"; fi
    if grep -q $'\x1b' "$WORK/$format.log"; then fail "$format: a raw escape character in the log"; fi
    if grep -q $'\r' "$WORK/$format.log"; then fail "$format: a raw carriage return in the log"; fi
done
# text: every line is one the relay wrote, the newline shown as \n
bad=$(grep -cvE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z (error|warn |info |debug) ' "$WORK/text.log" || true)
expect_eq "text: lines that are not log lines" "$bad" 0
grep -qF "x\\n$FORGED newline\\r$FORGED cr" "$WORK/text.log" || fail "text: the newline is not shown escaped"
grep -qF '\x1b[2Jescape' "$WORK/text.log" || fail "text: the escape character is not shown escaped"
# json: every line parses, and the message holds the newline itself
python3 - "$WORK/json.log" <<'EOF' || fail "json: $(cat "$WORK/json.log")"
import json, sys
msgs = [json.loads(line)["msg"] for line in open(sys.argv[1], encoding="utf-8")]
assert any("x\n2026-01-01T00:00:00.000Z error FORGED newline" in m for m in msgs), msgs
EOF
check_logs_clean
echo "PASS log_forging"
