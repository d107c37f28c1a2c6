#!/bin/bash
# The command table (core/cli/main.c) against the parsers: every command in
# `--help` has its own `COMMAND --help`, and every option that help lists is
# one its parser knows (getopt says "unrecognized" otherwise). No server:
# each command is run without a config, so it stops at its arguments.
set -euo pipefail
BIN=${OBX_BIN:?OBX_BIN must name the outbox-relay executable}
fail() { echo "FAIL: $*" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

commands=$("$BIN" --help | sed -n '/^Commands:/,/^$/p' | sed -n 's/^  \([a-z-]*\).*/\1/p')
[ "$(echo "$commands" | wc -l)" -ge 12 ] || fail "found only these commands in --help: $commands"
for c in $commands; do
    "$BIN" "$c" --help >"$work/help" || fail "$c --help exited $?"
    head -1 "$work/help" | grep -q "^usage: outbox-relay $c " || fail "$c --help: $(head -1 "$work/help")"
    for opt in $(sed -n 's/^  \(-[a-z], \)\{0,1\}\(--[a-z-]*\).*/\2/p' "$work/help"); do
        [ "$opt" = --help ] && continue
        "$BIN" "$c" "$opt" x >"$work/out" 2>&1 </dev/null && true
        ! grep -qiE "unrecognized option|bad option" "$work/out" ||
            fail "$c --help lists $opt, which its parser refuses: $(head -2 "$work/out")"
    done
done
"$BIN" no-such-command >/dev/null 2>"$work/err" && fail "an unknown command exited 0"
grep -q 'unknown command "no-such-command"' "$work/err" || fail "unknown command: $(cat "$work/err")"
"$BIN" --version | grep -qE '^outbox-relay [0-9]+\.[0-9]+\.[0-9]+ \(commit [0-9a-f]+|unknown, driver ABI [0-9]+\.[0-9]+\)$' ||
    fail "--version: $("$BIN" --version)"
echo "PASS cli_help: $(echo "$commands" | wc -w) commands, each with its --help and options its parser knows"
