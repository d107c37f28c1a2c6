#!/bin/bash
# A hung webhook endpoint (issue 34): whserver SIGSTOPped for 30 s, 15 times the request timeout (its
# connections and new ones accepted by the kernel, nothing answered) while
# producers commit 100 events/s; timeout_ms = 2000 and max_attempts = 2, so
# any attempt the hang cost would dead-letter events (the previous
# classification, RETRIABLE on curl 28, dead-lettered hundreds). No relay
# transaction past the 5 s bound, a bystander's dead rows all removable;
# after SIGCONT every event is published and answered 200, first deliveries
# in order per aggregate, none dead; the duplicates (requests the endpoint
# read only after it woke, sent again meanwhile) are printed.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/wh_lib.sh"

HANG_S=30
BOUND_MS=5000 # relay.max_transaction_ms, the default
N=3000        # 100 events/s at most: the producers outlast the hang (about 60/s here)
wh_server sigstop
fresh_db webhook_e2e_sigstop
CFG=$WH_DIR/relay.cfg
cat >"$CFG" <<CFG
database = { conninfo = "\${TEST_DSN}"; };
relay = { workers = 2; batch_size = 500; ordering = "aggregate"; poll_interval_ms = 200; max_attempts = 2;
          backoff = { initial_ms = 100; max_ms = 1000; multiplier = 2.0; jitter = 0.2; };
          drivers_dir = "\${OBX_DRIVERS}"; };
outputs = ( { name = "hook"; driver = "webhook";
              options = { url = "\${WH_URL}/hooks"; timeout_ms = 2000; secret_env = "WEBHOOK_TEST_SECRET"; }; } );
routes = ( { event_type = "*"; output = "hook"; destination = "orders"; } );
CFG
"$OBX_BIN" init-db -c "$CFG" >/dev/null || fail "init-db"
bystander_make

"$OBX_BIN" run -c "$CFG" 2>"$WH_DIR/relay.log" &
RELAY=$!
produce_paced $N 50
trap 'kill -CONT "$WH_PID" 2>/dev/null || true; kill "$RELAY" "$PRODUCER" 2>/dev/null || true; wh_stop' EXIT
hang_round "$WH_PID" $N
kill -TERM "$RELAY"
wait "$RELAY" || { tail -30 "$WH_DIR/relay.log" >&2; fail "the relay exited non-zero"; }
wh_stop

sql "CREATE TABLE rec (seq bigint, ms bigint, status int, event_id text, event_type text, aggregate_type text,
         aggregate_id text, created_at text, destination text, path text, tenant text, content_type text,
         sig_ok int, nth int, body_md5 text)"
psql -qAt -v ON_ERROR_STOP=1 -d "$TEST_DB" -c "\\copy rec FROM '$WH_REC'" || fail "loading the records"

check_hang_bounded $BOUND_MS
expect_eq "dead rows during the hang" "$DURING" 0
expect_eq "published rows" "$(published_count)" "$N"
expect_eq "dead rows" "$(sql "SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL")" 0
expect_eq "events answered 200" "$(sql "SELECT count(DISTINCT event_id) FROM rec WHERE status = 200")" "$N"
expect_eq "aggregates whose first deliveries are out of id order" \
    "$(sql "SELECT count(*) FROM (SELECT o.id < lag(o.id) OVER (PARTITION BY o.aggregate_id ORDER BY r.first) AS back
          FROM (SELECT event_id, min(seq) AS first FROM rec WHERE status = 200 GROUP BY 1) r
          JOIN outbox o ON o.event_id::text = r.event_id) x WHERE back")" 0
timeouts=$(grep -c "curl 28" "$WH_DIR/relay.log" || true)
dups=$(sql "SELECT count(*) - count(DISTINCT event_id) FROM rec WHERE status = 200")
# published rows count their successful attempt: more than 1 is a failure charged
charged=$(sql "SELECT count(*) FROM outbox WHERE attempts > 1")
echo "PASS webhook_e2e_sigstop ($N events, hung ${HANG_S}s, oldest transaction ${MAX_XACT_MS} ms," \
     "$timeouts log lines with curl 28, rows charged an attempt $charged, duplicates $dups)"
