# shellcheck shell=bash
# The tests that run once per source (SOURCE_MODE=poll|wal, set by ctest):
# the engine's helpers (the WAL tests' in WAL mode), the metrics endpoint's
# on a free PORT, and mode_db. Source it with the test's stem:
#   . "$(dirname "$0")/mode_lib.sh" STEM     (ENG_TEST becomes STEM_MODE)
MODE=${SOURCE_MODE:-poll}
ENG_TEST=$1_$MODE
if [ "$MODE" = wal ]; then . "$(dirname "${BASH_SOURCE[0]}")/../wal/wal_lib.sh"; else . "$(dirname "${BASH_SOURCE[0]}")/engine_lib.sh"; fi
MC=${METRICS_CLIENT:?METRICS_CLIENT must name the metrics_client executable}
PORT=$("$MC" freeport)
. "$(dirname "${BASH_SOURCE[0]}")/../metrics/scrape.sh"

# mode_db NAME: a fresh database NAME_MODE (in WAL mode its old slots
# dropped first); SOURCE: the relay settings that choose the mode.
mode_db() {
    if [ "$MODE" = wal ]; then fresh_wal_db "$1_wal"; else fresh_db "$1_poll"; fi
    SOURCE=""
    [ "$MODE" = wal ] && SOURCE="source = \"wal\"; wal = { slot = \"$TEST_DB\"; };"
    return 0
}
