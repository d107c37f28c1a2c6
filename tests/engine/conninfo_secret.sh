#!/bin/bash
# The database password is never printed (issue 12, item 3). A conninfo
# libpq cannot parse (a bad %-escape, an unterminated IPv6 address, an
# unterminated quote, an unknown keyword) is a config error at its line,
# exit 2, for run, check-config, init-db and status; a good one that cannot
# connect fails with exit 1. No output, in text or JSON logs, holds any part
# of the password.
ENG_TEST=conninfo_secret
. "$(dirname "$0")/engine_lib.sh"

PW_A=Hx7q PW_B=Zs9kWv # the password is "${PW_A}Secret${PW_B}" (or with a bad escape inside)
BAD=(
    "postgresql://relay:${PW_A}Secret%zz${PW_B}@127.0.0.1:1/db"
    "postgresql://relay:${PW_A}Secret${PW_B}@[::1:5432/db"
    "host=127.0.0.1 port=1 password='${PW_A}Secret${PW_B}"
    "host=127.0.0.1 pasword=${PW_A}Secret${PW_B} port=1"
)
UNREACHABLE=(
    "host=127.0.0.1 port=1 user=relay password=${PW_A}Secret${PW_B} connect_timeout=3"
    "postgresql://relay:${PW_A}Secret${PW_B}@127.0.0.1:1/db?connect_timeout=3"
    "postgresql://relay:${PW_A}Secret${PW_B}@no-such-host.invalid/db?connect_timeout=3"
    "host=127.0.0.1 port=1 user=relay dbname='x password=${PW_A}Secret${PW_B}' connect_timeout=3"
    "host=127.0.0.1 port=1 password=${PW_A}Secret${PW_B} sslmode=sometimes"
)

# check OUT NAME: no part of the password in OUT
no_secret() {
    local part
    for part in "$PW_A" "$PW_B" "Secret"; do
        if grep -q -- "$part" "$1"; then fail "$2: the password was printed: $(cat "$1")"; fi
    done
}

# try NAME WANT_RC PATTERN COMMAND...: exit code, output pattern, no secret, no crash
try() {
    local name=$1 want=$2 pattern=$3 rc=0
    shift 3
    "$@" >"$WORK/out" 2>&1 || rc=$?
    [ "$rc" -lt 128 ] || fail "$name: crashed (exit $rc): $(cat "$WORK/out")"
    [ "$rc" -eq "$want" ] || fail "$name: exit $rc, want $want: $(cat "$WORK/out")"
    no_secret "$WORK/out" "$name"
    grep -qE -- "$pattern" "$WORK/out" || fail "$name: output does not match /$pattern/: $(cat "$WORK/out")"
}

cfg() { # cfg FILE FORMAT: the conninfo comes from OBX_TEST_CONNINFO
    cat >"$1" <<EOF
# conninfo on line 2
database = { conninfo = "\${OBX_TEST_CONNINFO}"; };
relay = { drivers_dir = "\${OBX_DRIVERS}"; };
outputs = ( { name = "mem"; driver = "memory"; } );
log = { format = "$2"; };
EOF
}
cfg "$WORK/text.cfg" text
cfg "$WORK/json.cfg" json

for format in text json; do
    for i in "${!BAD[@]}"; do
        export OBX_TEST_CONNINFO=${BAD[$i]}
        for cmd in run check-config init-db status; do
            try "$format bad[$i] $cmd" 2 "$format.cfg:2: database.conninfo is not a valid" \
                "$OBX_BIN" "$cmd" -c "$WORK/$format.cfg"
        done
    done
    for i in "${!UNREACHABLE[@]}"; do
        export OBX_TEST_CONNINFO=${UNREACHABLE[$i]}
        for cmd in "run" "run --drain" init-db status "requeue --all"; do
            # shellcheck disable=SC2086
            try "$format unreachable[$i] $cmd" 1 "database" "$OBX_BIN" $cmd -c "$WORK/$format.cfg"
        done
        try "$format unreachable[$i] check-config" 0 "ok" "$OBX_BIN" check-config -c "$WORK/$format.cfg"
    done
done
# a reachable database with a password in the conninfo: the relay's own log
# says nothing of it either
fresh_db eng_conninfo_secret
export OBX_TEST_CONNINFO="$TEST_DSN password=${PW_A}Secret${PW_B}"
try "init-db" 0 "ready" "$OBX_BIN" init-db -c "$WORK/json.cfg"
try "run --drain" 0 "drained" "$OBX_BIN" run --drain -c "$WORK/json.cfg"
echo "PASS conninfo_secret"
