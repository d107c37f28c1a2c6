#!/bin/bash
# Driver files the relay must not load, through the real CLI: a truncated .so
# (dlopen would die of SIGBUS) and a world-writable drivers directory are
# refused with a clear message and exit 2, by check-config and by run;
# OUTBOX_RELAY_INSECURE_DRIVERS=1 lets the writable directory through.
set -uo pipefail
OBX_BIN=${OBX_BIN:?} OBX_DRIVERS=${OBX_DRIVERS:?}
WORK=$(mktemp -d /tmp/obx-driver-files.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
chmod 755 "$WORK"
fail() { echo "FAIL: $*" >&2; exit 1; }
mkdir -m 755 "$WORK/drivers"
cp "$OBX_DRIVERS/memory.so" "$WORK/drivers/memory.so"
chmod 755 "$WORK/drivers/memory.so"
cat >"$WORK/relay.cfg" <<CFG
database = { conninfo = "dbname=unused_by_check_config"; };
relay = { drivers_dir = "$WORK/drivers"; };
outputs = ( { name = "mem"; driver = "memory"; } );
routes = ( { output = "mem"; destination = "d"; } );
CFG

# expect_refused WHAT PATTERN COMMAND...: exit 2 and PATTERN in the output
expect_refused() {
    local what=$1 pattern=$2
    shift 2
    out=$("$@" 2>&1)
    rc=$?
    [ "$rc" -eq 2 ] || fail "$what: exit $rc, wanted 2: $out"
    grep -q -- "$pattern" <<<"$out" || fail "$what: no \"$pattern\" in: $out"
    echo "ok: $what: $(grep -m1 -- "$pattern" <<<"$out")"
}

"$OBX_BIN" check-config -c "$WORK/relay.cfg" >/dev/null || fail "a 755 directory and file were refused"

chmod 777 "$WORK/drivers"
expect_refused "check-config, world-writable directory" "memory.so: refused: directory .* is writable by others" \
    "$OBX_BIN" check-config -c "$WORK/relay.cfg"
expect_refused "run, world-writable directory" "writable by others" "$OBX_BIN" run -c "$WORK/relay.cfg"
OUTBOX_RELAY_INSECURE_DRIVERS=1 "$OBX_BIN" check-config -c "$WORK/relay.cfg" >/dev/null ||
    fail "OUTBOX_RELAY_INSECURE_DRIVERS=1 did not let the writable directory through"
chmod 755 "$WORK/drivers"

size=$(stat -c %s "$WORK/drivers/memory.so")
head -c $((size / 2)) "$OBX_DRIVERS/memory.so" >"$WORK/drivers/memory.so"
expect_refused "check-config, truncated driver" "memory.so: refused: truncated or corrupt" \
    "$OBX_BIN" check-config -c "$WORK/relay.cfg"
expect_refused "run, truncated driver" "truncated or corrupt" "$OBX_BIN" run -c "$WORK/relay.cfg"
# the opt-in is about modes only: a truncated file stays refused
OUTBOX_RELAY_INSECURE_DRIVERS=1 expect_refused "truncated driver with the opt-in" "truncated or corrupt" \
    "$OBX_BIN" check-config -c "$WORK/relay.cfg"
echo "PASS driver_files"
