#!/bin/bash
# Rows the relay cannot turn into a message are dead-lettered with a readable
# last_error, never reach the driver, and do not stop the rows around them
# (same aggregate, on_dead = skip): NULL payload, headers that are not an
# object ('[1,2]', a JSON string), header values that are an object or null,
# a destination template naming an empty field, a payload over
# max_payload_bytes. Good rows (with scalar headers, a per-row destination)
# are published with the right destination.
ENG_TEST=malformed
. "$(dirname "$0")/engine_lib.sh"

fresh_db eng_malformed
write_cfg "$WORK/relay.cfg" "workers = 2; batch_size = 10; max_payload_bytes = 1000;" "" \
'routes = ( { aggregate_type = "Empty"; output = "mem"; destination = "x.${aggregate_id}"; },
           { output = "mem"; destination = "outbox.${aggregate_type}"; } );'
init_db "$WORK/relay.cfg"
sql "CREATE TABLE want (n int PRIMARY KEY, error text, destination text)"
# row n: aggregate, payload, headers, destination override; want: error LIKE or destination
add() { # add N AGG_TYPE AGG_ID PAYLOAD HEADERS DEST WANT_ERROR WANT_DEST
    sql "INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, headers, destination)
         VALUES ('$2', '$3', 'row.$1', $4, $5, $6);
         INSERT INTO want VALUES ($1, $7, $8)"
}
add 1  Order m "'{\"n\":1}'"  NULL NULL NULL "'outbox.Order'"
add 2  Order m NULL NULL NULL "'payload is NULL'" NULL
add 3  Order m "'{\"n\":3}'"  NULL NULL NULL "'outbox.Order'"
add 4  Order m "'{\"n\":4}'"  "'[1,2]'" NULL "'headers must be a JSON object%'" NULL
add 5  Order m "'{\"n\":5}'"  "'{\"trace\":\"abc\",\"n\":5,\"b\":true}'" NULL NULL "'outbox.Order'"
add 6  Order m "'{\"n\":6}'"  "'{\"a\":{\"b\":1}}'" NULL "'header \"a\" must be a string, number or boolean'" NULL
add 7  Order m "'{\"n\":7}'"  "'\"text\"'" NULL "'headers must be a JSON object%'" NULL
add 8  Order m "'{\"n\":8}'"  "'{\"a\":null}'" NULL "'header \"a\" must be a string, number or boolean'" NULL
add 9  Order m "'{\"n\":9}'"  NULL NULL NULL "'outbox.Order'"
add 10 Empty "" "'{\"n\":10}'" NULL NULL "'destination template \"x.\${aggregate_id}\" names aggregate_id, which is empty'" NULL
add 11 Empty ok1 "'{\"n\":11}'" NULL NULL NULL "'x.ok1'"
add 12 Order m "jsonb_build_object('pad', repeat('x', 2000))" NULL NULL "'payload of % bytes exceeds max_payload_bytes (1000)'" NULL
add 13 Order m "'{\"n\":13}'" NULL "'custom.dest'" NULL "'custom.dest'"
add 14 Order m "'[]'" NULL NULL NULL "'outbox.Order'"

drain "$WORK/relay.cfg" "$WORK/relay.log" 120
load_record
sql "CREATE VIEW got AS SELECT w.*, o.event_id, o.published_at, o.dead_at, o.last_error, o.attempts
     FROM want w JOIN outbox o ON o.event_type = 'row.' || w.n"
BAD=$(sql "SELECT string_agg(n || ': ' || coalesce(last_error, '(no error)'), '; ' ORDER BY n) FROM got
           WHERE error IS NOT NULL AND NOT (dead_at IS NOT NULL AND published_at IS NULL AND last_error LIKE error)")
expect_eq "malformed rows not dead with the expected error" "$BAD" ""
BAD=$(sql "SELECT string_agg(n::text, ',' ORDER BY n) FROM got
           WHERE error IS NULL AND NOT (published_at IS NOT NULL AND dead_at IS NULL)")
expect_eq "good rows not published" "$BAD" ""
expect_eq "record lines for dead rows" \
    "$(sql "SELECT count(*) FROM r JOIN got USING (event_id) WHERE got.error IS NOT NULL")" 0
BAD=$(sql "SELECT string_agg(n || ': ' || coalesce(r.destination, '-'), '; ' ORDER BY n) FROM got
           LEFT JOIN r ON r.event_id = got.event_id AND r.status = 'ok'
           WHERE got.error IS NULL AND r.destination IS DISTINCT FROM got.destination")
expect_eq "good rows with a wrong destination" "$BAD" ""
note "errors: $(sql "SELECT string_agg(n || '=' || last_error, ' | ' ORDER BY n) FROM got WHERE dead_at IS NOT NULL")"
check_logs_clean
echo "PASS malformed"
