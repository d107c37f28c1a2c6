#!/bin/bash
# check-config --print (issue 28, item 6): every core setting of the table
# with its effective value, the defaults marked, the password never shown;
# without --print the output is the one summary line. No database is needed.
ENG_TEST=config_print
. "$(dirname "$0")/engine_lib.sh"

CFG="$WORK/print.cfg"
cat >"$CFG" <<'CONF'
database = { conninfo = "host=127.0.0.1 port=1 password='s3cr et' dbname=app"; table = "Orders"; };
relay = { drivers_dir = "${OBX_DRIVERS}"; workers = 3; lease_seconds = 45; };
outputs = ( { name = "mem"; driver = "memory"; } );
CONF
"$OBX_BIN" check-config -c "$CFG" >"$WORK/plain" 2>&1 || fail "check-config: $(cat "$WORK/plain")"
expect_eq "lines without --print" "$(grep -c . "$WORK/plain")" 1
"$OBX_BIN" check-config -c "$CFG" --print >"$WORK/out" 2>&1 || fail "check-config --print: $(cat "$WORK/out")"
grep -q "s3cr" "$WORK/out" && fail "the password was printed: $(cat "$WORK/out")"
want() { grep -qxF -- "$1" "$WORK/out" || fail "no line \"$1\" in: $(cat "$WORK/out")"; }
# rebuilt from libpq's parse, in libpq's order of keywords
conninfo=$(grep '^database.conninfo = ' "$WORK/out")
for part in 'password=***' 'dbname=app' 'host=127.0.0.1' 'port=1' '"  # fixed'; do
    [[ "$conninfo" == *"$part"* ]] || fail "conninfo line without $part: $conninfo"
done
want 'database.table = "Orders"  # fixed'
want 'database.schema = "public"  # default, fixed'
want 'relay.workers = 3  # fixed'
want 'relay.lease_seconds = 45  # fixed'
want 'relay.poll_interval_ms = 1000  # default'
want 'relay.backoff.multiplier = 2  # default'
want 'relay.wal.slot = "orders_relay"  # default, fixed (from database.table + "_relay")'
want 'metrics.listen = (not set)  # default, fixed'
settings=$(grep -cE '^[a-z_.]+ = ' "$WORK/out")
[ "$settings" -ge 40 ] || fail "only $settings settings printed"
# a refused config prints no settings
sed -i 's/workers = 3/workers = 0/' "$CFG"
rc=0
"$OBX_BIN" check-config -c "$CFG" --print >"$WORK/bad" 2>&1 || rc=$?
expect_eq "exit of a refused config" "$rc" 2
grep -q "print.cfg:2: setting \"workers\" must be between 1 and 256" "$WORK/bad" || fail "refusal: $(cat "$WORK/bad")"
grep -q " = " "$WORK/bad" && fail "settings printed for a refused config: $(cat "$WORK/bad")"
echo "PASS config_print ($settings settings)"
