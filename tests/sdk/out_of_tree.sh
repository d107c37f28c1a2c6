#!/bin/bash
# out_of_tree.sh BUILD_DIR TEMPLATE_SRC RUNNER
# Installs the build into a temporary prefix, then builds drivers/template
# outside the tree three ways against that prefix only (plain cc with
# pkg-config; CMake with pkg-config; CMake with find_package(OutboxRelay)),
# and runs the conformance runner on each result.
set -euo pipefail
build=$1 src=$2 runner=$3
work=$(mktemp -d /tmp/obx-oot.XXXXXX)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" >"$work/install.log" || { cat "$work/install.log"; fail "cmake --install"; }
pcdir=$(dirname "$(find "$prefix" -name outbox-relay-driver.pc | head -1)")
[ -d "$pcdir" ] || fail "no outbox-relay-driver.pc installed under $prefix"
[ -f "$prefix/include/obx/driver.h" ] || fail "include/obx/driver.h not installed"
# The copy keeps the source tree's include/ out of reach.
cp "$src/template.c" "$src/CMakeLists.txt" "$work/"
# --define-prefix: the .pc file names the configure-time prefix, not $prefix.
export PKG_CONFIG_PATH=$pcdir
cflags=$(pkg-config --define-prefix --cflags outbox-relay-driver)
case "$cflags" in *"$prefix/include"*) ;; *) fail "pkg-config cflags do not point into the prefix: $cflags" ;; esac

check() { # check SO HOW
    local syms
    syms=$(nm -D --defined-only "$1" | awk 'NF >= 3 { print $3 }' | tr '\n' ' ')
    [ "$syms" = "obx_driver_entry " ] || fail "$2: exports '$syms', want only obx_driver_entry"
    "$runner" "$1" >"$work/runner.log" 2>&1 || { cat "$work/runner.log"; fail "$2: check-driver failed"; }
    grep -q '^RESULT: driver template passes' "$work/runner.log" || { cat "$work/runner.log"; fail "$2: no RESULT line"; }
    echo "ok: $2 ($(grep -c '^PASS' "$work/runner.log") checks passed)"
}

# 1. Nothing but a compiler and pkg-config.
mkdir "$work/cc"
cc -std=c99 -Wall -Wextra -Werror -shared -fPIC $cflags "$work/template.c" \
    -Wl,--no-undefined -o "$work/cc/template.so"
check "$work/cc/template.so" "cc + pkg-config"

# 2. CMake, finding the SDK with pkg-config.
cmake -S "$work" -B "$work/b-pc" -DOBX_USE_PKGCONFIG=ON -DPKG_CONFIG_ARGN=--define-prefix >"$work/cmake.log" \
    || { cat "$work/cmake.log"; fail "cmake (pkg-config) configure"; }
cmake --build "$work/b-pc" >"$work/build.log" || { cat "$work/build.log"; fail "cmake (pkg-config) build"; }
check "$work/b-pc/template.so" "cmake + pkg-config"

# 3. CMake package; install must land in the relay's drivers directory of the prefix.
rm -f "$prefix"/lib*/outbox-relay/drivers/template.so "$prefix"/lib/*/outbox-relay/drivers/template.so
cmake -S "$work" -B "$work/b-cm" -DCMAKE_PREFIX_PATH="$prefix" >"$work/cmake.log" \
    || { cat "$work/cmake.log"; fail "cmake (find_package) configure"; }
cmake --build "$work/b-cm" >"$work/build.log" || { cat "$work/build.log"; fail "cmake (find_package) build"; }
cmake --install "$work/b-cm" >"$work/install2.log" || { cat "$work/install2.log"; fail "install of the template"; }
installed=$(find "$prefix" -path '*outbox-relay/drivers/template.so' | head -1)
[ -n "$installed" ] || fail "template.so was not installed into the prefix's drivers directory"
check "$installed" "cmake + find_package(OutboxRelay), installed at ${installed#$prefix/}"
