# The replay tests' shared part (tests/engine/replay.sh, tests/wal/replay.sh):
# source after engine_lib.sh (or wal_lib.sh).

# replay_setup CFG SOURCE_SETTINGS [MEM_OPTIONS]: two memory outputs, "mem"
# (the record file $REC) and "copy" ($WORK/copy.jsonl), and a file output
# "seqfile" ($WORK/seq.jsonl: its lines carry aggregate_seq, which the
# memory driver's do not); one route to mem, destination from the
# aggregate type.
replay_setup() {
    COPY=$WORK/copy.jsonl
    cat >"$1" <<CFG
database = { conninfo = "\${TEST_DSN}"; };
relay = { drivers_dir = "\${OBX_DRIVERS}"; poll_interval_ms = 200; $2 };
outputs = ( { name = "mem"; driver = "memory"; options = { record_file = "$REC"; ${3:-} }; },
            { name = "copy"; driver = "memory"; options = { record_file = "$COPY"; }; },
            { name = "seqfile"; driver = "file"; options = { path = "$WORK/seq.jsonl"; }; } );
routes = ( { output = "mem"; destination = "replayed.\${aggregate_type}"; } );
CFG
    CFG=$1
}

# replay_refused WANT ARGS...: replay exits 2 saying WANT.
replay_refused() {
    local want=$1 rc=0
    shift
    "$OBX_BIN" replay -c "$CFG" "$@" >"$WORK/refused.out" 2>&1 || rc=$?
    expect_eq "exit code of replay $*" "$rc" 2
    grep -q -- "$want" "$WORK/refused.out" || fail "replay $*: no \"$want\" in: $(cat "$WORK/refused.out")"
}

# replay_round MODE: with table want (id, event_id, aggregate_id: the events
# to replay) made, replays them to "copy", stopped by SIGTERM once about half
# are acknowledged, then resumed; checks the copy's record against want.
replay_round() {
    local sum since rc copy_ok
    sum="SELECT md5(string_agg(o::text, ',' ORDER BY id)) FROM outbox o"
    local before
    before=$(sql "$sum")
    local mem_before
    mem_before=$(record_lines)
    since=$(sql "SELECT min(created_at) FROM outbox WHERE event_type = 'order.created'")
    local want_n
    want_n=$(sql "SELECT count(*) FROM want")

    replay_refused "no such output" --since "$since" --to nowhere
    replay_refused '--since "the other day" is not a time' --since "the other day"
    replay_refused "give a route's number" --since "$since" --route 2
    replay_refused "TYPE/ID" --since "$since" --aggregate Order
    replay_refused "rate" --since "$since" --rate 0

    # a first run, stopped half-way
    "$OBX_BIN" replay -c "$CFG" --since "$since" --to copy --rate 4000 --name r1 >"$WORK/r1.out" 2>"$WORK/r1.log" &
    local pid=$!
    ENG_PIDS+=("$pid")
    local i
    for ((i = 0; i < 1200; i++)); do
        copy_ok=$( { grep -c '"status":"ok"' "$COPY" 2>/dev/null || true; } )
        [ "${copy_ok:-0}" -ge $((want_n / 2)) ] && break
        sleep 0.05
    done
    kill -TERM "$pid"
    wait_exit "$pid" 60
    expect_eq "exit code of the stopped replay" "$EXIT_RC" 1
    grep -q "replay r1: stopped: " "$WORK/r1.out" || fail "stopped replay: $(cat "$WORK/r1.out")"
    grep -qE "^replay r1: [0-9]+ of $want_n events \([0-9.]+%\), [0-9]+ events/s, [0-9]+ in flight, ETA " "$WORK/r1.log" ||
        fail "no progress line in $(head -5 "$WORK/r1.log")"
    STOPPED_AT=$(sql "SELECT replayed FROM outbox_relay_replay WHERE name = 'r1'")
    [ "$STOPPED_AT" -gt 0 ] && [ "$STOPPED_AT" -lt "$want_n" ] || fail "stopped at $STOPPED_AT of $want_n"
    local acked_first
    acked_first=$(grep -c '"status":"ok"' "$COPY")

    # resumed: the rest
    "$OBX_BIN" replay -c "$CFG" --since "$since" --to copy --rate 20000 --name r1 >"$WORK/r2.out" 2>"$WORK/r2.log" ||
        fail "resumed replay exited $?: $(cat "$WORK/r2.out" "$WORK/r2.log" | tail -5)"
    grep -q "replay r1: done: $want_n events replayed, 0 failed" "$WORK/r2.out" || fail "resumed replay: $(cat "$WORK/r2.out")"
    "$OBX_BIN" replay -c "$CFG" --since "$since" --to copy --name r1 >"$WORK/r3.out" 2>&1 || fail "finished replay run again"
    grep -q "finished already" "$WORK/r3.out" || fail "finished replay: $(cat "$WORK/r3.out")"
    replay_refused "other arguments" --since "$since" --name r1

    load_record "$COPY"
    expect_eq "replayed events without an ok line" \
        "$(sql "SELECT count(*) FROM want w WHERE NOT EXISTS (SELECT 1 FROM r WHERE r.event_id = w.event_id AND status = 'ok')")" 0
    expect_eq "ok lines of events not in the window" \
        "$(sql "SELECT count(*) FROM r WHERE NOT EXISTS (SELECT 1 FROM want w WHERE w.event_id = r.event_id)")" 0
    expect_eq "lines that are not ok" "$(sql "SELECT count(*) FROM r WHERE status <> 'ok'")" 0
    DUPS=$(dup_count)
    note "$1 replay: first run acknowledged $acked_first and saved $STOPPED_AT; duplicates after the resume: $DUPS"
    expect_eq "events sent twice across the stop (a graceful stop waits for what is in flight)" "$DUPS" 0
    expect_eq "destination from the route's template" \
        "$(sql "SELECT count(*) FROM r WHERE destination <> 'replayed.Order'")" 0
    expect_eq "events first sent after a later event of their aggregate" \
        "$(sql "SELECT count(*) FROM (SELECT w.id, lag(w.id) OVER (PARTITION BY w.aggregate_id ORDER BY min(r.line)) AS prev
                FROM want w JOIN r USING (event_id) GROUP BY w.id, w.aggregate_id) x WHERE prev > id")" 0
    expect_eq "lines sent to mem (not the --to output)" "$(record_lines)" "$mem_before"
    expect_eq "the outbox table after the replays" "$(sql "$sum")" "$before"

    # a crash (SIGKILL) at about a third: the resumed run sends again exactly
    # what was acknowledged past the last saved progress, and nothing is missing
    : >"$COPY"
    "$OBX_BIN" replay -c "$CFG" --since "$since" --to copy --rate 4000 --name k1 >/dev/null 2>"$WORK/k1.log" &
    pid=$!
    ENG_PIDS+=("$pid")
    for ((i = 0; i < 1200; i++)); do
        copy_ok=$( { grep -c '"status":"ok"' "$COPY" 2>/dev/null || true; } )
        [ "${copy_ok:-0}" -ge $((want_n / 3)) ] && break
        sleep 0.05
    done
    kill -KILL "$pid"
    wait_exit "$pid" 30
    local acked saved
    acked=$(grep -c '"status":"ok"' "$COPY")
    saved=$(sql "SELECT replayed FROM outbox_relay_replay WHERE name = 'k1'")
    "$OBX_BIN" replay -c "$CFG" --since "$since" --to copy --rate 100000 --name k1 >"$WORK/k2.out" 2>&1 ||
        fail "replay resumed after SIGKILL: $(tail -3 "$WORK/k2.out")"
    load_record "$COPY"
    expect_eq "events missing after the crash and resume" \
        "$(sql "SELECT count(*) FROM want w WHERE NOT EXISTS (SELECT 1 FROM r WHERE r.event_id = w.event_id)")" 0
    CRASH_DUPS=$(dup_count)
    note "$1 replay: SIGKILL with $acked acknowledged, $saved saved: $CRASH_DUPS duplicates"
    expect_eq "duplicates after SIGKILL (acknowledged past the saved progress)" "$CRASH_DUPS" $((acked - saved))

    # one aggregate, to its route's output (a fresh record: a relay wrote there before)
    : >"$REC"
    "$OBX_BIN" replay -c "$CFG" --since "$since" --aggregate Order/agg-7 --rate 100000 >"$WORK/a.out" 2>&1 ||
        fail "replay --aggregate: $(cat "$WORK/a.out")"
    load_record
    expect_eq "lines of the --aggregate replay" "$(record_lines)" "$(sql "SELECT count(*) FROM want WHERE aggregate_id = 'agg-7'")"
    expect_eq "events of agg-7 sent to mem, in id order" \
        "$(sql "SELECT string_agg(w.id::text, ',' ORDER BY r.line) FROM r JOIN want w USING (event_id)")" \
        "$(sql "SELECT string_agg(id::text, ',' ORDER BY id) FROM want WHERE aggregate_id = 'agg-7'")"

    # the replayed messages carry each event's aggregate_seq (host->message_ext)
    "$OBX_BIN" replay -c "$CFG" --since "$since" --aggregate Order/agg-7 --to seqfile --rate 100000 --name seq \
        >"$WORK/s.out" 2>&1 || fail "replay --to seqfile: $(cat "$WORK/s.out")"
    expect_eq "aggregate_seq of agg-7's replayed events (event_id:seq, in the order sent)" \
        "$(jq -r '"\(.event_id):\(.aggregate_seq)"' "$WORK/seq.jsonl" | paste -sd,)" \
        "$(sql "SELECT string_agg(o.event_id || ':' || o.aggregate_seq, ',' ORDER BY o.id) FROM want w JOIN outbox o USING (id)
                WHERE w.aggregate_id = 'agg-7'")"
    check_logs_clean
}
