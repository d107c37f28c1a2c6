#!/bin/bash
# Java-compatible key placement: the driver's default partitioner
# (murmur2_random) puts each key on the partition Kafka's Java producer
# gives it, toPositive(murmur2(key)) % partitions. The hashes are Kafka's
# own test vector (UtilsTest.testMurmur2), not computed here; two topics of
# 7 and 100 partitions on a private mock cluster, the keys as aggregate ids.
# With another partitioner (consistent: CRC32) the placements differ.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/kafka_lib.sh"

kmock_start kt.part7:7 kt.part100:100
fresh_db kt_partitioner
sql "CREATE TABLE vector (key text, murmur2 bigint);
     INSERT INTO vector VALUES ('21', -973932308), ('foobar', -790332482),
       ('a-little-bit-long-string', -985981536), ('a-little-bit-longer-string', -1486304829),
       ('lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8', -58897971), ('abc', 479470107)" >/dev/null
for n in 7 100; do
    write_relay_cfg "$WORK/relay$n.cfg" "$KM_BOOTSTRAP" "kt.part$n" 1
    "$OBX_BIN" init-db -c "$WORK/relay$n.cfg" >/dev/null || fail "init-db"
    sql "TRUNCATE outbox" >/dev/null
    sql "SELECT count(outbox_enqueue('Order', key, 'order.created', '{}')) FROM vector" >/dev/null
    timeout 120 "$OBX_BIN" run -c "$WORK/relay$n.cfg" --drain 2>"$WORK/relay$n.log" ||
        { tail -20 "$WORK/relay$n.log" >&2; fail "relay run --drain"; }
    # columns: partition offset key event_id
    "$KCONSUME" -b "$KM_BOOTSTRAP" -t "kt.part$n" -n 6 -i 20000 >"$WORK/got$n" 2>"$WORK/consumer$n.err" ||
        { cat "$WORK/consumer$n.err" >&2; fail "consumer checks failed"; }
    sql "CREATE TABLE got$n (part int, off bigint, key text, event_id text)"
    psql -qAt -v ON_ERROR_STOP=1 -d "$TEST_DB" -c "\copy got$n FROM '$WORK/got$n'" || fail "loading what was consumed"
    expect_eq "keys consumed from kt.part$n" "$(sql "SELECT count(DISTINCT key) FROM got$n")" 6
    wrong=$(sql "SELECT string_agg(g.key || ' on ' || g.part || ', Java: ' || (v.murmur2 & 2147483647) % $n, '; ')
                 FROM got$n g JOIN vector v USING (key) WHERE g.part <> (v.murmur2 & 2147483647) % $n")
    [ -z "$wrong" ] || fail "keys not where Kafka's Java partitioner puts them ($n partitions): $wrong"
done
echo "PASS kafka_partitioner: Kafka's 6 murmur2 test keys on the Java producer's partitions of 7 and 100"
