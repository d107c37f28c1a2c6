# shellcheck shell=bash
# What the benchmarks here start with, sourced after setting HERE (the
# script's directory): the source tree (OBX_SRC), the Release build
# (OBX_BUILD, default build-bench; OBX_BIN, OBX_DRIVERS and OBX_BENCH_TOOLS
# override its parts), quiet psql, and tests/lib.sh.
OBX_SRC=${OBX_SRC:-$(cd "$HERE/../.." && pwd)}
OBX_BUILD=${OBX_BUILD:-$OBX_SRC/build-bench}
export OBX_BIN=${OBX_BIN:-$OBX_BUILD/outbox-relay}
export OBX_DRIVERS=${OBX_DRIVERS:-$OBX_BUILD/drivers}
# shellcheck disable=SC2034 # the scripts sourcing this use TOOLS
TOOLS=${OBX_BENCH_TOOLS:-$(dirname "$OBX_BIN")/tests/bench}
export PGOPTIONS="-c client_min_messages=warning"
. "$OBX_SRC/tests/lib.sh"
