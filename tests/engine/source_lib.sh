# shellcheck shell=bash
# The tests that run once per source (SOURCE_MODE=poll|wal|cursor, set by
# ctest): the engine's helpers (the WAL tests' in WAL and cursor mode, the
# cursor source on a PostgreSQL of its own), a fresh database STEM_MODE,
# SOURCE (the relay settings that choose the source, with WAL_OPTS in
# relay.wal) and source_cfg.
#   . "$(dirname "$0")/source_lib.sh" STEM       (ENG_TEST becomes STEM_MODE)
MODE=${SOURCE_MODE:-poll}
ENG_TEST=$1_$MODE
if [ "$MODE" = poll ]; then
    . "$(dirname "${BASH_SOURCE[0]}")/engine_lib.sh"
    fresh_db "$1_poll"
    SOURCE=""
else
    WAL_AS=$MODE
    . "$(dirname "${BASH_SOURCE[0]}")/../wal/wal_lib.sh"
    fresh_wal_db "$1_$MODE"
    SOURCE="source = \"$MODE\"; wal = { slot = \"$TEST_DB\"; ${WAL_OPTS:-} };"
fi

# source_cfg FILE RELAY_SETTINGS MEMORY_OPTIONS [EXTRA]: write_cfg in this source.
source_cfg() { write_cfg "$1" "$SOURCE $2" "$3" "${4:-}"; }
