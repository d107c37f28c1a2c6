#!/bin/bash
# Every driver .so in OBX_DRIVERS (and any extra files given) exports exactly obx_driver_entry.
set -euo pipefail
dir=${OBX_DRIVERS:?OBX_DRIVERS must name the drivers build directory}
shopt -s nullglob
files=("$dir"/*.so "$@")
[ ${#files[@]} -gt 0 ] || { echo "FAIL: no driver .so in $dir" >&2; exit 1; }
bad=0
for so in "${files[@]}"; do
    syms=$(nm -D --defined-only "$so" | awk 'NF >= 3 { print $3 }' | sort | tr '\n' ' ')
    if [ "$syms" != "obx_driver_entry " ]; then
        echo "FAIL: $so exports: ${syms:-nothing} (want only obx_driver_entry: build with -fvisibility=hidden and mark the entry OBX_DRIVER_EXPORT)" >&2
        bad=1
    else
        echo "ok: $so"
    fi
done
exit $bad
