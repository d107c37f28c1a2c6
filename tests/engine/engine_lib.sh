# Helpers for the engine tests (tests/engine/*.sh). Source after setting
# ENG_TEST (a short name: it names the database and the work directory):
#   ENG_TEST=crash; . "$(dirname "$0")/engine_lib.sh"
#
# The memory driver's record_file is the "broker log": one JSON line per
# decided outcome, "ok" lines written before the completion. The tests load it
# into PostgreSQL (table rec) and check the guarantees with SQL.
# shellcheck disable=SC1091
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

export PGOPTIONS="-c client_min_messages=warning"
ENG_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OBX_DRIVERS=${OBX_DRIVERS:-$(dirname "$OBX_BIN")/drivers}
export OBX_DRIVERS
PART=
if [ "${OBX_PARTITIONED:-0}" = 1 ]; then PART=_part; ENG_TEST=${ENG_TEST}_part; fi
WORK=$(mktemp -d "/tmp/obx-eng-${ENG_TEST:?set ENG_TEST}.XXXXXX")
chmod 755 "$WORK"
REC=$WORK/record.jsonl
ENG_PIDS=()

# Kills what this test started (by pid) and keeps the work dir on failure.
eng_cleanup() {
    local rc=$?
    local p
    for p in "${ENG_PIDS[@]}"; do
        kill -9 "$p" 2>/dev/null || true
    done
    if [ "$rc" -eq 0 ] && [ -z "${KEEP_WORK:-}" ]; then
        rm -rf "$WORK"
    else
        echo "--- work dir kept: $WORK" >&2
        for f in "$WORK"/*.log; do
            [ -s "$f" ] || continue
            echo "--- tail $f" >&2
            tail -15 "$f" >&2
        done
    fi
    # a killed psql leaves its backend waiting in wait_go, holding back xmin
    if [ -n "${TEST_DB:-}" ]; then
        psql -qAt -d postgres -c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
            WHERE datname = '$TEST_DB' AND application_name LIKE 'obx_sess_%'" >/dev/null 2>&1 || true
    fi
    if declare -F eng_extra_cleanup >/dev/null; then eng_extra_cleanup; fi
    # last: what the test's servers need stopped (after the cleanups above used them)
    local c
    for c in "${ENG_AT_EXIT[@]}"; do eval "$c" >/dev/null 2>&1 || true; done
    exit "$rc"
}
ENG_AT_EXIT=()
trap eng_cleanup EXIT

# write_cfg FILE RELAY_SETTINGS MEMORY_OPTIONS [EXTRA]: a memory-driver config
# recording to $REC. EXTRA is appended verbatim (routes, log ...).
write_cfg() {
    local poll="poll_interval_ms = 200;"
    case "$2" in *poll_interval_ms*) poll="" ;; esac
    local parts=""
    if [ -n "$PART" ]; then parts='partitions = { interval = "1 day"; ahead = 2; };'; fi
    cat >"$1" <<EOF
database = { conninfo = "\${TEST_DSN}"; };
relay = { drivers_dir = "\${OBX_DRIVERS}"; $poll $parts $2 };
outputs = ( { name = "mem"; driver = "memory";
              options = { record_file = "$REC"; $3 }; } );
${4:-}
EOF
}

# init_db CFG: schema into the fresh test database. Partitioned: a partition
# before init-db's first one (MINVALUE up to it), and a created_at default
# that puts about half the rows 3 days back, into it.
init_db() {
    "$OBX_BIN" init-db -c "$1" >/dev/null || fail "init-db failed"
    [ -n "$PART" ] || return 0
    expect_eq "outbox relkind" "$(sql "SELECT relkind FROM pg_class WHERE oid = 'outbox'::regclass")" p
    sql "DO \$\$ BEGIN EXECUTE format('CREATE TABLE outbox_old PARTITION OF outbox FOR VALUES FROM (MINVALUE) TO (%L)',
           (SELECT min(lo) FROM outbox_partition_bounds('outbox'))); END \$\$;
         ALTER TABLE outbox ALTER COLUMN created_at
           SET DEFAULT clock_timestamp() - (random() < 0.5)::int * interval '3 days'" >/dev/null
}

# check_partitions_used: partitioned, both the old partition and the others
# hold rows (else the test did not interleave anything).
check_partitions_used() {
    [ -n "$PART" ] || return 0
    local n
    n=$(sql "SELECT count(*) FILTER (WHERE tableoid = 'outbox_old'::regclass) || '/' ||
                    count(*) FILTER (WHERE tableoid <> 'outbox_old'::regclass) FROM outbox")
    case "$n" in 0/* | */0) fail "rows in outbox_old/the other partitions: $n" ;; esac
}

# start_relay CFG LOG [ARGS...]: the relay in the background; sets RELAY_PID.
start_relay() {
    local cfg=$1 log=$2
    shift 2
    "$OBX_BIN" run -c "$cfg" "$@" >>"$log" 2>&1 &
    RELAY_PID=$!
    ENG_PIDS+=("$RELAY_PID")
}

# start_two_relays CFG_A LOG_A CFG_B LOG_B: both with --drain (PID_A, PID_B),
# the outbox held until all four workers wait for work, so both processes
# take part however fast the first one starts.
start_two_relays() {
    hold_from 0
    start_relay "$1" "$2" --drain
    PID_A=$RELAY_PID
    start_relay "$3" "$4" --drain
    PID_B=$RELAY_PID
    wait_sql "SELECT count(*) >= 4 FROM pg_stat_activity WHERE datname = '$TEST_DB'
              AND application_name = 'outbox-relay' AND state = 'idle' AND query LIKE 'SELECT EXISTS%'" t 60
    release_from 0
}

# wait_exit PID SECONDS: waits for PID (a child); sets EXIT_RC (or fails on timeout).
wait_exit() {
    local pid=$1 i
    for ((i = 0; i < $2 * 10; i++)); do
        if ! kill -0 "$pid" 2>/dev/null; then
            EXIT_RC=0
            wait "$pid" || EXIT_RC=$?
            return 0
        fi
        sleep 0.1
    done
    fail "process $pid did not exit within $2 s"
}

# drain CFG LOG [SECONDS]: `run --drain` in the foreground, bounded; must exit 0.
drain() {
    start_relay "$1" "$2" --drain
    wait_exit "$RELAY_PID" "${3:-120}"
    [ "$EXIT_RC" -eq 0 ] || fail "run --drain exited $EXIT_RC (log $2)"
}

# wait_sql QUERY WANT SECONDS: polls until QUERY returns WANT (liveness bound, not a timing check).
wait_sql() {
    local i got=""
    for ((i = 0; i < $3 * 5; i++)); do
        got=$(sql "$1" 2>/dev/null || true)
        [ "$got" = "$2" ] && return 0
        sleep 0.2
    done
    fail "waited $3 s for [$1] = '$2', last got '$got'"
}

# load_record [FILE]: the record file into table rec (line = file order).
# CSV with control-character quote/delimiter keeps every JSON byte as is.
load_record() {
    local f=${1:-$REC}
    [ -f "$f" ] || : >"$f"
    sql "DROP TABLE IF EXISTS rec CASCADE; CREATE TABLE rec (line bigserial PRIMARY KEY, j jsonb NOT NULL)"
    psql -qAt -v ON_ERROR_STOP=1 -d "$TEST_DB" \
        -c "\\copy rec(j) FROM '$f' WITH (FORMAT csv, QUOTE E'\\x01', DELIMITER E'\\x02')" >/dev/null
    sql "CREATE OR REPLACE VIEW r AS SELECT line, (j->>'event_id')::uuid AS event_id,
           j->>'status' AS status, (j->>'attempt')::int AS attempt, (j->>'t_us')::bigint AS t_us,
           (j->>'pid')::int AS pid, j->>'aggregate_id' AS aggregate_id, j->>'destination' AS destination
         FROM rec"
}

# Pending rows a relay holds in flight. A claim's lease is its transaction's
# row lock: pgrowlocks reads the locks off the table without taking any.
# A partitioned table has no rows of its own: each partition is read.
HELD_SQL="SELECT count(*) FROM pgrowlocks('outbox') l JOIN outbox o ON o.ctid = l.locked_row
          WHERE o.published_at IS NULL AND o.dead_at IS NULL"
[ -z "$PART" ] || HELD_SQL="SELECT count(*) FROM pg_partition_tree('outbox') p, pgrowlocks(p.relid::text) l
          JOIN outbox o ON o.ctid = l.locked_row WHERE p.isleaf AND o.tableoid = p.relid
          AND o.published_at IS NULL AND o.dead_at IS NULL"
eval "lib_$(declare -f fresh_db)"
fresh_db() { lib_fresh_db "$1$PART" && sql "CREATE EXTENSION pgrowlocks" >/dev/null; }

# The common end-of-run checks on table outbox and the loaded record:
# every committed row published, each with an "ok" line, no "ok" for a row
# that is not in the table. Prints the duplicate count; echoes it to stdout.
check_all_published() {
    expect_eq "rows not published" "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NULL")" 0
    expect_eq "rows without an ok line in the record" \
        "$(sql "SELECT count(*) FROM outbox o WHERE NOT EXISTS
                  (SELECT 1 FROM r WHERE r.event_id = o.event_id AND r.status = 'ok')")" 0
    expect_eq "ok lines for events not in the table" \
        "$(sql "SELECT count(*) FROM r WHERE NOT EXISTS (SELECT 1 FROM outbox o WHERE o.event_id = r.event_id)")" 0
    expect_eq "rows still held" "$(sql "$HELD_SQL")" 0
    check_partitions_used
}

# dup_count: "ok" lines beyond the first per event.
dup_count() { sql "SELECT count(*) - count(DISTINCT event_id) FROM r WHERE status = 'ok'"; }
# check_order: per aggregate, in the record's order, events were first
# published in id order, and no event was attempted before its predecessor's
# first "ok" (after load_record).
check_order() {
    sql "DROP TABLE IF EXISTS first_ok; CREATE TABLE first_ok AS SELECT o.id, o.aggregate_id, min(r.line) AS ok_line
         FROM outbox o JOIN r USING (event_id) WHERE r.status = 'ok' GROUP BY o.id, o.aggregate_id"
    expect_eq "events first published after a later event of their aggregate" \
        "$(sql "SELECT count(*) FROM (SELECT id, lag(id) OVER (PARTITION BY aggregate_id ORDER BY ok_line) AS prev
                FROM first_ok) x WHERE prev > id")" 0
    expect_eq "attempts of event N+1 before event N's first ok" \
        "$(sql "SELECT count(*) FROM (SELECT id, lag(ok_line) OVER (PARTITION BY aggregate_id ORDER BY id) AS prev_ok
                FROM first_ok) f JOIN outbox o USING (id) JOIN r USING (event_id)
                WHERE f.prev_ok IS NOT NULL AND r.line < f.prev_ok")" 0
}

# relay_dead: does any relay log contain a sanitizer report or a crash?
check_logs_clean() {
    local f
    for f in "$WORK"/*.log; do
        [ -f "$f" ] || continue
        if grep -qE "ERROR: (Address|Undefined|Leak)Sanitizer|runtime error:|Segmentation fault" "$f"; then
            grep -nE "Sanitizer|runtime error" "$f" | head -5 >&2
            fail "sanitizer report in $f"
        fi
    done
}

# session NAME SQL: a background psql session (application_name NAME) running SQL.
session() {
    # statements go one by one (from stdin), so pg_stat_activity shows the current one
    PGAPPNAME=$1 psql -qAt -v ON_ERROR_STOP=1 -d "$TEST_DB" -f - <<<"$2" >"$WORK/$1.out" 2>&1 &
    SESSION_PID=$!
    ENG_PIDS+=("$SESSION_PID")
}
# A session statement that waits, inside its open transaction, for a row in table go.
wait_go() { echo "DO \$\$ BEGIN WHILE NOT EXISTS (SELECT 1 FROM go WHERE k = '$1') LOOP PERFORM pg_sleep(0.05); END LOOP; END \$\$;"; }
# wait_in_go NAME: until session NAME sits in its wait_go statement.
wait_in_go() {
    wait_sql "SELECT count(*) FROM pg_stat_activity WHERE application_name = '$1'
              AND datname = '$TEST_DB' AND state = 'active' AND query LIKE 'DO%'" 1 30
}
# wait_blocked NAME: until session NAME waits for a lock (the enqueue's per-aggregate lock).
wait_blocked() {
    wait_sql "SELECT count(*) FROM pg_stat_activity WHERE application_name = '$1'
              AND datname = '$TEST_DB' AND wait_event_type = 'Lock'" 1 30
}

# relay_stat LOG NAME: a total from the relay's exit line ("relay stopped:
# claimed N, published N, ..."), e.g. relay_stat "$WORK/a.log" claimed.
relay_stat() {
    local v
    v=$(sed -n "s/.*relay stopped:.*[ ,]$2 \([0-9][0-9]*\).*/\1/p" "$1" | tail -1)
    [ -n "$v" ] || fail "no \"$2\" in an exit line of $1"
    echo "$v"
}

# wait_log FILE PATTERN SECONDS: until FILE has a line matching PATTERN (grep -E).
wait_log() {
    local i
    for ((i = 0; i < $3 * 10; i++)); do
        grep -qE -- "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    fail "waited $3 s for /$2/ in $1"
}

# distinct_ok FILE [AGGREGATE_PREFIX]: distinct events with an "ok" line in
# the record FILE (of the aggregates PREFIX-* only, when given).
distinct_ok() {
    [ -f "$1" ] || { echo 0; return; }
    grep '"status":"ok"' "$1" | grep "\"aggregate_id\":\"${2:-}" |
        sed 's/.*"event_id":"\([^"]*\)".*/\1/' | sort -u | wc -l
}
# extra_ok FILE: "ok" lines beyond the first per event.
extra_ok() { if [ -f "$1" ]; then echo $(($(grep -c '"status":"ok"' "$1") - $(distinct_ok "$1"))); else echo 0; fi; }
# wait_distinct FILE N SECONDS [AGGREGATE_PREFIX]: until distinct_ok reaches N.
wait_distinct() {
    local i
    for ((i = 0; i < $3 * 10; i++)); do
        [ "$(distinct_ok "$1" "${4:-}")" -ge "$2" ] && return 0
        sleep 0.1
    done
    fail "waited $3 s for $2 events ${4:+of $4 }in $(basename "$1"), got $(distinct_ok "$1" "${4:-}")"
}

# record_lines: lines in the broker log so far.
record_lines() { if [ -f "$REC" ]; then wc -l <"$REC"; else echo 0; fi; }

# stop_relay PID SECONDS: SIGTERM, wait; must exit 0.
stop_relay() {
    kill -TERM "$1"
    wait_exit "$1" "$2"
    [ "$EXIT_RC" -eq 0 ] || fail "relay exited $EXIT_RC after SIGTERM"
}

# peak_rss_kb PID: the process's peak resident set (VmHWM) in kB.
peak_rss_kb() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"; }

# squatter_role: a LOGIN role SQ (${TEST_DB}_squatter, roles are the
# server's) with CREATE on the test database's public schema, as a hostile
# application role would have it; it and the database are dropped at exit.
# as_squatter SQL runs SQL as that role.
squatter_role() {
    SQ=${TEST_DB}_squatter
    psql -qAt -d postgres -c "DROP ROLE IF EXISTS $SQ" >/dev/null
    psql -qAt -d postgres -c "CREATE ROLE $SQ LOGIN" >/dev/null
    eng_extra_cleanup() {
        psql -qAt -d postgres -c "DROP DATABASE IF EXISTS $TEST_DB WITH (FORCE)" >/dev/null 2>&1 || true
        psql -qAt -d postgres -c "DROP ROLE IF EXISTS $SQ" >/dev/null 2>&1 || true
    }
    sql "GRANT CREATE ON SCHEMA public TO $SQ" >/dev/null
}
as_squatter() { psql -qAt -v ON_ERROR_STOP=1 "$TEST_DSN user=$SQ" -c "$1"; }
