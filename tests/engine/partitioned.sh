#!/bin/bash
# A partitioned outbox (the high-volume layout: a table per id range, dropped
# whole), kept by its owner and registered under the current version. Each partition
# numbers its row versions from block 0, so one ctid names a row in every
# partition: in a plain table the mark finds its rows where the claim locked
# them, here it must find them by id. Two partitions of 1,500 rows each (their
# ctids collide), 2 workers, batches of 50, both orderings, retention mark and
# delete: every row published, and marked once (attempts 1), no row marked or
# deleted that was not published.
ENG_TEST=partitioned
. "$(dirname "$0")/engine_lib.sh"

for case in none/mark aggregate/mark none/delete aggregate/delete; do
    ordering=${case%/*} retention=${case#*/}
    note "$case"
    fresh_db eng_partitioned
    REC=$WORK/${ordering}_$retention.jsonl
    write_cfg "$WORK/init.cfg" "" ""
    init_db "$WORK/init.cfg"
    sql "CREATE TABLE outbox_p (LIKE outbox INCLUDING DEFAULTS) PARTITION BY RANGE (id);
         CREATE TABLE outbox_p1 PARTITION OF outbox_p FOR VALUES FROM (MINVALUE) TO (1501);
         CREATE TABLE outbox_p2 PARTITION OF outbox_p FOR VALUES FROM (1501) TO (MAXVALUE);
         ALTER TABLE outbox_p ADD PRIMARY KEY (id);
         CREATE INDEX ON outbox_p (aggregate_type, aggregate_id, id) WHERE published_at IS NULL AND dead_at IS NULL;
         INSERT INTO outbox_relay_schema (table_name, version) SELECT 'public.outbox_p', version
           FROM outbox_relay_schema WHERE table_name = 'public.outbox';
         INSERT INTO outbox_p (id, aggregate_type, aggregate_id, event_type, payload)
           SELECT g, 'Order', (g % 40)::text, 'order.created', jsonb_build_object('n', g)
           FROM generate_series(1, 3000) g" >/dev/null
    expect_eq "rows at ctid (0,1)" "$(sql "SELECT count(*) FROM outbox_p WHERE ctid = '(0,1)'")" 2
    cat >"$WORK/run.cfg" <<EOF
database = { conninfo = "\${TEST_DSN}"; table = "outbox_p"; };
relay = { drivers_dir = "\${OBX_DRIVERS}"; poll_interval_ms = 200; workers = 2; batch_size = 50;
          ordering = "$ordering"; retention = "$retention"; };
outputs = ( { name = "mem"; driver = "memory"; options = { record_file = "$REC"; }; } );
EOF
    drain "$WORK/run.cfg" "$WORK/${ordering}_$retention.log" 120
    load_record
    expect_eq "events published (distinct ok lines)" \
        "$(sql "SELECT count(DISTINCT event_id) FROM r WHERE status = 'ok'")" 3000
    if [ "$retention" = mark ]; then
        expect_eq "rows marked/attempts 1/marked without an ok line" \
            "$(sql "SELECT count(*) FILTER (WHERE published_at IS NOT NULL) || '/' ||
                           count(*) FILTER (WHERE attempts = 1) || '/' ||
                           count(*) FILTER (WHERE published_at IS NOT NULL AND NOT EXISTS
                             (SELECT 1 FROM r WHERE r.event_id = o.event_id AND r.status = 'ok'))
                    FROM outbox_p o")" "3000/3000/0"
    else
        expect_eq "rows left" "$(sql "SELECT count(*) FROM outbox_p")" 0
    fi
    expect_eq "duplicates" "$(dup_count)" 0
done
# init-db does not install into a partitioned table, in either mode: it says why, and changes nothing
for source in poll wal; do
    sed "s/table = \"outbox_p\";/table = \"outbox_p\"; /; s/retention = /source = \"$source\"; wal = { slot = \"eng_partitioned\"; }; retention = /" \
        "$WORK/run.cfg" >"$WORK/init_p.cfg"
    if "$OBX_BIN" init-db -c "$WORK/init_p.cfg" >"$WORK/init_p.out" 2>&1; then
        fail "init-db ($source) installed into a partitioned table"
    fi
    grep -q "init-db failed for public.outbox_p: it is a partitioned table, which init-db does not install into" \
        "$WORK/init_p.out" || fail "init-db ($source) on a partitioned table: $(cat "$WORK/init_p.out")"
done
expect_eq "replication slots made for the partitioned table" \
    "$(sql "SELECT count(*) FROM pg_replication_slots WHERE slot_name = '$TEST_DB'")" 0
echo "ok partitioned: 3,000 rows over two partitions with colliding ctids, both orderings, mark and delete: each published and recorded once"
