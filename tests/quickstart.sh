#!/bin/bash
# Quick start on a fresh Debian 12 machine, as root: installs what is needed,
# builds, starts a private PostgreSQL on 127.0.0.1:55432, creates the schema,
# enqueues sample events in one transaction and relays them with the file
# driver to stdout. Run it again at will: every step is idempotent.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export SVC_DIR=${SVC_DIR:-/tmp/ci-services}
services=$root/tests/services/services.sh

[ -n "${OBX_SKIP_INSTALL:-}" ] || "$services" install
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOBX_TESTS=OFF >/dev/null
cmake --build "$root/build" -j"$(nproc)" >/dev/null
"$services" pg-only
# shellcheck disable=SC1091
. "$SVC_DIR/env.sh"
export OUTBOX_DSN="host=127.0.0.1 port=$PGPORT user=postgres dbname=${PGDATABASE}"
relay=$root/build/outbox-relay
conf=$root/conf/quickstart.conf

"$relay" init-db -c "$conf"
psql -qAt -c "SELECT count(outbox_enqueue('Order', 'order-' || (g % 3), 'order.created',
                  jsonb_build_object('order', g, 'total', g * 10),
                  jsonb_build_object('traceparent', '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')))
              FROM generate_series(1, 10) g" >/dev/null
echo "--- 10 events enqueued; relaying them to stdout:"
"$relay" run -c "$conf" --drain
echo "--- status:"
"$relay" status -c "$conf"
