# shellcheck shell=bash
# Sourced by run.sh --processes P1,P2,... (after the template and run.sh's helpers): poll mode,
# many relay processes on one outbox, the same total workers (--workers, one figure: 4 by
# default) split over P processes. Each round measures the database limit first (the simplest
# claim+mark, pgbench with as many clients as the total workers, simplest_limit: the faster of
# the statement as written and with the pending index's predicate, as run.sh's ratio), then for each
# ordering and load every process count, in ascending order in odd rounds and descending in even
# ones (ABAB: a machine that drifts shows as a spread between rounds, not as a trend in P).
# Loads: "backlog" (the template's events, nothing else) and "live" (the same backlog while
# bench_producer commits SCALE_LIVE_RATE events/s for SCALE_LIVE_SECONDS).
# Writes scale_poll.tsv and scale_poll.md to --out.
IFS=, read -r -a PS <<<"$PROCESSES"
TW=${WS[0]} SB=${BS[0]} ROUNDS=$((PAIRS > 0 ? PAIRS : 2))
LIVE_RATE=${SCALE_LIVE_RATE:-2000} LIVE_SECONDS=${SCALE_LIVE_SECONDS:-3}
for p in "${PS[@]}"; do
    [ $((TW % p)) = 0 ] || fail "--processes $p does not divide --workers $TW"
done
SCALERES=$OUT/scale_poll.tsv
printf 'round\tdriver\tordering\tload\tprocesses\tworkers_each\tevents\trelay_eps\tdb_limit\tratio\n' >"$SCALERES"

# scale_eps LIVE: events/s of the drain just made, from published_at: rows marked after the first
# mark's instant over the time to the last mark. Live: the window ends when the producer's last
# commit returned, or when the backlog's last row was marked if that came first (past that the
# relays only follow the producer); backlog rows are the template's ids.
scale_eps() {
    local z="max(published_at)"
    if [ "$1" = live ]; then
        local end_us
        end_us=$(cut -f2 "$WORK/commits.tsv" | sort -n | tail -1)
        z="least(to_timestamp($end_us / 1e6), (SELECT max(published_at) FROM outbox WHERE id <= $EVENTS))"
    fi
    psql_db "$RUNDB" "WITH s AS (SELECT min(published_at) a, $z z FROM outbox)
        SELECT round((SELECT count(*) FROM outbox, s WHERE published_at > s.a AND published_at <= s.z)
               / greatest(extract(epoch FROM s.z - s.a), 0.001)) FROM s"
}

# scale_run DRIVER ORDERING PROCESSES LOAD: P relays of TW/P workers each drain a fresh copy of the
# template at once (live: while a producer commits); sets EPS
scale_run() {
    local d=$1 o=$2 p=$3 load=$4 pids=() i pid prod=
    fresh_run_db
    relay_cfg "$WORK/scale.cfg" "$RUNDB" "$d" $((TW / p)) "$SB" "$o" mark
    if [ "$load" = live ]; then
        "$TOOLS/bench_producer" -d "$(dsn_of "$RUNDB")" -r "$LIVE_RATE" -s "$LIVE_SECONDS" -o "$WORK/commits.tsv" \
            >"$WORK/prod.out" 2>&1 &
        prod=$!
    fi
    for ((i = 0; i < p; i++)); do
        "$OBX_BIN" run -c "$WORK/scale.cfg" --drain >/dev/null 2>"$WORK/scale$i.err" &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do
        wait "$pid" || { cat "$WORK"/scale*.err >&2; fail "relay $d/$o, $p processes, exited with an error"; }
    done
    if [ -n "$prod" ]; then
        # a producer that fell behind its rate is a result of the machine, not a tool failure
        wait "$prod" || note "  producer: $(cat "$WORK/prod.out")"
        # rows committed after the relays found nothing left: one more drain, not measured
        "$OBX_BIN" run -c "$WORK/scale.cfg" --drain >/dev/null 2>>"$WORK/scale0.err" || fail "final drain failed"
    fi
    rmq_purge
    expect_eq "$d/$o/$p processes/$load: rows left unpublished" \
        "$(psql_db "$RUNDB" "SELECT count(*) FROM outbox WHERE published_at IS NULL")" 0
    EPS=$(scale_eps "$load")
}

note "scaling out, poll mode: $TW workers in all over ${PROCESSES//,/, } processes, batch $SB, $ROUNDS rounds"
for ((round = 1; round <= ROUNDS; round++)); do
    written=$(simplest_limit mark "$SB" "$TW")
    pending=$(simplest_limit mark "$SB" "$TW" "$TPL" "$EVENTS" pending)
    lim=$((written > pending ? written : pending))
    note "  round $round: database limit (simplest claim+mark, $TW clients) $written ev/s as written, $pending with the pending predicate"
    order=("${PS[@]}")
    [ $((round % 2)) = 1 ] || mapfile -t order < <(printf '%s\n' "${PS[@]}" | tac)
    for d in "${DRV[@]}"; do for o in "${OS[@]}"; do for load in backlog live; do for p in "${order[@]}"; do
        scale_run "$d" "$o" "$p" "$load"
        ratio=$(awk -v e="$EPS" -v l="$lim" 'BEGIN { printf "%.2f", (l > 0) ? e / l : 0 }')
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$d" "$o" "$load" "$p" $((TW / p)) "$EVENTS" "$EPS" "$lim" "$ratio" >>"$SCALERES"
        note "  round $round $d/$o/$load: $p x $((TW / p)) workers: $EPS ev/s, ratio $ratio"
    done; done; done; done
done

{
    echo "# Poll mode: one outbox, 1 to ${PS[-1]} relay processes"
    echo
    echo "Generated $(date -u '+%Y-%m-%d %H:%M UTC') by \`tests/bench/run.sh $MODE_ARGS\` at commit $(git -C "$OBX_SRC" rev-parse --short HEAD 2>/dev/null || echo '?'); load average at the end $(cut -d' ' -f1-3 /proc/loadavg) ($NCPU cores, shared)."
    echo
    echo "- $EVENTS events over 1,000 aggregates pre-filled (template copy per run), $TW workers in all, batch $SB, retention mark, drivers $DRIVERS; processes started together with \`run --drain\`."
    echo "- live: bench_producer commits $LIVE_RATE events/s for $LIVE_SECONDS s from the relays' start (1 ms tick, small transactions); the rate is taken up to the producer's last commit or the backlog's last mark, whichever came first."
    echo "- Ratio = relay events/s / the database limit of the same round: the faster of the simplest claim+mark as written and with the pending index's predicate (run.sh's statements), pgbench, $TW clients, batch $SB, on a fresh copy, no producer."
    echo "- Rounds alternate the order of the process counts (ascending, then descending)."
    echo
    echo '| driver | ordering | load | processes x workers | ratio per round | events/s per round |'
    echo '|---|---|---|---|---|---|'
    tail -n +2 "$SCALERES" | awk -F'\t' '{ k = $2 "|" $3 "|" $4 "|" $5 " x " $6; if (!(k in r)) o[++m] = k
        r[k] = r[k] (r[k] == "" ? "" : ", ") $10; e[k] = e[k] (e[k] == "" ? "" : ", ") $8 }
        END { for (i = 1; i <= m; i++) { split(o[i], f, "|"); printf "| %s | %s | %s | %s | %s | %s |\n", f[1], f[2], f[3], f[4], r[o[i]], e[o[i]] } }'
    echo
    echo "Database limit per round: $(awk -F'\t' 'NR > 1 && !($1 in s) { s[$1] = 1; printf "%s%s", (n++ ? ", " : ""), $9 }' "$SCALERES") events/s."
} >"$OUT/scale_poll.md"
note "scaling out (poll): $OUT/scale_poll.md, $SCALERES"
