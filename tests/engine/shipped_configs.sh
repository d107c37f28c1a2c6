#!/bin/bash
# The shipped configs have no silent defaults (issue 49, item 1): with
# OUTBOX_DSN or a broker's address unset, check-config exits 2 naming the
# variable at its file:line instead of reaching a server that happens to
# listen on 127.0.0.1; set, each config passes. The env file, the unit and
# the docs name the variables the configs read. No database is needed.
# shellcheck disable=SC1091
. "$(dirname "$0")/../lib.sh"
WORK=$(mktemp -d /tmp/obx-eng-shipped.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
VARS=(OUTBOX_DSN KAFKA_BOOTSTRAP AMQP_URL MQTT_URL WEBHOOK_URL WEBHOOK_SECRET)
unset_all=()
for v in "${VARS[@]}"; do unset_all+=(-u "$v"); done
declare -A BROKER_VAR=([kafka]=KAFKA_BOOTSTRAP [rabbitmq]=AMQP_URL [mqtt]=MQTT_URL [webhook]=WEBHOOK_URL [quickstart]=)

check() { # check EXPECTED_RC OUT ENV... -- CONF
    local want=$1 out=$2 rc=0
    shift 2
    env "$@" "$OBX_BIN" check-config -c "$conf" >"$out" 2>&1 || rc=$?
    [ "$rc" = "$want" ] || fail "$(basename "$conf") with $*: exit $rc, not $want: $(cat "$out")"
}
n=0
for conf in "$OBX_SRC"/conf/*.conf; do
    name=$(basename "$conf" .conf)
    [ -n "${BROKER_VAR[$name]+x}" ] || fail "a shipped config this test does not know: $conf"
    # nothing set: the database's variable is named, with the file and line
    check 2 "$WORK/none" "${unset_all[@]}"
    line=$(grep -n 'conninfo = "${OUTBOX_DSN}"' "$conf" | cut -d: -f1)
    [ -n "$line" ] || fail "$conf does not read conninfo from \${OUTBOX_DSN} alone"
    grep -q "$name.conf:$line: setting \"conninfo\": environment variable OUTBOX_DSN is not set" "$WORK/none" ||
        fail "$name.conf without OUTBOX_DSN: $(cat "$WORK/none")"
    # the database set, the broker's address not: that one is named
    bv=${BROKER_VAR[$name]}
    if [ -n "$bv" ]; then
        check 2 "$WORK/broker" "${unset_all[@]}" OUTBOX_DSN="host=127.0.0.1 port=1 dbname=none"
        grep -q "$name.conf:[0-9]*: setting \"[a-z_]*\": environment variable $bv is not set" "$WORK/broker" ||
            fail "$name.conf without $bv: $(cat "$WORK/broker")"
    fi
    # everything set: the config passes (nothing is reached: port 1)
    check 0 "$WORK/all" "${unset_all[@]}" OUTBOX_DSN="host=127.0.0.1 port=1 dbname=none" \
        KAFKA_BOOTSTRAP=127.0.0.1:1 AMQP_URL=amqp://u:p@127.0.0.1:1 MQTT_URL=tcp://127.0.0.1:1 \
        WEBHOOK_URL=http://127.0.0.1:1/outbox WEBHOOK_SECRET=s3cret
    grep -q "^$conf: ok" "$WORK/all" || fail "$name.conf: $(cat "$WORK/all")"
    # no variable of a shipped config has a default
    grep -v '^ *#' "$conf" | grep -q '\${[A-Z_]*:-' && fail "$name.conf still has a \${VAR:-default}"
    n=$((n + 1))
done
[ "$n" -ge 5 ] || fail "only $n shipped configs found"

# the env file sets what the configs read, and nothing names another variable
env_file=$OBX_SRC/conf/systemd/example.env
grep -q '^OUTBOX_DSN=' "$env_file" || fail "example.env does not set OUTBOX_DSN"
grep -q '^KAFKA_BOOTSTRAP=' "$env_file" || fail "example.env does not set KAFKA_BOOTSTRAP (kafka.conf)"
stale=$(grep -rln 'DATABASE_URL' "$OBX_SRC/conf" "$OBX_SRC/docs" "$OBX_SRC/README.md" || true)
[ -z "$stale" ] || fail "DATABASE_URL, which no config reads, still named in: $stale"

# a ${VAR:-default} of the user's own still works
cat >"$WORK/own.conf" <<'CONF'
database = { conninfo = "${OBX_TEST_UNSET_DSN:-host=127.0.0.1 port=1 dbname=own}"; };
outputs = ( { name = "mem"; driver = "memory"; } );
CONF
conf=$WORK/own.conf
check 0 "$WORK/own" -u OBX_TEST_UNSET_DSN
echo "PASS shipped_configs ($n configs)"
