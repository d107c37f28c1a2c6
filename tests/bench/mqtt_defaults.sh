# tests/bench/mqtt_defaults.sh: sourced by run.sh for --mqtt-defaults (needs its
# helpers, $TOOLS, $OBX_BIN, $WORK, $OUT and the tuned Mosquitto at $BENCH_MQTT_URL).
#
# The MQTT output as a new user sets it up: options url and qos only (the
# defaults, which conf/mqtt.conf also ships), per-aggregate topics
# outbox/${aggregate_type}/${aggregate_id}, 2 workers, batch 500, beside the
# memory driver with the same relay settings, in the setups of the issue "MQTT:
# with its defaults the driver delivers tens to a few hundred events per
# second". Two brokers: Mosquitto with its stock settings (Receive Maximum 20,
# Nagle on) and the test Mosquitto (max_inflight_messages 1000,
# set_tcp_nodelay true). Broker limit: bench_broker (paho alone, QoS 1, 2
# clients) at the window the driver ends up with (max_in_flight capped by the
# broker's Receive Maximum). Writes $OUT/mqtt_defaults.md and .tsv.

MQD_STOCK_PORT=${BENCH_MQTT_STOCK_PORT:-$((MQ_PORT + 1))}
MQD_WINDOW_OPT=${MQD_WINDOW_OPT:-max_in_flight} # "window" to measure a driver from before the rename
MQD_DIR=$WORK/mosquitto-stock
MQD_PID=
mqd_stop() { [ -n "$MQD_PID" ] && kill -TERM "$MQD_PID" 2>/dev/null && wait "$MQD_PID" 2>/dev/null; MQD_PID=; }
trap 'mqd_stop; cleanup' EXIT

mkdir -p "$MQD_DIR" && chmod 777 "$MQD_DIR"
sed "s/@PORT@/$MQD_STOCK_PORT/" "$HERE/mosquitto-stock.conf" > "$MQD_DIR/mosquitto.conf"
mosquitto -c "$MQD_DIR/mosquitto.conf" </dev/null >"$MQD_DIR/mosquitto.log" 2>&1 &
MQD_PID=$!
for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$MQD_STOCK_PORT") 2>/dev/null && break; sleep 0.1; done
STOCK_URL=tcp://127.0.0.1:$MQD_STOCK_PORT

# mqd_db EVENTS AGGREGATES: a fresh run database
mqd_db() {
    local db=obx_bench_mqd_$$
    psql -qAt -d postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db" >/dev/null
    mqd_cfg "$WORK/mqd-init.cfg" "$db" memory none ""
    "$OBX_BIN" init-db -c "$WORK/mqd-init.cfg" >/dev/null
    psql_db "$db" "SELECT count(outbox_enqueue('Order', 'agg-' || (g % $2), 'order.created',
                   jsonb_build_object('n', g, 'pad', repeat('x', 180)))) FROM generate_series(1, $1) g" >/dev/null
    psql_db "$db" "VACUUM ANALYZE outbox" >/dev/null
    echo "$db"
}
# mqd_cfg FILE DB DRIVER ORDERING MQTT_OPTIONS
mqd_cfg() {
    cat > "$1" <<CFG
database = { conninfo = "$(dsn_of "$2")"; };
relay = { workers = 2; batch_size = 500; ordering = "$4"; drivers_dir = "$OBX_DRIVERS"; };
log = { level = "warn"; };
outputs = ( { name = "out"; driver = "$3"; options = { $5 }; } );
routes = ( { event_type = "*"; aggregate_type = "*"; output = "out";
             destination = "outbox/\${aggregate_type}/\${aggregate_id}"; } );
CFG
}
# mqd_run DRIVER ORDERING EVENTS AGGREGATES OPTIONS: prints "wall_s events_per_s span_eps":
# events / wall time of run --drain (connect and exit included), and as the main
# benchmark counts: rows / (last - first published_at), the first instant's rows left out
mqd_run() {
    local db t0 t1 left
    db=$(mqd_db "$3" "$4")
    mqd_cfg "$WORK/mqd.cfg" "$db" "$1" "$2" "$5"
    t0=$(date +%s.%N)
    "$OBX_BIN" run -c "$WORK/mqd.cfg" --drain >/dev/null 2>"$WORK/mqd.err" \
        || { cat "$WORK/mqd.err" >&2; fail "relay $1/$2 exited with an error"; }
    t1=$(date +%s.%N)
    left=$(psql_db "$db" "SELECT count(*) FROM outbox WHERE published_at IS NULL")
    expect_eq "$1/$2/$3/$4 [$5] rows left unpublished" "$left" 0
    span=$(psql_db "$db" "WITH b AS (SELECT min(published_at) f, max(published_at) l FROM outbox)
        SELECT round(((SELECT count(*) FROM outbox, b WHERE published_at > b.f)
                      / greatest(extract(epoch FROM b.l - b.f), 0.001))::numeric) FROM b")
    psql -qAt -d postgres -c "DROP DATABASE $db WITH (FORCE)" >/dev/null
    awk -v a="$t0" -v b="$t1" -v n="$3" -v s="$span" 'BEGIN { printf "%.2f %.0f %s\n", b - a, n / (b - a), s }'
}
# the broker's Receive Maximum as the driver logs it at connect (0: none below max_in_flight)
mqd_recv_max() {
    mqd_cfg "$WORK/mqd-probe.cfg" postgres mqtt none "url = \"$1\";"
    sed -i 's/level = "warn"/level = "info"/' "$WORK/mqd-probe.cfg"
    "$OBX_BIN" check-config -c "$WORK/mqd-probe.cfg" 2>&1 | sed -n 's/.*takes at most \([0-9]*\) unack.*/\1/p' | head -1
}

# "ordering aggregates events max_in_flight"; MQD_SETUPS="a b c d;..." replaces the list
SETUPS=(
    "none 100 2000 default"
    "none 100 2000 500"
    "aggregate 100 2000 500"
    "aggregate 100 12000 default"
    "aggregate 1000 2000 default"
)
[ -n "${MQD_SETUPS:-}" ] && IFS=';' read -r -a SETUPS <<<"$MQD_SETUPS"
TSV=$OUT/mqtt_defaults.tsv
printf 'ordering\taggregates\tevents\tmax_in_flight\tmemory_s\tmemory_eps\tmemory_span_eps\tbroker\tmqtt_s\tmqtt_eps\tmqtt_span_eps\tpaho_window\tpaho_eps\tratio\tspan_ratio\n' > "$TSV"
for s in "${SETUPS[@]}"; do
    read -r o a n w <<<"$s"
    read -r ms meps mspan <<<"$(mqd_run memory "$o" "$n" "$a" "")"
    note "  memory $o, $a aggregates, $n events: $ms s ($meps ev/s; $mspan ev/s over the published_at span)"
    for broker in stock tuned; do
        url=$BENCH_MQTT_URL; [ "$broker" = stock ] && url=$STOCK_URL
        opts="url = \"$url\"; qos = 1;"
        [ "$w" = default ] || opts="$opts $MQD_WINDOW_OPT = $w;"
        read -r qs qeps qspan <<<"$(mqd_run mqtt "$o" "$n" "$a" "$opts")"
        mif=$([ "$w" = default ] && echo 64 || echo "$w")
        rmax=$(mqd_recv_max "$url")
        pw=$mif; [ -n "$rmax" ] && [ "$rmax" -lt "$mif" ] && pw=$rmax
        peps=$("$TOOLS/bench_broker" mqtt -u "$url" -t obx/bench/mqd -n "$n" -w 2 -b "$pw" -i "$pw" | awk '{print $3}')
        ratio=$(awk -v q="$qeps" -v m="$meps" -v p="$peps" 'BEGIN { l = m < p ? m : p; printf "%.2f", q / l }')
        sratio=$(awk -v q="$qspan" -v m="$mspan" -v p="$peps" 'BEGIN { l = m < p ? m : p; printf "%.2f", q / l }')
        note "  mqtt ($broker Mosquitto) $o, $a aggregates, $n events, max_in_flight $w: $qs s ($qeps ev/s; span $qspan ev/s); paho alone at window $pw: $peps msg/s; ratio $ratio (span $sratio)"
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$o" "$a" "$n" "$w" "$ms" "$meps" "$mspan" "$broker" "$qs" "$qeps" "$qspan" "$pw" "$peps" "$ratio" "$sratio" >> "$TSV"
    done
done
mqd_stop
{
    echo "# MQTT with defaults, per-aggregate topics ($(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$OBX_SRC" rev-parse --short HEAD 2>/dev/null || echo '?'))"
    echo
    echo "Relay: 2 workers, batch 500, topics outbox/\${aggregate_type}/\${aggregate_id}, run --drain; mqtt options url and qos = 1 only unless max_in_flight is given."
    echo "Brokers: stock = Mosquitto $(dpkg-query -W -f='${Version}' mosquitto 2>/dev/null) with its default settings (Receive Maximum 20, Nagle on); tuned = the test Mosquitto (max_inflight_messages 1000, set_tcp_nodelay true)."
    echo "ev/s = events / wall time of run --drain (connect and exit included); span ev/s = rows / (last - first published_at), the first instant's rows left out (the main benchmark's method). paho alone = bench_broker, 2 clients, QoS 1, one topic, each window of acknowledgements awaited before the next, at the window the driver uses (max_in_flight capped by the Receive Maximum). ratio = mqtt / min(memory, paho alone), on wall time and on the span."
    echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) (shared 2-core machine)."
    echo
    echo '| ordering | aggregates | events | max_in_flight | memory s | memory ev/s | memory span ev/s | broker | mqtt s | mqtt ev/s | mqtt span ev/s | paho window | paho alone ev/s | ratio | span ratio |'
    echo '|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|'
    tail -n +2 "$TSV" | awk -F'\t' '{ printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15 }'
} > "$OUT/mqtt_defaults.md"
echo
cat "$OUT/mqtt_defaults.md"
