# WAL mode helpers for every WAL test (tests/wal/wal_lib.sh sources it too): slots
# dropped, a fresh database without stale slots, and a config turned to WAL
# mode. Source after tests/lib.sh.

# wal_drop_slots DB: drops DB's slots (cluster-wide objects that would hold WAL
# for good), waiting a little for a killed relay's walsender to end; returns 1
# when one is still in use.
wal_drop_slots() {
    local i
    for ((i = 0; i < 50; i++)); do
        psql -qAt -d postgres -c "SELECT count(pg_drop_replication_slot(slot_name)) FROM pg_replication_slots
            WHERE database = '$1' AND NOT active" >/dev/null 2>&1 || true
        [ "$(psql -qAt -d postgres -c "SELECT count(*) FROM pg_replication_slots WHERE database = '$1'" 2>/dev/null)" = 0 ] && return 0
        sleep 0.1
    done
    return 1
}

# fresh_wal_db NAME: fresh_db, after dropping the old database's slots.
fresh_wal_db() {
    wal_drop_slots "${TEST_DB_PREFIX:-}$1" || true
    fresh_db "$1"
}

# drop_wal_slots: at the end of a test, its database's slot.
drop_wal_slots() { wal_drop_slots "$TEST_DB" || fail "the slot of $TEST_DB is still in use"; }

# to_wal_mode CFG: relay.source = "wal", the slot named after the test database.
to_wal_mode() {
    sed -i "s/^relay = {/relay = { source = \"wal\"; wal = { slot = \"$TEST_DB\"; };/" "$1"
    grep -q 'source = "wal"' "$1" || fail "to_wal_mode: no relay group in $1"
}

# enqueue_wal_mix N AGGREGATES HEADERS_SQL: N events, most as rows in transactions of
# 500, every tenth one through outbox_emit; the payload's n grows per aggregate.
enqueue_wal_mix() {
    local k per=500
    for ((k = 0; k < $1 / per; k++)); do
        echo "SELECT count(CASE WHEN g % 10 = 0
                 THEN outbox_emit('Order', 'agg-' || (g % $2), 'order.created', jsonb_build_object('n', g, 'pad', repeat('x', 50)), $3)
                 ELSE outbox_enqueue('Order', 'agg-' || (g % $2), 'order.created', jsonb_build_object('n', g, 'pad', repeat('x', 50)), $3) END)
              FROM generate_series($((k * per + 1)), $(((k + 1) * per))) g;"
    done | psql -qAt -v ON_ERROR_STOP=1 -d "$TEST_DB" -f - >/dev/null
}
