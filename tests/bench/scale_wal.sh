# shellcheck shell=bash
# Sourced by run.sh --wal-slots N1,N2,... (after run.sh's helpers): WAL mode sharded over N slots,
# each with a publication whose row filter takes the aggregates with
# (hashtext(aggregate_id) & (N - 1)) = k (N a power of two; N = 1: no filter), one consumer per
# slot at once. For each N: the baseline, PostgreSQL's own pg_recvlogical on N fresh slots, and the
# relay (memory driver, ordering aggregate, `run --drain`, one process per shard) on N fresh slots,
# each after its own fill of --events events (1,000 aggregates, transactions of 500) committed
# before the consumers start; which goes first alternates by round. Measured: the drain rate
# (events / wall time until every consumer has reached the end) and the walsenders' CPU (utime +
# stime from /proc, sampled every 20 ms: a lower bound), per 100,000 events and as a share of the
# cores. At most N slots exist at a time (the server's slots are shared with other work).
# Writes scale_wal.tsv and scale_wal.md to --out.
IFS=, read -r -a NS <<<"$SLOTS"
ROUNDS=$((PAIRS > 0 ? PAIRS : 2))
SLOT_PREFIX=obx_scale_b$$_
for n in "${NS[@]}"; do
    [ $((n & (n - 1))) = 0 ] || fail "--wal-slots $n: the row filter splits by bits, give powers of two"
done
WALRES=$OUT/scale_wal.tsv
printf 'round\tslots\tconsumer\tevents\twall_s\tevents_per_s\twalsender_cpu_s\twalsender_cpu_s_per_100k\twalsender_cores_busy\twalsenders_seen\n' >"$WALRES"

# shard_cfg FILE K N: WAL mode, shard K of N, its slot and publication, the memory driver
shard_cfg() {
    local filter=""
    [ "$3" = 1 ] || filter="row_filter = \"(hashtext(aggregate_id) & $(($3 - 1))) = $2\";"
    cat >"$1" <<CFG
database = { conninfo = "$(dsn_of "$RUNDB")"; };
relay = { source = "wal"; wal = { slot = "${SLOT_PREFIX}$2"; publication = "obx_scale_pub_$2"; $filter };
          ordering = "aggregate"; max_attempts = 1000; drivers_dir = "$OBX_DRIVERS"; };
log = { level = "warn"; };
outputs = ( { name = "out"; driver = "memory"; options = { }; } );
routes = ( { event_type = "*"; aggregate_type = "*"; output = "out"; destination = "bench.\${aggregate_type}"; } );
CFG
}

# shards_fill N: a fresh database with N shards (init-db each: publication, slot) and the events
# committed after the slots were made; sets END (the WAL position after the last commit)
shards_fill() {
    local k
    wal_slots_drop
    fresh_run_db "$EMPTY"
    for ((k = 0; k < $1; k++)); do
        shard_cfg "$WORK/shard$k.cfg" "$k" "$1"
        "$OBX_BIN" init-db -c "$WORK/shard$k.cfg" >/dev/null || fail "init-db of shard $k of $1"
    done
    fill_txns "$RUNDB"
    END=$(psql_db "$RUNDB" "SELECT pg_current_wal_lsn()")
}
# wal_slots_drop: this run's slots, once their walsenders have exited (up to 10 s)
wal_slots_drop() {
    local i
    for ((i = 0; i < 100; i++)); do
        psql_db postgres "SELECT count(pg_drop_replication_slot(slot_name)) FROM pg_replication_slots
                          WHERE NOT active AND left(slot_name, length('$SLOT_PREFIX')) = '$SLOT_PREFIX'" >/dev/null 2>&1
        [ "$(psql_db postgres "SELECT count(*) FROM pg_replication_slots
              WHERE left(slot_name, length('$SLOT_PREFIX')) = '$SLOT_PREFIX'")" = 0 ] && return 0
        sleep 0.1
    done
    fail "slots $SLOT_PREFIX* still active"
}
# the slots first: a database with a slot cannot be dropped
trap 'wal_slots_drop >/dev/null 2>&1; cleanup' EXIT

# consume N KIND: N consumers at once (KIND recvlogical or relay), one per shard's slot; waits for
# them, sampling the walsenders of the N slots; sets WALL (s) and WS_CPU (CPU s of the walsenders)
consume() {
    local n=$1 kind=$2 k pids=() ws=() w f alive t0
    local -A last=()
    t0=$(date +%s.%N)
    for ((k = 0; k < n; k++)); do
        if [ "$kind" = recvlogical ]; then
            pg_recvlogical -d "$(dsn_of "$RUNDB")" -S "${SLOT_PREFIX}$k" --start --no-loop -o proto_version=1 \
                -o publication_names="obx_scale_pub_$k" -F 0 -f /dev/null -E "$END" 2>"$WORK/consumer$k.err" &
        else
            "$OBX_BIN" run -c "$WORK/shard$k.cfg" --drain >/dev/null 2>"$WORK/consumer$k.err" &
        fi
        pids+=($!)
    done
    while :; do
        alive=0
        for k in "${pids[@]}"; do kill -0 "$k" 2>/dev/null && alive=1; done
        [ "${#ws[@]}" -ge "$n" ] || mapfile -t ws < <(psql_db postgres "SELECT active_pid FROM pg_replication_slots
            WHERE active_pid IS NOT NULL AND left(slot_name, length('$SLOT_PREFIX')) = '$SLOT_PREFIX'")
        for w in "${ws[@]}"; do
            if read -r -a f 2>/dev/null <"/proc/$w/stat"; then last[$w]=$((f[13] + f[14])); fi
        done
        [ "$alive" = 1 ] || break
        sleep 0.02
    done
    SEEN=${#last[@]} # a walsender that ended before it was seen is missing from WS_CPU
    WALL=$(awk -v a="$t0" -v z="$(date +%s.%N)" 'BEGIN { printf "%.3f", z - a }')
    for k in "${pids[@]}"; do wait "$k" || { cat "$WORK"/consumer*.err >&2; fail "$kind on $n slots exited with an error"; }; done
    WS_CPU=$(for w in "${!last[@]}"; do echo "${last[$w]}"; done | awk -v hz="$TCK" '{ s += $1 } END { printf "%.2f", s / hz }')
    local behind
    behind=$(psql_db postgres "SELECT count(*) FROM pg_replication_slots WHERE confirmed_flush_lsn < '$END'
             AND left(slot_name, length('$SLOT_PREFIX')) = '$SLOT_PREFIX'")
    expect_eq "$kind on $n slots: slots short of the end" "$behind" 0
}

note "scaling out, WAL mode: ${SLOTS//,/, } slots by row filter, $EVENTS events, $ROUNDS rounds"
for ((round = 1; round <= ROUNDS; round++)); do
    kinds=(recvlogical relay)
    [ $((round % 2)) = 1 ] || kinds=(relay recvlogical)
    for n in "${NS[@]}"; do for kind in "${kinds[@]}"; do
        shards_fill "$n"
        consume "$n" "$kind"
        read -r eps per100k busy < <(awk -v e="$EVENTS" -v w="$WALL" -v c="$WS_CPU" -v k="$NCPU" \
            'BEGIN { printf "%.0f %.2f %.2f\n", e / w, c * 100000 / e, c / w / k }')
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$n" "$kind" "$EVENTS" "$WALL" "$eps" "$WS_CPU" "$per100k" "$busy" "$SEEN" >>"$WALRES"
        note "  round $round, $n slots, $kind: $eps ev/s (${WALL} s), walsenders $WS_CPU CPU s ($per100k per 100k events, $busy of the $NCPU cores; $SEEN of $n seen)"
    done; done
done
wal_slots_drop

{
    echo "# WAL mode: one outbox sharded over 1 to ${NS[-1]} slots"
    echo
    echo "Generated $(date -u '+%Y-%m-%d %H:%M UTC') by \`tests/bench/run.sh $MODE_ARGS\` at commit $(git -C "$OBX_SRC" rev-parse --short HEAD 2>/dev/null || echo '?'); load average at the end $(cut -d' ' -f1-3 /proc/loadavg) ($NCPU cores, shared)."
    echo
    echo "- $EVENTS events over 1,000 aggregates (200-byte payloads, transactions of 500) committed after the slots were made; N slots, each with a publication whose row filter is \`(hashtext(aggregate_id) & (N - 1)) = k\` (none for N = 1); one consumer per slot, all started together; a fresh fill and fresh slots for each consumer."
    echo "- Baseline: \`pg_recvlogical\` (pgoutput, proto_version 1, into /dev/null, --endpos the last commit). Relay: \`outbox-relay run --drain\`, memory driver, ordering aggregate, one process per shard."
    echo "- Rate = events / wall time until every consumer has finished; walsender CPU = utime + stime of the N walsenders (sampled every 20 ms, a lower bound); busy = that CPU / wall / $NCPU cores."
    echo "- Rounds alternate which consumer goes first."
    echo
    echo '| slots | consumer | events/s per round | relay / pg_recvlogical per round | walsender CPU s per 100k events | walsenders busy (share of all cores) |'
    echo '|---:|---|---|---|---|---|'
    tail -n +2 "$WALRES" | awk -F'\t' '{ k = $2 "|" $3; if (!(k in e)) o[++m] = k
        e[k] = e[k] (e[k] == "" ? "" : ", ") $6; c[k] = c[k] (c[k] == "" ? "" : ", ") $8; b[k] = b[k] (b[k] == "" ? "" : ", ") $9
        v[k, ++cnt[k]] = $6 }
        END { for (i = 1; i <= m; i++) { split(o[i], f, "|"); r = "-"
                if (f[2] == "relay") { r = ""; for (j = 1; j <= cnt[o[i]]; j++)
                    r = r (j > 1 ? ", " : "") sprintf("%.2f", v[o[i], j] / v[f[1] "|recvlogical", j]) }
                printf "| %s | %s | %s | %s | %s | %s |\n", f[1], f[2], e[o[i]], r, c[o[i]], b[o[i]] } }'
} >"$OUT/scale_wal.md"
note "scaling out (WAL): $OUT/scale_wal.md, $WALRES"
