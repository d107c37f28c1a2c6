#!/bin/bash
# expect_fail.sh CHECK -- RUNNER ARGS...: the runner must exit 1 and print "FAIL CHECK".
set -uo pipefail
check=$1
shift 2
out=$("$@" 2>&1)
rc=$?
echo "$out"
[ "$rc" -ne 0 ] || { echo "FAIL: the runner passed a broken driver (wanted FAIL $check)" >&2; exit 1; }
grep -q "^FAIL $check[: ]\|^FAIL $check\$" <<<"$out" || { echo "FAIL: no 'FAIL $check' line (exit $rc)" >&2; exit 1; }
echo "ok: caught by $check (exit $rc)"
