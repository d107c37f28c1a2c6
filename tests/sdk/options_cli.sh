#!/bin/bash
# options_cli.sh RELAY SRC_DIR: option specs as an operator meets them:
# `drivers -v` prints the template's option table; check-config warns of an
# old or deprecated option name with file:line, and refuses a value out of
# range or not among the choices with file:line (exit 2).
set -uo pipefail
relay=$1
dir=${OBX_DRIVERS:?OBX_DRIVERS must name the drivers build directory}
tmp=${SDK_TMP:?SDK_TMP must name a scratch directory}
fail() { echo "FAIL: $*" >&2; exit 1; }

table=$("$relay" drivers -v --drivers-dir "$dir") || fail "drivers -v exited $?"
row() { # row OPTION PATTERN: the option's row of the template table matches PATTERN
    local line
    line=$(awk '/^template /{t=1; next} /^[^ ]/{t=0} t' <<<"$table" | grep -E "^ +$1 ")
    grep -qE -- "$2" <<<"$line" || fail "drivers -v: row of $1 is '$line', wanted /$2/"
    echo "ok: $1: $line"
}
row max_message_bytes 'int +1048576 +1 \.\. 1073741824 '
row compression 'string +"none" +one of "none", "gzip", "lz4" '
row connect_timeout_ms 'int +5000 +1 \.\. 600000 +renamed from connect_timeout: '
row connect_timeout_s 'int +- +1 \.\. 600 +deprecated: use connect_timeout_ms'
row fail_create 'bool +false +- +refuse to create'

# config NAME OPTIONS: writes $tmp/NAME.cfg with one template output on line 4.
config() {
    printf '%s\n' "database = { conninfo = \"dbname=unused\"; };" \
        "relay = { drivers_dir = \"$dir\"; };" "outputs = (" \
        "  { name = \"t\"; driver = \"template\"; options = { $2 }; }" ");" >"$tmp/$1.cfg"
}
config warn 'connect_timeout = 2000; connect_timeout_s = 3;'
out=$("$relay" check-config -c "$tmp/warn.cfg" 2>&1)
[ $? -eq 0 ] || fail "check-config refused old names: $out"
for want in "$tmp/warn.cfg:4: output \"t\": option \"connect_timeout\" is now called \"connect_timeout_ms\"" \
    "$tmp/warn.cfg:4: output \"t\": option \"connect_timeout_s\" is deprecated: use connect_timeout_ms"; do
    [ "$(grep -cF -- "$want" <<<"$out")" = 1 ] || fail "wanted one line '$want' in: $out"
done
echo "ok: old and deprecated names warn with file:line"

refused() { # refused NAME OPTIONS WANT
    config "$1" "$2"
    out=$("$relay" check-config -c "$tmp/$1.cfg" 2>&1)
    rc=$?
    [ $rc -eq 2 ] || fail "check-config exited $rc for $2 (wanted 2): $out"
    grep -qF -- "$tmp/$1.cfg:4: output \"t\": option $3" <<<"$out" || fail "wanted '$3' at line 4: $out"
    echo "ok: refused: $out"
}
refused range 'max_message_bytes = 0;' '"max_message_bytes" must be in 1 .. 1073741824 (got 0)'
refused choice 'compression = "zstd";' '"compression" must be one of "none", "gzip", "lz4" (got "zstd")'
refused both 'connect_timeout = 1; connect_timeout_ms = 2;' '"connect_timeout" is the old name of "connect_timeout_ms"'
