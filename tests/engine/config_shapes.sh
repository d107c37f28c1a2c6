#!/bin/bash
# Every malformed section shape is a config error (issue 12, item 6): one
# line `file:line: what is wrong` (no line for a missing section), exit 2,
# never a crash, for check-config and the commands that touch the database.
# Also ${A:-${B}} nesting and a clear message for an unknown template field.
# No database is needed: the config is refused before any connection.
ENG_TEST=config_shapes
. "$(dirname "$0")/engine_lib.sh"

unset OBX_UNSET_A OBX_UNSET_C
export OBX_SET_B=nested_tbl
DB='database = { conninfo = "host=127.0.0.1 port=1"; };'
RELAY='relay = { drivers_dir = "${OBX_DRIVERS}"; };'
OUTS='outputs = ( { name = "mem"; driver = "memory"; } );'

# Each case: NAME | the config's lines after line 1 (a comment), "\n"-separated | the expected message.
# The expected message is a regex matched after "NAME.cfg".
CASES=$(cat <<'EOF'
relay_list|$DB\nrelay = (1, 2);\n$OUTS|:3: relay must be a group
relay_int|$DB\nrelay = 5;\n$OUTS|:3: relay must be a group
relay_array|$DB\nrelay = [1];\n$OUTS|:3: relay must be a group
relay_string|$DB\nrelay = "x";\n$OUTS|:3: relay must be a group
database_list|database = ("a");\n$RELAY\n$OUTS|:2: database must be a group
database_int|database = 5;\n$RELAY\n$OUTS|:2: database must be a group
database_array|database = ["a"];\n$RELAY\n$OUTS|:2: database must be a group
log_array|$DB\n$RELAY\nlog = ["x"];\n$OUTS|:4: log must be a group
log_list|$DB\n$RELAY\nlog = ("x", 1);\n$OUTS|:4: log must be a group
log_int|$DB\n$RELAY\nlog = 1;\n$OUTS|:4: log must be a group
metrics_int|$DB\n$RELAY\nmetrics = 1;\n$OUTS|:4: metrics must be a group
metrics_list|$DB\n$RELAY\nmetrics = ("a");\n$OUTS|:4: metrics must be a group
metrics_array|$DB\n$RELAY\nmetrics = ["a"];\n$OUTS|:4: metrics must be a group
backoff_int|$DB\nrelay = { backoff = 5; };\n$OUTS|:3: relay.backoff must be a group
backoff_list|$DB\nrelay = { backoff = (1); };\n$OUTS|:3: relay.backoff must be a group
columns_list|database = { conninfo = "host=h"; columns = ("a"); };\n$RELAY\n$OUTS|:2: database.columns must be a group
outputs_int|$DB\n$RELAY\noutputs = 5;|:4: outputs must be a non-empty list
outputs_group|$DB\n$RELAY\noutputs = { name = "mem"; };|:4: outputs must be a non-empty list
outputs_empty|$DB\n$RELAY\noutputs = ();|:4: outputs must be a non-empty list
output_int|$DB\n$RELAY\noutputs = ( 1 );|:4: each output must be a group
output_list|$DB\n$RELAY\noutputs = ( ("mem") );|:4: each output must be a group
options_list|$DB\n$RELAY\noutputs = ( { name = "mem"; driver = "memory"; options = (1); } );|:4: options must be a group
option_array|$DB\n$RELAY\noutputs = ( { name = "mem"; driver = "memory"; options = { a = [1]; }; } );|:4: option "a" must be a string, number or boolean
option_group|$DB\n$RELAY\noutputs = ( { name = "mem"; driver = "memory"; options = { a = { b = 1; }; }; } );|:4: option "a" must be a string, number or boolean
properties_int|$DB\n$RELAY\noutputs = ( { name = "mem"; driver = "memory"; properties = 5; } );|:4: properties must be a list
property_string|$DB\n$RELAY\noutputs = ( { name = "mem"; driver = "memory"; properties = ( "a" ); } );|:4: each property must be a
property_short|$DB\n$RELAY\noutputs = ( { name = "mem"; driver = "memory"; properties = ( ["a"] ); } );|:4: each property must be a
routes_int|$DB\n$RELAY\n$OUTS\nroutes = 5;|:5: routes must be a non-empty list
routes_group|$DB\n$RELAY\n$OUTS\nroutes = { output = "mem"; };|:5: routes must be a non-empty list
route_int|$DB\n$RELAY\n$OUTS\nroutes = ( 1 );|:5: each route must be a group
route_list|$DB\n$RELAY\n$OUTS\nroutes = ( ("mem") );|:5: each route must be a group
missing_database|$RELAY\n$OUTS|: the database section is missing
missing_conninfo|database = { table = "t"; };\n$RELAY\n$OUTS|:2: database.conninfo is required
missing_outputs|$DB\n$RELAY|: outputs must be a non-empty list
unset_nested|database = { conninfo = "host=h"; table = "${OBX_UNSET_A:-${OBX_UNSET_C}}"; };\n$RELAY\n$OUTS|:2: .*environment variable OBX_UNSET_C is not set
unterminated_nested|database = { conninfo = "host=h"; table = "${OBX_UNSET_A:-${OBX_SET_B}"; };\n$RELAY\n$OUTS|:2: .*unterminated
unknown_field|$DB\n$RELAY\n$OUTS\nroutes = ( { destination = "x.${evnt_type}"; } );|:5: .*\$\{evnt_type\} is neither a row field .* nor a set environment variable
EOF
)

n=0
while IFS='|' read -r name body want; do
    [ -n "$name" ] || continue
    n=$((n + 1))
    body=${body//\$DB/$DB}
    body=${body//\$RELAY/$RELAY}
    body=${body//\$OUTS/$OUTS}
    printf '# %s\n%b\n' "$name" "$body" >"$WORK/$name.cfg"
    for cmd in check-config status init-db run; do
        rc=0
        "$OBX_BIN" $cmd -c "$WORK/$name.cfg" >"$WORK/out" 2>&1 || rc=$?
        [ "$rc" -lt 128 ] || fail "$name $cmd: crashed (exit $rc): $(cat "$WORK/out")"
        [ "$rc" -eq 2 ] || fail "$name $cmd: exit $rc, want 2: $(cat "$WORK/out")"
        expect_eq "$name $cmd: lines of output" "$(grep -c . "$WORK/out")" 1
        grep -qE -- "$name\.cfg$want" "$WORK/out" || fail "$name $cmd: output does not match /$name.cfg$want/: $(cat "$WORK/out")"
    done
    note "$name: $(cat "$WORK/out")"
done <<<"$CASES"
[ "$n" -ge 35 ] || fail "test bug: only $n cases ran"

# Nested defaults expand: the table name shows in check-config's summary.
# ok_table NAME VALUE WANT: table = VALUE must give table public.WANT
ok_table() {
    printf '# %s\ndatabase = { conninfo = "host=h"; table = "%s"; };\n%s\n%s\n' "$1" "$2" "$RELAY" "$OUTS" >"$WORK/$1.cfg"
    "$OBX_BIN" check-config -c "$WORK/$1.cfg" >"$WORK/out" 2>&1 || fail "$1: $(cat "$WORK/out")"
    grep -qF "table public.$3)" "$WORK/out" || fail "$1: want table public.$3: $(cat "$WORK/out")"
}
ok_table nested '${OBX_UNSET_A:-${OBX_SET_B}}' nested_tbl
ok_table nested_default '${OBX_UNSET_A:-${OBX_UNSET_C:-deep}}' deep
ok_table nested_text '${OBX_UNSET_A:-pre_${OBX_SET_B}_post}' pre_nested_tbl_post
ok_table set_wins '${OBX_SET_B:-${OBX_UNSET_C}}' nested_tbl
# a route's default may be a row field, kept for the router
printf '# ok\n%s\n%s\n%s\nroutes = ( { destination = "x.${OBX_UNSET_A:-${aggregate_type}}"; } );\n' \
    "$DB" "$RELAY" "$OUTS" >"$WORK/field_default.cfg"
"$OBX_BIN" check-config -c "$WORK/field_default.cfg" >"$WORK/out" 2>&1 || fail "field default: $(cat "$WORK/out")"
echo "PASS config_shapes ($n malformed shapes)"
