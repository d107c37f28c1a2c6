# Helpers for the WAL mode tests (tests/wal/*.sh): the engine tests' helpers
# (memory driver as the broker, its record file loaded as table rec) and a
# config with relay.source = "wal". Source after setting ENG_TEST.
# shellcheck disable=SC1091
. "$(dirname "${BASH_SOURCE[0]}")/../engine/engine_lib.sh"

. "$(dirname "${BASH_SOURCE[0]}")/walmode.sh"
# at exit (engine_lib's cleanup calls it after killing the relays); tests with
# their own eng_extra_cleanup call wal_drop_slots themselves
eng_extra_cleanup() { [ -z "${TEST_DB:-}" ] || wal_drop_slots "$TEST_DB" || true; }

# WAL_AS=cursor (ctest's cursor_* tests): the same test against the cursor
# source, which shares WAL mode's window, publisher and dead-letter table.
STREAM=${WAL_AS:-wal}
if [ "$STREAM" = cursor ]; then
    STREAMING_LINE="reading public.outbox from cursor"
    STANDBY_LINE="standby: the cursor of public.outbox is held by another relay"
    # The cursor source reads what committed below the oldest transaction
    # still open on the server, in any database (transaction ids are the
    # cluster's): beside other tests, any open transaction of theirs holds
    # it back, and a `run --drain` ends before the rows behind it. So the
    # cursor tests run on a PostgreSQL of their own (free_ports), unless the
    # test starts one itself (CURSOR_OWN_PG=1: pg_restart).
    if [ -z "${CURSOR_OWN_PG:-}" ]; then
        CURSOR_PG_PORT=$(free_ports 1)
        CURSOR_PG_DIR=$(mktemp -d /tmp/obx-cursor-pg.XXXXXX)
        chmod 755 "$CURSOR_PG_DIR"
        ENG_AT_EXIT+=('SVC_DIR=$CURSOR_PG_DIR PG_PORT=$CURSOR_PG_PORT bash "$SERVICES" pg-stop; rm -rf "$CURSOR_PG_DIR"')
        SVC_DIR=$CURSOR_PG_DIR PG_PORT=$CURSOR_PG_PORT bash "$SERVICES" pg-start >/dev/null ||
            fail "the cursor test's PostgreSQL did not start"
        export PGHOST=127.0.0.1 PGPORT=$CURSOR_PG_PORT PGUSER=postgres PGDATABASE=postgres
    fi
else
    STREAMING_LINE="streaming from replication slot"
    STANDBY_LINE="standby: replication slot"
fi

# write_wal_cfg FILE RELAY_SETTINGS MEMORY_OPTIONS [EXTRA]: write_cfg in WAL mode,
# the slot named after the test database (slots are cluster-wide); WAL_OPTS
# adds settings to relay.wal.
write_wal_cfg() { write_cfg "$1" "source = \"$STREAM\"; wal = { slot = \"$TEST_DB\"; ${WAL_OPTS:-} }; $2" "$3" "${4:-}"; }

# wal_expected: the outbox inserts that committed, as table ev
# (event_id, aggregate_id, n = commit order per aggregate). Emitted events are listed by
# the test itself in table emitted (event_id, aggregate_id, n).
wal_expected() {
    sql "DROP TABLE IF EXISTS ev; CREATE TABLE ev AS SELECT event_id, aggregate_id, id AS n FROM outbox"
}

# check_wal_published: every expected event has an ok line; no ok line for an unknown event.
check_wal_published() {
    expect_eq "events without an ok line in the record" \
        "$(sql "SELECT count(*) FROM ev WHERE NOT EXISTS
                  (SELECT 1 FROM r WHERE r.event_id = ev.event_id AND r.status = 'ok')")" 0
    expect_eq "ok lines for events never committed" \
        "$(sql "SELECT count(*) FROM r WHERE status = 'ok' AND NOT EXISTS (SELECT 1 FROM ev WHERE ev.event_id = r.event_id)")" 0
}

# check_wal_order: in the order of first "ok", every aggregate's events are in commit order.
check_wal_order() {
    sql "DROP TABLE IF EXISTS first_ok; CREATE TABLE first_ok AS SELECT ev.n, ev.aggregate_id, min(r.line) AS ok_line
         FROM ev JOIN r USING (event_id) WHERE r.status = 'ok' GROUP BY ev.n, ev.aggregate_id"
    expect_eq "events first published after a later event of their aggregate" \
        "$(sql "SELECT count(*) FROM (SELECT n, lag(n) OVER (PARTITION BY aggregate_id ORDER BY ok_line) AS prev
                FROM first_ok) x WHERE prev > n")" 0
}

# slot_confirmed: the slot's confirmed_flush_lsn (the cursor's place in cursor mode).
slot_confirmed() {
    if [ "$STREAM" = cursor ]; then sql "SELECT xid || '/' || id FROM outbox_cursor"
    else sql "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE database = '$TEST_DB'"; fi
}

# enqueue_txns N AGGREGATES [PER_TXN] [EVENT_TYPE]: N events in transactions of
# PER_TXN (100): the slot confirms whole transactions, as applications commit them.
enqueue_txns() {
    local per=${3:-100} k
    for ((k = 0; k < $1 / per; k++)); do
        echo "SELECT count(outbox_enqueue('Order', 'agg-' || (g % $2), '${4:-order.created}',
                jsonb_build_object('n', g, 'pad', repeat('x', 150)))) FROM generate_series($((k * per + 1)), $(((k + 1) * per))) g;"
    done | psql -qAt -v ON_ERROR_STOP=1 -d "$TEST_DB" -f - >/dev/null
}

# ok_events: distinct events with an "ok" line in the broker log so far.
ok_events() {
    if [ -s "$REC" ]; then { grep '"status":"ok"' "$REC" || true; } | cut -d'"' -f4 | sort -u | wc -l; else echo 0; fi
}

# spanning_writers WRITERS TXNS PER AGGS: WRITERS sessions at once, each
# committing TXNS transactions of PER events on random aggregates of AGGS
# ("agg-007"), taken in key order as the README asks: most span every shard.
spanning_writers() {
    local w pids=()
    for ((w = 1; w <= $1; w++)); do
        psql -qAt -v ON_ERROR_STOP=1 -d "$TEST_DB" -c "DO \$\$ DECLARE a int; BEGIN
          FOR i IN 1..$2 LOOP
            FOR a IN SELECT floor(random() * $4)::int x FROM generate_series(1, $3) ORDER BY 1 LOOP
              PERFORM outbox_enqueue('Order', 'agg-' || lpad(a::text, 3, '0'), 'order.changed',
                                     jsonb_build_object('w', $w, 'i', i));
            END LOOP;
            COMMIT;
          END LOOP; END \$\$" >/dev/null &
        pids+=($!)
    done
    for w in "${pids[@]}"; do wait "$w" || fail "a writer failed"; done
}
