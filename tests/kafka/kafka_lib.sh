# Helpers for the Kafka tests. Source after tests/lib.sh.
KDRV=${KDRV:?KDRV must name the kdrv harness}
KCONSUME=${KCONSUME:?KCONSUME must name the kconsume test consumer}
KAFKA_SO=${KAFKA_SO:-${OBX_DRIVERS:-}/kafka.so}
WORK=$(mktemp -d /tmp/obx-kafka-test.XXXXXX)
KM_PID=

cleanup() {
    if [ -n "$KM_PID" ]; then kill -TERM "$KM_PID" 2>/dev/null || true; wait "$KM_PID" 2>/dev/null || true; fi
    [ -n "${KEEP_WORK:-}" ] && echo "kept $WORK" >&2 || rm -rf "$WORK"
}
trap cleanup EXIT

# kmock_start TOPIC[:PARTITIONS]...: a PRIVATE mock cluster for fault tests
# (SIGUSR1/SIGUSR2 take its brokers down/up). Sets KM_PID and KM_BOOTSTRAP.
kmock_start() {
    local args=(-f "$WORK/kmock.bootstrap") t i
    # shellcheck disable=SC2046
    cc -O2 -Wall -o "$WORK/kmock" "$OBX_SRC/tests/services/kmock.c" $(pkg-config --cflags --libs rdkafka) -lpthread \
        || fail "kmock build failed"
    for t in "$@"; do args+=(-t "$t"); done
    "$WORK/kmock" "${args[@]}" </dev/null >"$WORK/kmock.out" 2>"$WORK/kmock.err" &
    KM_PID=$!
    for ((i = 0; i < 200; i++)); do [ -s "$WORK/kmock.bootstrap" ] && break; sleep 0.05; done
    [ -s "$WORK/kmock.bootstrap" ] || { cat "$WORK/kmock.err" >&2; fail "private kmock did not start"; }
    KM_BOOTSTRAP=$(cat "$WORK/kmock.bootstrap")
}

# check_delivery EXPECTED_IDS CONSUMED: every expected event id was consumed;
# duplicates are counted (at-least-once allows them) and reported.
check_delivery() {
    local expected=$1 consumed=$2 missing dups
    cut -f4 "$consumed" | sort > "$WORK/got.sorted"
    sort -u "$expected" > "$WORK/want.sorted"
    missing=$(comm -23 "$WORK/want.sorted" <(sort -u "$WORK/got.sorted") | wc -l)
    dups=$(uniq -d "$WORK/got.sorted" | wc -l)
    note "delivery: $(wc -l < "$WORK/want.sorted") expected, $(wc -l < "$WORK/got.sorted") consumed, $missing missing, $dups duplicated"
    [ "$missing" = 0 ] || { comm -23 "$WORK/want.sorted" <(sort -u "$WORK/got.sorted") | head -5 >&2; fail "$missing events missing"; }
    DUPS=$dups
}

# check_order CONSUMED SEQ_COLUMN GROUP_COLUMNS: within each partition, the
# sequence column never goes down for one group (e.g. aggregate).
check_order() {
    local bad
    bad=$(awk -F'\t' -v s="$2" -v g="$3" '
        { split(g, cols, ","); k = $1; for (i in cols) k = k SUBSEP $(cols[i]);
          if ((k in last) && $s + 0 < last[k]) { n++; if (n <= 3) print "out of order: " $0 > "/dev/stderr" }
          last[k] = $s + 0 }
        END { print n + 0 }' "$1")
    [ "$bad" = 0 ] || fail "$bad messages out of per-aggregate order"
}

# write_relay_cfg FILE BOOTSTRAP TOPIC [WORKERS] [MSG_TIMEOUT_MS] [EXTRA_PROPERTIES]
# A relay config for the database in TEST_DSN, publishing everything to TOPIC.
write_relay_cfg() {
    cat > "$1" <<CFG
database = { conninfo = "\${TEST_DSN}"; };
relay = {
  workers = ${4:-2};
  batch_size = 500;
  ordering = "aggregate";
  max_attempts = 1000;
  poll_interval_ms = 200;
  backoff = { initial_ms = 100; max_ms = 2000; multiplier = 2.0; jitter = 0.2; };
  drivers_dir = "\${OBX_DRIVERS}";
};
outputs = (
  { name = "kafka"; driver = "kafka";
    options = { bootstrap_servers = "$2"; message_timeout_ms = ${5:-30000}; };
    properties = ( ["linger.ms", "5"], ["compression.type", "lz4"]${6:+, $6} ); }
);
routes = (
  { event_type = "*"; aggregate_type = "*"; output = "kafka"; destination = "$3"; }
);
CFG
}
