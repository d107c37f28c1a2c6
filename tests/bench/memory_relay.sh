# shellcheck shell=bash
# The relay config of the benchmarks that run it beside producers (real
# shape, pressure phases, flat cost): database $DB at $PGHOST:$PGPORT, 2
# workers, batch 500, ordering aggregate, the memory driver, metrics on
# 127.0.0.1. Sourced; needs DB and OBX_DRIVERS.
#
#   memory_relay_cfg FILE SOURCE RETENTION METRICS_PORT [MEMORY_OPTIONS]
memory_relay_cfg() {
    local src=""
    [ "$2" = wal ] && src="source = \"wal\"; wal = { slot = \"${DB}_slot\"; };"
    [ "$2" = cursor ] && src="source = \"cursor\";"
    cat >"$1" <<CFG
database = { conninfo = "host=$PGHOST port=$PGPORT user=$PGUSER dbname=$DB"; };
relay = { workers = 2; batch_size = 500; ordering = "aggregate"; retention = "$3";
          drivers_dir = "$OBX_DRIVERS"; $src };
log = { level = "warn"; };
metrics = { listen = "127.0.0.1:$4"; };
outputs = ( { name = "out"; driver = "memory"; options = { ${5:-} }; } );
routes = ( { output = "out"; destination = "bench"; } );
CFG
}

# memory_relay_pending_sql SOURCE: counts the events the relay of SOURCE (poll
# or cursor) has still to publish; WAL mode's are in its slot, not in rows.
memory_relay_pending_sql() {
    case $1 in
        poll) echo "SELECT count(*) FROM outbox WHERE published_at IS NULL" ;;
        cursor) echo "SELECT count(*) FROM outbox o, outbox_cursor c WHERE (o.cursor_xid, o.id) > (c.xid, c.id)" ;;
    esac
}
# memory_relay_done_sql SOURCE LSN: true once the relay of SOURCE has finished
# everything committed (WAL mode: its slot confirmed past LSN, the WAL
# position when the wait began).
memory_relay_done_sql() {
    case $1 in
        wal) echo "SELECT confirmed_flush_lsn >= '$2' FROM pg_replication_slots WHERE slot_name = '${DB}_slot'" ;;
        *) echo "SELECT ($(memory_relay_pending_sql "$1")) = 0" ;;
    esac
}

# simplest_claim_sql FILE: poll mode's baseline, the simplest claim+mark of
# the pending rows (the pending index's predicate, batch 500, no ordering) as
# a pgbench script that pauses 10 ms when it finds nothing
simplest_claim_sql() {
    cat >"$1" <<'SQL'
WITH c AS (SELECT id FROM outbox WHERE published_at IS NULL AND dead_at IS NULL AND available_at < 'infinity'
           ORDER BY id FOR UPDATE SKIP LOCKED LIMIT 500),
     u AS (UPDATE outbox o SET published_at = now(), attempts = o.attempts + 1 FROM c WHERE o.id = c.id
           RETURNING o.id, o.event_id, o.aggregate_type, o.aggregate_id, o.event_type, o.payload, o.headers)
SELECT count(*) AS n FROM u \gset
\if :n = 0
\sleep 10 ms
\endif
SQL
}
