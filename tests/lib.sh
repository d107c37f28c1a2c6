# Shared helpers for the shell tests. Source it: . "$(dirname "$0")/../lib.sh"
# Needs: services started by tests/services/services.sh (env in $SVC_DIR/env.sh),
# and OBX_BIN (the outbox-relay executable) set by ctest.
set -euo pipefail

SVC_DIR=${SVC_DIR:-/tmp/ci-services}
# Without the services (a local-tier test: no server at all) the helpers
# load; fresh_db then fails, saying so.
# shellcheck disable=SC1091
if [ -s "$SVC_DIR/env.sh" ]; then . "$SVC_DIR/env.sh"; fi
# psql itself, not Debian's wrapper (a Perl script that picks the version):
# a third of the CPU per call, and the tests call it thousands of times
for _pgbin in /usr/lib/postgresql/*/bin; do [ -x "$_pgbin/psql" ] && PATH=$_pgbin:$PATH; done
unset _pgbin
OBX_BIN=${OBX_BIN:?OBX_BIN must name the outbox-relay executable}
OBX_SRC=${OBX_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
SERVICES=$OBX_SRC/tests/services/services.sh

fail() { echo "FAIL: $*" >&2; exit 1; }
note() { echo "--- $*" >&2; }

# lib_tmp: sets LIB_TMP, where these helpers keep their files: the test's
# WORK, or a directory of their own for the tests that have none (their
# private broker's directory is theirs). Call it in the test's own shell.
lib_tmp() { [ -n "${LIB_TMP:-}" ] || LIB_TMP=${WORK:-$(mktemp -d /tmp/obx-lib.XXXXXX)}; }

# free_ports N: the first of N consecutive free loopback ports, for a private
# server of this test (a broker, a PostgreSQL, a receiver). One helper for
# every test: ports come from 58000-59999 (tests/run.sh reserves 50000-59999
# from the kernel's ephemeral range, so no outgoing connection takes one),
# none listening, and claimed for this test's shell ($$) under a lock, so
# that tests run in parallel, and two runs of one test, never get the same
# ones. A claim lapses when its shell is gone.
free_ports() {
    local n=${1:-1} dir=/tmp/obx-ports base p ok owner try
    mkdir -p "$dir" && chmod 1777 "$dir" 2>/dev/null || true
    (
        flock 9
        for ((try = 0, base = 58000 + (RANDOM % 100) * 20; try < 200; try++, base += 20)); do
            [ $((base + n)) -le 60000 ] || base=58000
            ok=1
            for ((p = base; p < base + n; p++)); do
                if [ -e "$dir/$p" ]; then
                    owner=$(cat "$dir/$p" 2>/dev/null || true)
                    if [ -n "$owner" ] && kill -0 "$owner" 2>/dev/null; then ok=0; break; fi
                fi
                if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then ok=0; break; fi
            done
            if [ $ok = 1 ]; then
                for ((p = base; p < base + n; p++)); do echo "$$" >"$dir/$p"; done
                echo "$base"
                exit 0
            fi
        done
        exit 1
    ) 9>"$dir/.lock" || fail "free_ports: no $n free ports in 58000-59999"
}

# fresh_db NAME: drop and create database NAME (TEST_DB_PREFIX before it,
# when set: runs sharing a server keep to their own names); sets TEST_DB and
# TEST_DSN.
fresh_db() {
    [ -s "$SVC_DIR/env.sh" ] || fail "services not running ($SVC_DIR/env.sh missing): run tests/services/services.sh start"
    TEST_DB=${TEST_DB_PREFIX:-}$1
    psql -qAt -d postgres -c "DROP DATABASE IF EXISTS $TEST_DB WITH (FORCE)" >/dev/null
    psql -qAt -d postgres -c "CREATE DATABASE $TEST_DB" >/dev/null
    TEST_DSN="host=$PGHOST port=$PGPORT user=$PGUSER dbname=$TEST_DB"
    export TEST_DB TEST_DSN
}

# sql QUERY: run in the test database, unaligned output.
sql() { psql -qAt -v ON_ERROR_STOP=1 -d "$TEST_DB" -c "$1"; }

# ---- a broker that hangs: the relay must not hold a transaction past its bound ----
# bystander_make: a table of 1,000 rows beside the outbox (autovacuum off).
bystander_make() {
    sql "CREATE TABLE bystander (n int) WITH (autovacuum_enabled = off);
         INSERT INTO bystander SELECT generate_series(1, 1000)" >/dev/null
}

# relay_oldest_xact: that session as one line (age ms, then pid,
# application, state, wait event, when its state and statement began, the
# statement), for a failure to say what held its transaction; "0" for none.
relay_oldest_xact() {
    sql "SELECT coalesce((SELECT floor(extract(epoch FROM clock_timestamp() - xact_start) * 1000)::bigint
                || ' ms pid=' || pid || ' ' || application_name || ' ' || state || ' wait=' || coalesce(wait_event, '-')
                || ' xid=' || coalesce(backend_xid::text, '-') || ' xmin=' || coalesce(backend_xmin::text, '-')
                || ' state_since=' || to_char(state_change, 'HH24:MI:SS.MS') || ' query_since=' || to_char(query_start, 'HH24:MI:SS.MS')
                || ' ' || left(regexp_replace(query, '\s+', ' ', 'g'), 200)
         FROM pg_stat_activity WHERE datname = current_database()
         AND application_name LIKE 'outbox-relay%' AND xact_start IS NOT NULL
         ORDER BY xact_start LIMIT 1), '0')"
}

# hang_watch SECONDS: while a broker hangs, samples relay_oldest_xact every
# 0.2 s into MAX_XACT_MS; meanwhile, as soon as a claim's transaction holds
# the outbox (its FOR UPDATE lock: pg_locks is read live), deletes every row
# of the bystander, then VACUUMs it at the end: BYSTANDER_VAC is "REMOVED
# NOT_YET_REMOVABLE" (dead rows an open transaction still holds back are
# the second). Fails when no claim was seen in flight.
hang_watch() {
    local end=$((SECONDS + $1)) age deleter
    lib_tmp
    sql "DO \$\$ BEGIN
           FOR i IN 1..6000 LOOP
             IF EXISTS (SELECT 1 FROM pg_locks WHERE relation = 'outbox'::regclass
                        AND mode = 'RowShareLock' AND pid <> pg_backend_pid()) THEN
               DELETE FROM bystander; RAISE WARNING 'bystander deleted at %', clock_timestamp(); RETURN;
             END IF;
             PERFORM pg_sleep(0.01);
           END LOOP;
           RAISE 'no claim in flight';
         END \$\$" >/dev/null 2>"$LIB_TMP/deleter.log" &
    deleter=$!
    MAX_XACT_MS=0 OLDEST_XACT=none
    local line
    while [ $SECONDS -lt $end ]; do
        line=$(relay_oldest_xact) # the age and the session in one query: no race between them
        age=${line%% *}
        if [ "$age" -gt "$MAX_XACT_MS" ]; then
            MAX_XACT_MS=$age
            OLDEST_XACT="$(date +%T.%N | cut -c1-12) $line"
        fi
        sleep 0.2
    done
    wait "$deleter" || fail "no claim was in flight while the broker hung"
    BYSTANDER_VAC=$(psql -qAt -d "$TEST_DB" -c "SET client_min_messages = info" -c "VACUUM (VERBOSE) bystander" 2>&1 |
        sed -n 's/.*tuples: \([0-9]*\) removed, [0-9]* remain, \([0-9]*\) are dead but not yet removable.*/\1 \2/p')
    # what held the horizon, should a row not be removable: every session
    # with a transaction id or a snapshot, in any database, and the slots
    psql -qAt -d "$TEST_DB" -c "SELECT datname, application_name, state, backend_xid, backend_xmin,
            now() - xact_start, left(regexp_replace(query, '\s+', ' ', 'g'), 100)
        FROM pg_stat_activity WHERE (backend_xid IS NOT NULL OR backend_xmin IS NOT NULL)
        AND pid <> pg_backend_pid()" \
        -c "SELECT 'slot', slot_name, xmin, catalog_xmin FROM pg_replication_slots" >"$LIB_TMP/horizon" 2>&1 || true
    cat "$LIB_TMP/deleter.log" >>"$LIB_TMP/horizon" 2>/dev/null || true
}

# check_hang_bounded BOUND_MS: after hang_watch, no relay transaction was
# older than BOUND_MS (with 5 s for a busy machine) and the bystander's dead
# rows were all removable.
check_hang_bounded() {
    note "oldest relay transaction while the broker hung: $MAX_XACT_MS ms (bound $1 ms)"
    if [ "$MAX_XACT_MS" -ge $(($1 + 5000)) ]; then
        local dir
        for dir in "${WORK:-}" "${PMQ_DIR:-}" "${WH_DIR:-}"; do
            [ -n "$dir" ] && [ -f "$dir/relay.log" ] && grep -v ' debug ' "$dir/relay.log" | tail -40 >&2
        done
        cat "$LIB_TMP/horizon" >&2
        fail "a relay transaction stayed open $MAX_XACT_MS ms while the broker hung (bound $1 ms); last seen: $OLDEST_XACT; bystander VACUUM removed, not yet removable: $BYSTANDER_VAC (want 1000 0)"
    fi
    [ "$BYSTANDER_VAC" = "1000 0" ] || { cat "$LIB_TMP/horizon" >&2; fail "bystander VACUUM during the hang: removed, dead but not yet removable: got '$BYSTANDER_VAC', want '1000 0'"; }
}

# hang_round PID N: the hung-broker round of the *_e2e_sigstop tests. Once
# 200 events are published, stops PID (the broker) for HANG_S seconds under
# hang_watch, notes the dead rows meanwhile in DURING, resumes it, waits for
# the producer (PRODUCER) and for all N events to be published (3 minutes).
hang_round() {
    local i
    for ((i = 0; i < 300; i++)); do [ "$(published_count)" -ge 200 ] && break; sleep 0.1; done
    [ "$(published_count)" -ge 200 ] || fail "nothing published before the hang"
    kill -STOP "$1"
    note "broker stopped at $(published_count) published"
    hang_watch "$HANG_S"
    DURING=$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")
    kill -CONT "$1"
    note "broker back at $(published_count) published"
    wait "$PRODUCER"
    for ((i = 0; i < 1800; i++)); do [ "$(published_count)" -ge "$2" ] && break; sleep 0.1; done
}
published_count() { sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL"; }

# produce_paced N AGGREGATES: in the background (PRODUCER), N events, 10 every
# 100 ms, over AGGREGATES aggregates: payload {"n": n}, headers {"seq": "n"},
# n growing in commit order. One session commits each ten and sleeps in the
# server: a psql started per ten cost enough CPU on a shared machine to halve
# the pace, and so lengthen every test that waits for the last event.
produce_paced() {
    local g
    lib_tmp
    for ((g = 0; g < $1; g += 10)); do
        echo "SELECT count(outbox_enqueue('Order', 'agg-' || (n % $2), 'order.created',
                  jsonb_build_object('n', n), jsonb_build_object('seq', n::text)))
              FROM generate_series($g + 1, least($g + 10, $1)) n;
              SELECT pg_sleep(0.1);"
    done >"$LIB_TMP/produce_paced.sql"
    psql -qAt -v ON_ERROR_STOP=1 -d "$TEST_DB" -f "$LIB_TMP/produce_paced.sql" >/dev/null &
    PRODUCER=$!
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
