#!/bin/bash
# run_spec.sh RUNNER SPEC EXPECTED OUTDIR: the runner with the shared
# PostgreSQL's environment (tests/services/services.sh writes it).
set -euo pipefail
SVC_DIR=${SVC_DIR:-/tmp/ci-services}
[ -s "$SVC_DIR/env.sh" ] || { echo "FAIL: services not running ($SVC_DIR/env.sh missing)" >&2; exit 1; }
# shellcheck disable=SC1091
. "$SVC_DIR/env.sh"
export PGOPTIONS="-c client_min_messages=warning"
exec "$@"
