#!/bin/bash
# The test suite on a fresh Debian 12 machine, as root: installs packages,
# starts the real servers (PostgreSQL, RabbitMQ, Mosquitto, the Kafka mock
# cluster), builds with AddressSanitizer and UndefinedBehaviorSanitizer and
# runs every test with ctest, then the valgrind leak checks on a plain build
# and the threaded tests under ThreadSanitizer.
# Extra arguments go to the first ctest (e.g. -R kafka) and skip the last two.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export SVC_DIR=${SVC_DIR:-/tmp/ci-services}
services=$root/tests/services/services.sh
build=${OBX_TEST_BUILD:-$root/build-test}

[ -n "${OBX_SKIP_INSTALL:-}" ] || "$services" install
# The test servers bind fixed ports in 50000-59999, inside Linux's ephemeral
# range: reserve them, so that no test's outgoing connection holds one.
echo 50000-59999 2>/dev/null >/proc/sys/net/ipv4/ip_local_reserved_ports ||
    echo "tests/run.sh: cannot reserve ports 50000-59999: a fixed test port may be taken" >&2
"$services" ensure
cmake -S "$root" -B "$build" -DOBX_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$build" -j"$(nproc)"
# The optimised build first too: GCC's -O2 flow analysis finds warnings
# (maybe-uninitialized) that the Debug build does not, and the package test
# reuses this build instead of failing an hour later.
cmake -S "$root" -B "$root/build-deb" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr -DOBX_TESTS=OFF >/dev/null
cmake --build "$root/build-deb" -j"$(nproc)"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# The hung-broker tests (label hang) mostly wait, each on a private broker
# and its own database (another database's open transaction holds back no
# VACUUM here), as does the Prometheus alert test (a minute's `for`, its own
# database and ports), so they run three at a time first, with the fuzz
# smoke run (no server at all) filling the idle core; the two connection-churn
# tests (label pair: their own database and queue, and they end only their
# own database's sessions) two at a time, then the two fan-out tests (label
# fan: a minute of paced producers each, on their own database and ports),
# then the cursor source's tests two at a time (label cursor: each on a
# database of its own; the one with a private PostgreSQL holds its lock),
# and the tests on private PostgreSQL instances two at a time (label private:
# failover, restarts, max_connections, each on ports of its own); the rest
# one by one.
ctest --test-dir "$build" --output-on-failure --timeout 900 -L hang -j3 "$@"
ctest --test-dir "$build" --output-on-failure --timeout 900 -L pair -j2 "$@"
ctest --test-dir "$build" --output-on-failure --timeout 900 -L fan -j2 "$@"
ctest --test-dir "$build" --output-on-failure --timeout 900 -L cursor -j2 "$@"
ctest --test-dir "$build" --output-on-failure --timeout 900 -L private -j2 "$@"
ctest --test-dir "$build" --output-on-failure --timeout 900 -LE 'hang|pair|fan|cursor|private' "$@"
# valgrind does not mix with ASan: its leak checks run on a plain build, of
# only what they run (the driver checker and the relay on three drivers)
if [ $# -eq 0 ]; then
    cmake -S "$root" -B "$build-valgrind" -DCMAKE_BUILD_TYPE=Debug >/dev/null
    cmake --build "$build-valgrind" -j"$(nproc)" --target outbox-relay sdk-check-driver obx_driver_memory \
        obx_driver_file obx_driver_webhook whserver wh_pushback
    ctest --test-dir "$build-valgrind" --output-on-failure --timeout 900 -R valgrind
    # ThreadSanitizer (excludes ASan, so its own build): the memory driver
    # completing from its threads, the engine with 2 + 2 workers in two
    # processes, WAL mode's stream, side thread and live reload, and several
    # sources in one process (their starters, the metrics endpoint reading
    # them, a reload adding and removing); only what these tests need is
    # built. Any report fails the run.
    cmake -S "$root" -B "$build-tsan" -DOBX_TSAN=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
    cmake --build "$build-tsan" -j"$(nproc)" --target outbox-relay sdk-check-driver obx_driver_memory \
        metrics_client
    TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1} \
        ctest --test-dir "$build-tsan" --output-on-failure --timeout 900 \
        -R '^(sdk_conformance_memory_threaded|sdk_conformance_memory_threaded_late|engine_ordering|wal_dead_letter|wal_reload|engine_sources)$'
fi
