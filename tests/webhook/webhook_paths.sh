#!/bin/bash
# Destinations and header values from the rows, end to end with
# append_destination: a destination "..", "." or with such a segment is
# dead-lettered with the reason and never requested (it would post to a
# parent path); other destinations arrive as one percent-encoded segment
# under url's path. Numeric headers arrive exactly as PostgreSQL printed
# them (0.1, not 0.10000000000000001; integers beyond 64 bits, not a dead row).
# An empty header value, and one of only spaces and tabs, arrive as an empty
# header (HTTP strips a value's surrounding whitespace; curl would drop them).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/wh_lib.sh"

wh_server paths
fresh_db webhook_paths
cat >"$WH_DIR/relay.cfg" <<CFG
database = { conninfo = "\${TEST_DSN}"; };
relay = { workers = 1; batch_size = 50; poll_interval_ms = 200; max_attempts = 3;
          drivers_dir = "\${OBX_DRIVERS}"; };
outputs = ( { name = "hook"; driver = "webhook";
              options = { url = "\${WH_URL}/base/hooks"; append_destination = true;
                          secret_env = "WEBHOOK_TEST_SECRET"; }; } );
routes = ( { event_type = "*"; output = "hook"; destination = "default"; } );
CFG
"$OBX_BIN" init-db -c "$WH_DIR/relay.cfg" >/dev/null || fail "init-db"
sql "CREATE TABLE want (n int PRIMARY KEY, dest text, tenant jsonb, path text)"
# n, destination override, tenant header (jsonb), the path it must reach (NULL: dead)
sql "INSERT INTO want VALUES
     (1, '..', '\"a\"', NULL), (2, '.', '\"a\"', NULL), (3, 'x/../y', '\"a\"', NULL),
     (4, '../..', '\"a\"', NULL), (5, 'x/.', '\"a\"', NULL),
     (6, '..x', '\"a\"', '/base/hooks/..x'), (7, 'x/y z', '\"a\"', '/base/hooks/x%2Fy%20z'),
     (8, 'ok', '0.1', '/base/hooks/ok'), (9, 'ok', '123456789012345678901234567890', '/base/hooks/ok'),
     (10, 'ok', '-1.50e-7', '/base/hooks/ok'), (11, 'ok', '9223372036854775808', '/base/hooks/ok'),
     (12, 'ok', 'true', '/base/hooks/ok'), (13, 'ok', '\"\"', '/base/hooks/ok'),
     (14, 'ok', '\"   \"', '/base/hooks/ok'), (15, 'ok', '\" \\t \"', '/base/hooks/ok')"
sql "INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, headers, destination)
     SELECT 'Path', 'p' || n, 'path.' || n, '{}', jsonb_build_object('tenant', tenant), dest FROM want ORDER BY n" >/dev/null
"$OBX_BIN" run -c "$WH_DIR/relay.cfg" --drain >"$WH_DIR/relay.log" 2>&1 || { tail -20 "$WH_DIR/relay.log"; fail "relay run"; }
wh_stop
sql "CREATE TABLE rec (seq bigint, ms bigint, status int, event_id text, event_type text, aggregate_type text,
         aggregate_id text, created_at text, destination text, path text, tenant text, content_type text,
         sig_ok int, nth int, body_md5 text)"
psql -qAt -v ON_ERROR_STOP=1 -d "$TEST_DB" -c "\\copy rec FROM '$WH_REC'" || fail "loading the records"

BAD=$(sql "SELECT string_agg(w.n || ': ' || coalesce(o.last_error, 'published'), '; ' ORDER BY w.n)
           FROM want w JOIN outbox o ON o.event_type = 'path.' || w.n
           WHERE w.path IS NULL AND NOT (o.dead_at IS NOT NULL AND o.attempts = 1
                 AND o.last_error LIKE '%\"' || w.dest || '\" has a \".\" or \"..\" segment%')")
expect_eq "dot destinations not dead with the reason after one attempt" "$BAD" ""
expect_eq "requests for dot destinations" \
    "$(sql "SELECT count(*) FROM rec r JOIN want w ON r.event_type = 'path.' || w.n WHERE w.path IS NULL")" 0
BAD=$(sql "SELECT string_agg(w.n || ': ' || coalesce(r.path, '(no request)') || ' ' || coalesce(r.tenant, '-'), '; ' ORDER BY w.n)
           FROM want w LEFT JOIN rec r ON r.event_type = 'path.' || w.n AND r.status = 200
           WHERE w.path IS NOT NULL AND (r.path IS DISTINCT FROM w.path
                 OR r.tenant IS DISTINCT FROM CASE WHEN btrim(w.tenant #>> '{}', E' \\t') = '' THEN '(empty)'
                                              ELSE coalesce(w.tenant #>> '{}', w.tenant::text) END)")
expect_eq "requests with a wrong path or tenant header" "$BAD" ""
note "headers sent: $(sql "SELECT string_agg(r.tenant, ' ' ORDER BY r.seq) FROM rec r WHERE r.event_type LIKE 'path.%'")"
echo "PASS webhook_paths"
