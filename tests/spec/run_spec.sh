#!/bin/bash
# run_spec.sh RUNNER SPEC EXPECTED OUTDIR: the runner with the shared
# PostgreSQL's environment (tests/services/services.sh writes it), or with
# SPEC_OWN_PG=1 on a PostgreSQL of its own (free_ports): a spec whose VACUUM
# must free a dead row cannot share a server whose other tests hold the
# horizon back (open transactions, replication slots being made).
set -euo pipefail
SVC_DIR=${SVC_DIR:-/tmp/ci-services}
[ -s "$SVC_DIR/env.sh" ] || { echo "FAIL: services not running ($SVC_DIR/env.sh missing)" >&2; exit 1; }
# shellcheck disable=SC1091
. "$SVC_DIR/env.sh"
export PGOPTIONS="-c client_min_messages=warning"
[ -n "${SPEC_OWN_PG:-}" ] || exec "$@"

OBX_BIN=$1
# shellcheck disable=SC1091
. "$(dirname "$0")/../lib.sh"
port=$(free_ports 1)
dir=$(mktemp -d /tmp/obx-spec-pg.XXXXXX)
chmod 755 "$dir"
trap 'SVC_DIR=$dir PG_PORT=$port bash "$SERVICES" pg-stop >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
SVC_DIR=$dir PG_PORT=$port bash "$SERVICES" pg-start >/dev/null || fail "the spec's PostgreSQL did not start"
export PGHOST=127.0.0.1 PGPORT=$port PGUSER=postgres
"$@"
