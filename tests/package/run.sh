#!/bin/bash
# The .deb end to end, on the machine itself (CI, as root; it changes the
# system, so it is not a ctest test): builds the package with CPack, installs
# it with dpkg -i, and checks what it installed: `outbox-relay --version` and
# `drivers` from /usr/bin, the system user and /etc/outbox-relay, the man page,
# header and pkg-config file, `systemd-analyze verify` of the unit, and a
# drain with the file driver, as the outbox-relay user, with the example
# config from /usr/share/doc against the test PostgreSQL. Purges the package
# at the end. Needs the services of tests/services/services.sh (PostgreSQL).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${OBX_PACKAGE_BUILD:-$root/build-deb}
export SVC_DIR=${SVC_DIR:-/tmp/ci-services}
export PGOPTIONS="-c client_min_messages=warning"
# shellcheck disable=SC1091
. "$SVC_DIR/env.sh"

fail() { echo "FAIL: $*" >&2; exit 1; }
expect_eq() { [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"; }
work=$(mktemp -d /tmp/obx-package.XXXXXX)
chmod 755 "$work"
db=obx_package
cleanup() {
    local rc=$?
    dpkg --purge outbox-relay >/dev/null 2>&1 || true
    psql -qAt -d postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
    [ "$rc" -eq 0 ] && rm -rf "$work" || echo "--- work dir kept: $work" >&2
    exit "$rc"
}
trap cleanup EXIT

if ! command -v systemd-analyze >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends systemd >/dev/null
fi

echo "--- building the package"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr -DOBX_TESTS=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null
rm -f "$build"/outbox-relay_*.deb
(cd "$build" && cpack -G DEB >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log" >&2; fail cpack; }
deb=$(ls "$build"/outbox-relay_*.deb)
version=$(sed -n 's/^project(outbox-relay VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
# The ABI the drivers are built with, from the public header (no copy to keep in step).
abi_major=$(sed -n 's/^#define OBX_ABI_MAJOR \([0-9]*\).*/\1/p' "$root/include/obx/driver.h")
abi_minor=$(sed -n 's/^#define OBX_ABI_MINOR \([0-9]*\).*/\1/p' "$root/include/obx/driver.h")
abi="$abi_major.$abi_minor"
expect_eq "package file" "$(basename "$deb")" "outbox-relay_${version}_$(dpkg --print-architecture).deb"

echo "--- dpkg -i $(basename "$deb")"
dpkg -i "$deb" >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log" >&2; fail "dpkg -i failed"; }
expect_eq "package status" "$(dpkg-query -W -f '${Status}' outbox-relay)" "install ok installed"
expect_eq "binary on PATH" "$(command -v outbox-relay)" /usr/bin/outbox-relay
commit=$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
expect_eq "--version" "$(outbox-relay --version)" "outbox-relay $version (commit $commit, driver ABI $abi)"

libdir=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
outbox-relay drivers >"$work/drivers.txt"
grep -q "^drivers in $libdir/outbox-relay/drivers " "$work/drivers.txt" ||
    fail "drivers not listed from $libdir/outbox-relay/drivers: $(head -1 "$work/drivers.txt")"
for d in file kafka mosquitto mqtt rabbitmq webhook; do
    grep -qE "^$d +[^ ]+ +ABI ${abi//./\\.} " "$work/drivers.txt" || fail "driver $d missing from: $(cat "$work/drivers.txt")"
done
if grep -q refused "$work/drivers.txt"; then fail "a driver was refused: $(grep refused "$work/drivers.txt")"; fi

getent passwd outbox-relay >/dev/null || fail "no outbox-relay user"
expect_eq "/etc/outbox-relay" "$(stat -c '%a %U %G' /etc/outbox-relay)" "750 root outbox-relay"
zcat /usr/share/man/man1/outbox-relay.1.gz | grep -q '^\.SH COMMANDS' || fail "man page has no COMMANDS"
zcat /usr/share/man/man1/outbox-relay.1.gz | grep -qF '\fBcheck\-config \-c FILE' || fail "man page misses check-config"
[ -f /usr/include/obx/driver.h ] || fail "header not installed"
expect_eq "pkg-config" "$(pkg-config --modversion outbox-relay-driver)" "$version"
[ -f /usr/share/doc/outbox-relay/examples/quickstart.conf ] || fail "example configs not installed"
[ -f /usr/share/doc/outbox-relay/monitoring/outbox-relay.rules.yml ] || fail "alert rules not installed"

echo "--- systemd-analyze verify outbox-relay@.service"
man=no
command -v man >/dev/null && man=yes
systemd-analyze verify --man=$man /usr/lib/systemd/system/outbox-relay@.service >"$work/verify.log" 2>&1 ||
    { cat "$work/verify.log" >&2; fail "systemd-analyze verify"; }
if [ -s "$work/verify.log" ]; then cat "$work/verify.log" >&2; fail "systemd-analyze verify printed warnings"; fi

echo "--- a drain with the file driver, as outbox-relay, with the installed example config"
psql -qAt -d postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db" >/dev/null
export OUTBOX_DSN="host=$PGHOST port=$PGPORT user=$PGUSER dbname=$db"
conf=/usr/share/doc/outbox-relay/examples/quickstart.conf
as_relay() { runuser -u outbox-relay -- env OUTBOX_DSN="$OUTBOX_DSN" "$@"; }
(cd / && as_relay outbox-relay init-db -c "$conf") >/dev/null
psql -qAt -d "$db" -c "SELECT count(outbox_enqueue('Order', 'o-' || (g % 3), 'order.created',
                           jsonb_build_object('n', g))) FROM generate_series(1, 25) g" >/dev/null
(cd / && as_relay outbox-relay run -c "$conf" --drain) >"$work/events.jsonl" 2>"$work/run.log" ||
    { cat "$work/run.log" >&2; fail "run --drain"; }
expect_eq "events written to stdout" "$(grep -c '"event_type":"order.created"' "$work/events.jsonl")" 25
expect_eq "published rows" "$(psql -qAt -d "$db" -c "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL")" 25
expect_eq "distinct event ids written" "$(grep -o '"event_id":"[^"]*"' "$work/events.jsonl" | sort -u | wc -l)" 25
expect_eq "status: pending" "$(as_relay outbox-relay status -c "$conf" --json |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["pending"])')" 0
echo "PASS package"
