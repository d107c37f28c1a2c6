# shellcheck shell=bash
# tests/bench/profile.sh, sourced by run.sh --profile: where the relay stands against the simplest
# claim+mark. Writes to $OUT:
#   explain.txt    EXPLAIN (ANALYZE, BUFFERS) of the relay's claims (ordering none and aggregate) and
#                  its mark, prepared by the relay's own code (bench_db -x), and of the simplest
#                  claim+mark, each twice (full table; after one batch)
#   writes.tsv     write amplification per event of each workload on a fresh copy of the template:
#                  pg_stat_user_tables deltas (heap tuples updated, HOT, deleted) and the WAL between
#                  the workload's start and end read by pg_waldump (heap updates, row locks, index
#                  entries inserted = Btree INSERT_LEAF records, WAL bytes)
#   profile.txt    perf, system-wide, during a relay drain (when perf is installed)
# Uses run.sh's functions (fresh_run_db, relay_cfg, simplest_sql, psql_db) and its variables.

PB=500 PW=2
note "profile: EXPLAIN (ANALYZE, BUFFERS) at batch $PB, write amplification at batch $PB with $PW workers"
{
    for o in none aggregate; do
        fresh_run_db
        relay_cfg "$WORK/prof.cfg" "$RUNDB" memory 1 "$PB" "$o" mark
        "$TOOLS/bench_db" -c "$WORK/prof.cfg" -x
    done
    fresh_run_db
    simplest_sql "$PB" mark > "$WORK/simplest.sql"
    for round in 1 2; do
        echo "### simplest claim+mark, batch $PB, statement $round"
        psql -qAt -v ON_ERROR_STOP=1 -d "$RUNDB" -c "EXPLAIN (ANALYZE, BUFFERS) $(sed 's/;$//' "$WORK/simplest.sql")"
        echo
    done
} > "$OUT/explain.txt" 2>&1

# How the simplest claim+mark's statement time moves while the table drains (pgbench -l: per
# transaction latency, in the order they ended), as written and with the pending index's predicate
# (dead_at IS NULL AND available_at < 'infinity', so that it may use that partial index)
simplest_drift() {  # LABEL SQLFILE
    local tx=$(((EVENTS + PB * PW - 1) / (PB * PW)))
    fresh_run_db
    rm -f "$WORK"/pgbench_log.*
    (cd "$WORK" && pgbench -n -M prepared -l -f "$2" -c "$PW" -j "$PW" -t "$tx" "$RUNDB" > "$WORK/drift.out" 2>&1) \
        || { cat "$WORK/drift.out" >&2; fail "pgbench ($1) failed"; }
    local eps
    eps=$(pgbench_eps "$EVENTS" < "$WORK/drift.out")
    sort -n -k5,5 -k6,6 "$WORK"/pgbench_log.* | awk -v l="$1" -v e="$eps" '{ lat[NR] = $3 / 1000 } END {
        d = int(NR / 10); if (d < 1) d = 1
        for (i = 1; i <= d; i++) a += lat[i]
        for (i = NR - d + 1; i <= NR; i++) z += lat[i]
        printf "%s\t%d\t%.1f\t%.1f\t%s\n", l, NR, a / d, z / d, e }' >> "$OUT/simplest_drift.tsv"
    note "  drift $1: $(tail -1 "$OUT/simplest_drift.tsv" | cut -f2-)"
}
printf 'statement\ttransactions\tfirst_tenth_ms\tlast_tenth_ms\tevents_per_s\n' > "$OUT/simplest_drift.tsv"
simplest_sql "$PB" mark > "$WORK/simplest.sql"
simplest_sql "$PB" mark pending > "$WORK/simplest_pending.sql"
for _ in 1 2; do
    simplest_drift "simplest claim+mark, as written" "$WORK/simplest.sql"
    simplest_drift "simplest claim+mark + the pending index's predicate" "$WORK/simplest_pending.sql"
done
{
    echo "### simplest claim+mark with the pending index's predicate, batch $PB, on a full table"
    fresh_run_db
    psql -qAt -v ON_ERROR_STOP=1 -d "$RUNDB" -c "EXPLAIN (ANALYZE, BUFFERS) $(sed 's/;$//' "$WORK/simplest_pending.sql")"
    echo
    echo "### simplest claim+mark as written, batch $PB, with 90% of the rows marked"
    psql -qAt -v ON_ERROR_STOP=1 -d "$RUNDB" -c "UPDATE outbox SET published_at = now()
        WHERE id <= (SELECT percentile_disc(0.9) WITHIN GROUP (ORDER BY id) FROM outbox)" -c "VACUUM ANALYZE outbox" >/dev/null
    psql -qAt -v ON_ERROR_STOP=1 -d "$RUNDB" -c "EXPLAIN (ANALYZE, BUFFERS) $(sed 's/;$//' "$WORK/simplest.sql")"
} >> "$OUT/explain.txt" 2>&1

PGDATA_DIR=$(psql -qAt -d postgres -c "SHOW data_directory")
PG_WALDUMP=$(command -v pg_waldump || echo "$(pg_config --bindir)/pg_waldump")
# write_amp LABEL EVENTS COMMAND...: runs the command against a fresh copy, appends a row to writes.tsv
write_amp() {
    local label=$1 n=$2 lsn0 lsn1 stats counts
    shift 2
    fresh_run_db
    psql_db "$RUNDB" "CHECKPOINT" >/dev/null   # full-page images counted from here are the workload's own
    lsn0=$(psql_db postgres "SELECT pg_current_wal_lsn()")
    "$@" >/dev/null 2>"$WORK/wa.err" || { cat "$WORK/wa.err" >&2; fail "write amplification: $label failed"; }
    sleep 1   # backends report their counters when they exit
    lsn1=$(psql_db postgres "SELECT pg_current_wal_lsn()")
    stats=$(psql_db "$RUNDB" "SELECT n_tup_upd || ' ' || n_tup_hot_upd || ' ' || n_tup_del FROM pg_stat_user_tables
                              WHERE relname = 'outbox'")
    # pg_waldump --stats=record: "Heap/UPDATE  N (pct) ..."; the counts we need, 0 when absent
    # (+INIT: the record that starts a new page; an index entry is a leaf or a posting-list insert)
    counts=$("$PG_WALDUMP" --stats=record -p "$PGDATA_DIR/pg_wal" -s "$lsn0" -e "$lsn1" 2>/dev/null | awk '
        { c[$1] = $2 }
        END { printf "%d %d %d %d %d %d", c["Heap/UPDATE"] + c["Heap/UPDATE+INIT"],
              c["Heap/HOT_UPDATE"] + c["Heap/HOT_UPDATE+INIT"], c["Heap/LOCK"],
              c["Btree/INSERT_LEAF"] + c["Btree/INSERT_POST"], c["Heap/DELETE"], c["Total"] }')
    read -r upd hot del <<<"$stats"
    read -r w_upd w_hot w_lock w_idx w_del w_total <<<"$counts"
    local bytes
    bytes=$(psql_db postgres "SELECT pg_wal_lsn_diff('$lsn1', '$lsn0')")
    awk -v l="$label" -v n="$n" -v u="$upd" -v h="$hot" -v d="$del" -v wu="$w_upd" -v wh="$w_hot" \
        -v wl="$w_lock" -v wi="$w_idx" -v wd="$w_del" -v wt="$w_total" -v b="$bytes" 'BEGIN {
        printf "%s\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.0f\n", l, n, u / n, h / n, d / n,
            wu / n, wl / n, wi / n, wd / n, wt / n, b / n }' >> "$OUT/writes.tsv"
    note "  writes $label: $(tail -1 "$OUT/writes.tsv" | cut -f3-)"
}
printf 'workload\tevents\theap_updated\thot_updated\theap_deleted\twal_heap_updates_non_hot\twal_row_locks\tindex_entries_inserted\twal_heap_deletes\twal_records\twal_bytes\n' > "$OUT/writes.tsv"
simplest_sql "$PB" mark > "$WORK/simplest.sql"
PTX=$(((EVENTS + PB * PW - 1) / (PB * PW)))
write_amp "simplest claim+mark (pgbench)" "$EVENTS" \
    pgbench -n -M prepared -f "$WORK/simplest.sql" -c "$PW" -j "$PW" -t "$PTX" "$RUNDB"
for o in none aggregate; do
    relay_cfg "$WORK/wa-$o.cfg" "$RUNDB" memory "$PW" "$PB" "$o" mark
    write_amp "relay's SQL alone, ordering $o (bench_db)" "$EVENTS" "$TOOLS/bench_db" -c "$WORK/wa-$o.cfg"
    write_amp "relay, memory driver, ordering $o" "$EVENTS" "$OBX_BIN" run -c "$WORK/wa-$o.cfg" --drain
done

if command -v perf >/dev/null; then
    note "profile: perf, memory driver, ordering none, batch $PB, 1 worker; relay + PostgreSQL"
    fresh_run_db
    relay_cfg "$WORK/prof.cfg" "$RUNDB" memory 1 "$PB" none mark
    perf record -q -a -g -o "$WORK/perf.data" -- "$OBX_BIN" run -c "$WORK/prof.cfg" --drain >/dev/null 2>"$WORK/perf.err" || true
    set +o pipefail # head closes perf report's pipe early
    {
        echo "## perf, system-wide during run --drain of $EVENTS events (memory, none, batch $PB, 1 worker)"
        echo '### by process'
        perf report -q -i "$WORK/perf.data" --no-children --sort comm -g none --percent-limit 1 2>/dev/null | head -15
        echo '### outbox-relay, by symbol'
        perf report -q -i "$WORK/perf.data" --no-children --comm outbox-relay --percentage relative --sort dso,sym -g none --percent-limit 1.5 2>/dev/null | head -30
        echo '### postgres, by symbol'
        perf report -q -i "$WORK/perf.data" --no-children --comm postgres --percentage relative --sort sym -g none --percent-limit 1 2>/dev/null | head -30
    } > "$OUT/profile.txt"
    set -o pipefail
fi
