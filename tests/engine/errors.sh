#!/bin/bash
# Errors the operator meets first. Each config error (syntax error, unknown
# key, wrong type, missing environment variable, unknown driver option, a
# route to an undefined output), a missing driver file and an unreachable
# database must give ONE line naming file:line (config errors), exit 2
# (config) or 1 (database), never crash (exit < 128), and never print the
# password of the conninfo (every config here carries "password=hunter2").
ENG_TEST=errors
. "$(dirname "$0")/engine_lib.sh"

unset OBX_NO_SUCH_VAR_42
DSN='host=127.0.0.1 port=1 user=postgres password=hunter2 dbname=nowhere connect_timeout=3'

# expect_error NAME WANT_RC PATTERN COMMAND...: one line, the exit code, the pattern, no secret.
expect_error() {
    local name=$1 want=$2 pattern=$3 rc=0
    shift 3
    "$@" >"$WORK/out" 2>&1 || rc=$?
    local lines
    lines=$(grep -c . "$WORK/out" || true)
    [ "$rc" -lt 128 ] || fail "$name: crashed (exit $rc): $(cat "$WORK/out")"
    [ "$rc" -eq "$want" ] || fail "$name: exit $rc, want $want: $(cat "$WORK/out")"
    [ "$lines" -eq 1 ] || fail "$name: $lines lines of output, want one: $(cat "$WORK/out")"
    grep -q "hunter2" "$WORK/out" && fail "$name: the password was printed: $(cat "$WORK/out")"
    grep -qE -- "$pattern" "$WORK/out" || fail "$name: output does not match /$pattern/: $(cat "$WORK/out")"
    note "$name: $(cat "$WORK/out")"
}

# cfg NAME LINE2 LINE3 LINE4 LINE5: a 5-line config; line 1 is a comment.
cfg() {
    printf '# %s\n%s\n%s\n%s\n%s\n' "$1" "$2" "$3" "$4" "$5" >"$WORK/$1.cfg"
}
DB="database = { conninfo = \"$DSN\"; };"
RELAY='relay = { workers = 1; drivers_dir = "${OBX_DRIVERS}"; };'
OUTS='outputs = ( { name = "mem"; driver = "memory"; } );'
ROUTES='routes = ( { output = "mem"; } );'

cfg syntax "$DB" 'relay = { workers = ; };' "$OUTS" "$ROUTES"
cfg unknown_key "$DB" 'relay = { wrokers = 2; drivers_dir = "${OBX_DRIVERS}"; };' "$OUTS" "$ROUTES"
cfg wrong_type "$DB" 'relay = { workers = "two"; drivers_dir = "${OBX_DRIVERS}"; };' "$OUTS" "$ROUTES"
cfg missing_env 'database = { conninfo = "password=hunter2 host=${OBX_NO_SUCH_VAR_42}"; };' "$RELAY" "$OUTS" "$ROUTES"
cfg unknown_option "$DB" "$RELAY" \
    'outputs = ( { name = "mem"; driver = "memory";  options = { bogus = 1; }; } );' "$ROUTES"
cfg option_type "$DB" "$RELAY" \
    'outputs = ( { name = "mem"; driver = "memory";  options = { delay_ms = "soon"; }; } );' "$ROUTES"
cfg undefined_output "$DB" "$RELAY" "$OUTS" 'routes = ( { output = "nope"; } );'
cfg missing_driver "$DB" "$RELAY" 'outputs = ( { name = "mem"; driver = "nosuch"; } );' "$ROUTES"
cfg unreachable "$DB" "$RELAY" "$OUTS" "$ROUTES"

for cmd in check-config run; do
    expect_error "$cmd syntax" 2 "syntax.cfg:3: " "$OBX_BIN" "$cmd" -c "$WORK/syntax.cfg"
    expect_error "$cmd unknown key" 2 "unknown_key.cfg:3: .*wrokers" "$OBX_BIN" "$cmd" -c "$WORK/unknown_key.cfg"
    expect_error "$cmd wrong type" 2 "wrong_type.cfg:3: .*workers" "$OBX_BIN" "$cmd" -c "$WORK/wrong_type.cfg"
    expect_error "$cmd missing env" 2 "missing_env.cfg:2: .*OBX_NO_SUCH_VAR_42" "$OBX_BIN" "$cmd" -c "$WORK/missing_env.cfg"
    expect_error "$cmd unknown option" 2 "unknown_option.cfg:4: .*bogus" "$OBX_BIN" "$cmd" -c "$WORK/unknown_option.cfg"
    expect_error "$cmd option type" 2 "option_type.cfg:4: .*delay_ms" "$OBX_BIN" "$cmd" -c "$WORK/option_type.cfg"
    expect_error "$cmd undefined output" 2 "undefined_output.cfg:5: .*nope" "$OBX_BIN" "$cmd" -c "$WORK/undefined_output.cfg"
done
expect_error "status syntax" 2 "syntax.cfg:3: " "$OBX_BIN" status -c "$WORK/syntax.cfg"
expect_error "missing config file" 2 "nonexistent.cfg" "$OBX_BIN" run -c "$WORK/nonexistent.cfg"

# the database: nothing listens on port 1
expect_error "run unreachable" 1 "database" "$OBX_BIN" run -c "$WORK/unreachable.cfg"
expect_error "run --drain unreachable" 1 "database" "$OBX_BIN" run --drain -c "$WORK/unreachable.cfg"
expect_error "status unreachable" 1 "database" "$OBX_BIN" status -c "$WORK/unreachable.cfg"
expect_error "init-db unreachable" 1 "database" "$OBX_BIN" init-db -c "$WORK/unreachable.cfg"
expect_error "requeue unreachable" 1 "database" "$OBX_BIN" requeue --all -c "$WORK/unreachable.cfg"
# check-config does not touch the database
"$OBX_BIN" check-config -c "$WORK/unreachable.cfg" >"$WORK/out" 2>&1 || fail "check-config of a good config: $(cat "$WORK/out")"
grep -q hunter2 "$WORK/out" && fail "check-config printed the password"
# A driver that does not exist is a config error too: the output's file:line
# must be named, like every other config error (last, so that the checks
# above run whatever this one finds).
for cmd in check-config run; do
    expect_error "$cmd missing driver" 2 "missing_driver.cfg:4: .*nosuch" "$OBX_BIN" "$cmd" -c "$WORK/missing_driver.cfg"
done
echo "PASS errors"
