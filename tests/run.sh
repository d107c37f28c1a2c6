#!/bin/bash
# The test suite on a fresh Debian 12 machine, as root: installs packages,
# starts the real servers (PostgreSQL, RabbitMQ, Mosquitto, the Kafka mock
# cluster), builds with AddressSanitizer and UndefinedBehaviorSanitizer and
# runs every test with ctest, and the valgrind leak checks on a plain build
# and the threaded tests under ThreadSanitizer. tests/README.md is the map.
#
#   tests/run.sh                 everything (what CI runs)
#   tests/run.sh --quick         the local and db tiers without the slow tests
#   tests/run.sh ARGS...         the main ctest run with ARGS (e.g. -R kafka, -L mqtt),
#                                no valgrind or TSan run
#
# Tests run OBX_TEST_JOBS (4) at a time on 2 cores: most of them wait on
# servers and timers more than they compute, and each keeps to a database,
# work directory, ports, queues, topics and slots of its own (tests/tiers.cmake).
# The valgrind and TSan builds are made while the main run goes on, and their
# tests run beside it on databases of their own (prefixes vg_ and tsan_).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export SVC_DIR=${SVC_DIR:-/tmp/ci-services}
services=$root/tests/services/services.sh
build=${OBX_TEST_BUILD:-$root/build-test}
jobs=${OBX_TEST_JOBS:-4}
quick=
if [ "${1:-}" = --quick ]; then quick=1; shift; fi
t0=$SECONDS
stamp() { echo "--- tests/run.sh: $* at $((SECONDS - t0)) s" >&2; }

[ -n "${OBX_SKIP_INSTALL:-}" ] || [ -n "$quick" ] || "$services" install
# The test servers bind ports in 50000-59999 (fixed ones for the shared
# servers, free_ports in tests/lib.sh for private ones), inside Linux's
# ephemeral range: reserve them, so that no test's outgoing connection holds one.
echo 50000-59999 2>/dev/null >/proc/sys/net/ipv4/ip_local_reserved_ports ||
    echo "tests/run.sh: cannot reserve ports 50000-59999: a test port may be taken" >&2
"$services" ensure
cmake -S "$root" -B "$build" -DOBX_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$build" -j"$(nproc)"
stamp "sanitizer build done"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ctest_main() { ctest --test-dir "$build" --output-on-failure --timeout 900 -j"$jobs" "$@"; }

if [ -n "$quick" ]; then
    ctest_main -L '^(local|db)$' -LE '^slow$' "$@"
    stamp "quick run done"
    exit 0
fi
if [ $# -gt 0 ]; then
    ctest_main "$@"
    exit 0
fi

# Beside the main run, one build after the other, at a lower priority: the
# optimised build (GCC's -O2 flow analysis finds warnings such as
# maybe-uninitialized that the Debug build does not, and the package test
# reuses it), then valgrind's plain build and TSan's, each of only what its
# tests run, each followed by its tests. valgrind does not mix with ASan, nor
# TSan with either. TSan's tests: the memory driver completing from its
# threads, the engine with 2 + 2 workers in two processes, WAL mode's stream,
# side thread and live reload, and several sources in one process (their
# starters, the metrics endpoint reading them, a reload adding and removing).
# Any report fails the run.
side_log=$(mktemp /tmp/obx-run-side.XXXXXX)
side() {
    set -e
    cmake -S "$root" -B "$root/build-deb" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr -DOBX_TESTS=OFF >/dev/null
    nice cmake --build "$root/build-deb" -j"$(nproc)"
    stamp "release build done"
    cmake -S "$root" -B "$build-valgrind" -DCMAKE_BUILD_TYPE=Debug >/dev/null
    nice cmake --build "$build-valgrind" -j"$(nproc)" --target outbox-relay sdk-check-driver obx_driver_memory \
        obx_driver_file obx_driver_webhook whserver wh_pushback
    TEST_DB_PREFIX=vg_ ctest --test-dir "$build-valgrind" --output-on-failure --timeout 900 -j2 -R valgrind
    stamp "valgrind tests done"
    cmake -S "$root" -B "$build-tsan" -DOBX_TSAN=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
    nice cmake --build "$build-tsan" -j"$(nproc)" --target outbox-relay sdk-check-driver obx_driver_memory \
        metrics_client
    TEST_DB_PREFIX=tsan_ TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1} \
        ctest --test-dir "$build-tsan" --output-on-failure --timeout 900 -j2 \
        -R '^(sdk_conformance_memory_threaded|sdk_conformance_memory_threaded_late|engine_ordering|wal_dead_letter|wal_reload|engine_sources)$'
    stamp "TSan tests done"
}
side >"$side_log" 2>&1 &
side_pid=$!
main_rc=0
ctest_main || main_rc=$?
stamp "main run done (exit $main_rc)"
side_rc=0
wait "$side_pid" || side_rc=$?
echo "--- the release, valgrind and TSan builds and tests (exit $side_rc):"
cat "$side_log"
rm -f "$side_log"
stamp "all done"
[ "$main_rc" -eq 0 ] && [ "$side_rc" -eq 0 ]
