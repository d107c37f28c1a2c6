# shellcheck shell=bash
# Sourced by run.sh --cursor-shards N1,N2,... (after run.sh's helpers): the cursor source split
# into N shards by relay.cursor (N a power of two; 1: unsharded), one process per shard at once.
# For each N: the baseline, N psql sessions at once each reading its shard's rows in the cursor's
# order (the relay's read as one COPY: the database's cost of the same rows, nothing published),
# and the relay (memory driver, ordering aggregate, `run --drain`, one process per shard), on one
# fill of --events events (1,000 aggregates, transactions of 500) committed after init-db; which goes
# first alternates by round (neither changes a row). Measured: the rate (events / wall time until
# every consumer has finished). Writes scale_cursor.tsv and scale_cursor.md to --out.
IFS=, read -r -a NS <<<"$SHARDS"
ROUNDS=$((PAIRS > 0 ? PAIRS : 2))
for n in "${NS[@]}"; do
    [ $((n & (n - 1))) = 0 ] || fail "--cursor-shards $n: shards split by bits, give powers of two"
done
CURRES=$OUT/scale_cursor.tsv
printf 'round\tshards\tconsumer\tevents\twall_s\tevents_per_s\n' >"$CURRES"

# shard_cfg FILE K N: the cursor source, shard K of N, the memory driver
shard_cfg() {
    cat >"$1" <<CFG
database = { conninfo = "$(dsn_of "$RUNDB")"; };
relay = { source = "cursor"; cursor = { shards = $3; shard = $2; };
          ordering = "aggregate"; max_attempts = 1000; drivers_dir = "$OBX_DRIVERS"; };
log = { level = "warn"; };
outputs = ( { name = "out"; driver = "memory"; options = { }; } );
routes = ( { event_type = "*"; aggregate_type = "*"; output = "out"; destination = "bench.\${aggregate_type}"; } );
CFG
}

# shards_fill N: a fresh database, init-db of each of N shards, then the events
shards_fill() {
    local k
    fresh_run_db "$EMPTY"
    for ((k = 0; k < $1; k++)); do
        shard_cfg "$WORK/shard$k.cfg" "$k" "$1"
        "$OBX_BIN" init-db -c "$WORK/shard$k.cfg" >/dev/null || fail "init-db of shard $k of $1"
    done
    fill_txns "$RUNDB"
    psql_db "$RUNDB" "VACUUM ANALYZE outbox" >/dev/null
}

# consume N KIND: N consumers at once (KIND read or relay), one per shard; sets WALL (s)
consume() {
    local n=$1 kind=$2 k pids=() t0 filter
    t0=$(date +%s.%N)
    for ((k = 0; k < n; k++)); do
        if [ "$kind" = read ]; then
            filter=true
            [ "$n" = 1 ] || filter="(hashtext(o.aggregate_id) & $((n - 1))) = $k"
            psql -qAt -v ON_ERROR_STOP=1 -d "$RUNDB" -c "COPY (SELECT o.cursor_xid, o.id, o.event_id, o.aggregate_type,
                o.aggregate_id, o.event_type, o.payload, o.headers, o.destination, o.created_at, o.aggregate_seq,
                o.event_version, o.available_at FROM outbox o WHERE $filter ORDER BY o.cursor_xid, o.id) TO STDOUT" \
                >/dev/null 2>"$WORK/consumer$k.err" &
        else
            "$OBX_BIN" run -c "$WORK/shard$k.cfg" --drain >/dev/null 2>"$WORK/consumer$k.err" &
        fi
        pids+=($!)
    done
    for k in "${pids[@]}"; do wait "$k" || { cat "$WORK"/consumer*.err >&2; fail "$kind on $n shards exited with an error"; }; done
    WALL=$(awk -v a="$t0" -v z="$(date +%s.%N)" 'BEGIN { printf "%.3f", z - a }')
    if [ "$kind" = relay ]; then
        expect_eq "relay on $n shards: rows past the cursors" "$(psql_db "$RUNDB" "SELECT count(*) FROM outbox o
            WHERE NOT EXISTS (SELECT 1 FROM outbox_cursor c WHERE c.shard = CASE $n WHEN 1 THEN 0
              ELSE $n + (hashtext(o.aggregate_id) & ($n - 1)) END AND (o.cursor_xid, o.id) <= (c.xid, c.id))")" 0
    fi
}

note "scaling out, cursor mode: ${SHARDS//,/, } shards, $EVENTS events, $ROUNDS rounds"
for ((round = 1; round <= ROUNDS; round++)); do
    kinds=(read relay)
    [ $((round % 2)) = 1 ] || kinds=(relay read)
    for n in "${NS[@]}"; do
        shards_fill "$n"
        for kind in "${kinds[@]}"; do
            consume "$n" "$kind"
            eps=$(awk -v e="$EVENTS" -v w="$WALL" 'BEGIN { printf "%.0f", e / w }')
            printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$n" "$kind" "$EVENTS" "$WALL" "$eps" >>"$CURRES"
            note "  round $round, $n shards, $kind: $eps ev/s (${WALL} s)"
        done
    done
done

{
    echo "# Cursor mode: one outbox in 1 to ${NS[-1]} shards"
    echo
    echo "Generated $(date -u '+%Y-%m-%d %H:%M UTC') by \`tests/bench/run.sh $MODE_ARGS\` at commit $(git -C "$OBX_SRC" rev-parse --short HEAD 2>/dev/null || echo '?'); load average at the end $(cut -d' ' -f1-3 /proc/loadavg) ($NCPU cores, shared)."
    echo
    echo "- $EVENTS events over 1,000 aggregates (200-byte payloads, transactions of 500) committed after \`init-db\` of every shard; N shards by \`relay.cursor = { shards = N; shard = k; }\`, one consumer per shard, all started together."
    echo "- Baseline: N psql sessions, each a \`COPY\` of its shard's rows (the relay's columns, \`hashtext(aggregate_id) & (N - 1) = k\`, in \`(cursor_xid, id)\` order) into /dev/null: the database's read of the same rows. Relay: \`outbox-relay run --drain\`, memory driver, ordering aggregate, one process per shard."
    echo "- Rate = events / wall time until every consumer has finished. Rounds alternate which consumer goes first."
    echo
    echo '| shards | consumer | events/s per round | relay / read per round |'
    echo '|---:|---|---|---|'
    tail -n +2 "$CURRES" | awk -F'\t' '{ k = $2 "|" $3; if (!(k in e)) o[++m] = k
        e[k] = e[k] (e[k] == "" ? "" : ", ") $6; v[k, ++cnt[k]] = $6 }
        END { for (i = 1; i <= m; i++) { split(o[i], f, "|"); r = "-"
                if (f[2] == "relay") { r = ""; for (j = 1; j <= cnt[o[i]]; j++)
                    r = r (j > 1 ? ", " : "") sprintf("%.2f", v[o[i], j] / v[f[1] "|read", j]) }
                printf "| %s | %s | %s | %s |\n", f[1], f[2], e[o[i]], r } }'
} >"$OUT/scale_cursor.md"
note "scaling out (cursor): $OUT/scale_cursor.md, $CURRES"
