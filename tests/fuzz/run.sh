#!/bin/bash
# tests/fuzz/run.sh SECONDS [TARGET...]
# Builds each fuzz target (config, message, metrics, pgoutput, timestamp,
# redact by default) with clang's
# libFuzzer under AddressSanitizer and UndefinedBehaviorSanitizer, then runs
# each for SECONDS on its seed corpus (tests/fuzz/corpus/TARGET, read only;
# new inputs go to $FUZZ_OUT/corpus/TARGET). A crash, leak, sanitizer report
# or differential mismatch fails the run and leaves the input in
# $FUZZ_OUT/artifacts. FUZZ_OUT defaults to /tmp/obx-fuzz; FUZZ_JOBS (default 1)
# runs that many fuzzing processes per target.
set -euo pipefail
SECONDS_EACH=${1:?usage: tests/fuzz/run.sh SECONDS [TARGET...]}
shift
TARGETS=("${@:-config}")
[ $# -gt 0 ] || TARGETS=(config message metrics pgoutput timestamp redact)
SRC=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${FUZZ_OUT:-/tmp/obx-fuzz}
CC=${FUZZ_CC:-clang}
command -v "$CC" >/dev/null ||
    { echo "FAIL: $CC not found: install clang and libclang-rt-14-dev (tests/services/services.sh install)" >&2; exit 1; }

mkdir -p "$OUT/obj" "$OUT/artifacts"
PKGS="libpq libconfig libmicrohttpd jansson libcurl"
# -Werror only on the targets: the core's warnings are the gcc build's to judge
CFLAGS=(-g -O1 -std=c11 -D_GNU_SOURCE -Wall -Wextra -fno-omit-frame-pointer
        -fsanitize=address,undefined -fno-sanitize-recover=undefined
        -DOBX_VERSION=\"fuzz\" -DOBX_COMMIT=\"fuzz\" -DOBX_DRIVERS_INSTALL_PATH=\"/nonexistent\"
        -I"$SRC/include" -I"$SRC/core" $(pkg-config --cflags $PKGS))
LIBS=($(pkg-config --libs $PKGS) -lpthread -ldl -lm)

# the core, minus main(), instrumented for coverage
objs=()
for c in "$SRC"/core/*/*.c; do
    [ "$(basename "$c")" = main.c ] && continue
    o=$OUT/obj/$(basename "$c" .c).o
    if [ ! -f "$o" ] || [ "$c" -nt "$o" ] || [ -n "$(find "$SRC/core" "$SRC/include" -name '*.h' -newer "$o")" ]; then
        "$CC" "${CFLAGS[@]}" -fsanitize=fuzzer-no-link -c "$c" -o "$o"
    fi
    objs+=("$o")
done

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$SRC/tests/fuzz/lsan.supp:print_suppressions=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
JOBS=()
[ "${FUZZ_JOBS:-1}" -le 1 ] || JOBS=(-jobs="$FUZZ_JOBS" -workers="$FUZZ_JOBS")
cd "$OUT" # libFuzzer writes its per-job logs (fuzz-N.log) here
status=0
for t in "${TARGETS[@]}"; do
    bin=$OUT/fuzz_$t
    "$CC" "${CFLAGS[@]}" -Werror -fsanitize=fuzzer "$SRC/tests/fuzz/fuzz_$t.c" "${objs[@]}" "${LIBS[@]}" -o "$bin"
    mkdir -p "$OUT/corpus/$t"
    echo "=== fuzz_$t: ${SECONDS_EACH}s"
    if "$bin" -max_total_time="$SECONDS_EACH" -timeout=30 -rss_limit_mb=2048 -max_len=8192 \
        "${JOBS[@]}" -print_final_stats=1 \
        -artifact_prefix="$OUT/artifacts/$t-" "$OUT/corpus/$t" "$SRC/tests/fuzz/corpus/$t" \
        >"$OUT/$t.log" 2>&1; then
        grep -E "^stat::number_of_executed_units|^stat::new_units_added|^#[0-9]+ *DONE" "$OUT/$t.log" | tr '\n' ' '
        echo
    else
        status=1
        echo "FAIL fuzz_$t: see $OUT/$t.log; the input is in $OUT/artifacts/" >&2
        grep -E "ERROR|runtime error|SUMMARY|abort|differs|refuse|took" "$OUT/$t.log" | head -20 >&2
    fi
done
exit $status
