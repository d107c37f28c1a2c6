# Shared helpers for the shell tests. Source it: . "$(dirname "$0")/../lib.sh"
# Needs: services started by tests/services/services.sh (env in $SVC_DIR/env.sh),
# and OBX_BIN (the outbox-relay executable) set by ctest.
set -euo pipefail

SVC_DIR=${SVC_DIR:-/tmp/ci-services}
[ -s "$SVC_DIR/env.sh" ] || { echo "FAIL: services not running ($SVC_DIR/env.sh missing): run tests/services/services.sh start" >&2; exit 1; }
# shellcheck disable=SC1091
. "$SVC_DIR/env.sh"
OBX_BIN=${OBX_BIN:?OBX_BIN must name the outbox-relay executable}
OBX_SRC=${OBX_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
SERVICES=$OBX_SRC/tests/services/services.sh

fail() { echo "FAIL: $*" >&2; exit 1; }
note() { echo "--- $*" >&2; }

# fresh_db NAME: drop and create database NAME; sets TEST_DB and TEST_DSN.
fresh_db() {
    TEST_DB=$1
    psql -qAt -d postgres -c "DROP DATABASE IF EXISTS $TEST_DB WITH (FORCE)" >/dev/null
    psql -qAt -d postgres -c "CREATE DATABASE $TEST_DB" >/dev/null
    TEST_DSN="host=$PGHOST port=$PGPORT user=$PGUSER dbname=$TEST_DB"
    export TEST_DB TEST_DSN
}

# sql QUERY: run in the test database, unaligned output.
sql() { psql -qAt -v ON_ERROR_STOP=1 -d "$TEST_DB" -c "$1"; }

# relay_oldest_xact_ms: the age in ms of the oldest open transaction of the
# relay's sessions in the test database (0: none), from pg_stat_activity.
relay_oldest_xact_ms() {
    sql "SELECT coalesce(max(floor(extract(epoch FROM clock_timestamp() - xact_start) * 1000)), 0)::bigint
         FROM pg_stat_activity WHERE datname = current_database()
         AND application_name LIKE 'outbox-relay%' AND xact_start IS NOT NULL"
}

# vacuum_dead TABLE: VACUUM (VERBOSE) TABLE; prints "REMOVED NOT_YET_REMOVABLE"
# (dead rows an open transaction still holds back are the second).
vacuum_dead() {
    psql -qAt -d "$TEST_DB" -c "SET client_min_messages = info" -c "VACUUM (VERBOSE) $1" 2>&1 |
        sed -n 's/.*tuples: \([0-9]*\) removed, [0-9]* remain, \([0-9]*\) are dead but not yet removable.*/\1 \2/p'
}

# enqueue_bulk N AGGREGATES [EVENT_TYPE]: N events in one transaction over AGGREGATES aggregates.
enqueue_bulk() {
    sql "SELECT count(outbox_enqueue('Order', 'agg-' || (g % $2), '${3:-order.created}',
             jsonb_build_object('n', g, 'pad', repeat('x', 150)))) FROM generate_series(1, $1) g" >/dev/null
}

# Holding rows back (available_at 'infinity') until a test is ready for them:
# nth_id N prints the id of the (N+1)-th row; hold_from ID holds it and every
# later row; release_from ID [BEFORE] makes them due now and wakes idle workers.
nth_id() { sql "SELECT id FROM outbox ORDER BY id OFFSET $1 LIMIT 1"; }
hold_from() { sql "UPDATE outbox SET available_at = 'infinity' WHERE id >= $1"; }
release_from() {
    sql "UPDATE outbox SET available_at = now() WHERE id >= $1 AND id < ${2:-9223372036854775807}"
    sql "SELECT pg_notify('public.outbox', '')" >/dev/null
}

# expect_eq WHAT GOT WANT
expect_eq() { [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"; }
