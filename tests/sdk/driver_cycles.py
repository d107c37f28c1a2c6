#!/usr/bin/env python3
"""driver_cycles.py DRIVERS_BUILD_DIR: no driver's files call each other in a cycle.

Reads the built objects of every driver (DRIVERS_BUILD_DIR/<driver>/CMakeFiles/
*.dir/*.o) with nm: x depends on y when x.o uses a symbol y.o defines. Each
file's header declares what that file defines, so a cycle here is an
include cycle between the files' headers too. Fails, naming the cycle, or
when no driver object is found. With -v, prints the graph.
"""
import glob
import os
import subprocess
import sys


def symbols(obj, *flags):
    out = subprocess.run(['nm', *flags, obj], check=True, capture_output=True, text=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


root = sys.argv[-1]
verbose = '-v' in sys.argv[1:-1]
failures, seen = [], 0
for driver in sorted(os.listdir(root)):
    objs = sorted(glob.glob(os.path.join(root, driver, 'CMakeFiles', '*.dir', '*.o')))
    if not objs:
        continue
    seen += len(objs)
    name = {o: os.path.basename(o).split('.')[0] for o in objs}
    defined = {o: symbols(o, '--defined-only', '--extern-only') for o in objs}
    deps = {name[o]: set() for o in objs}
    for o in objs:
        for used in symbols(o, '--undefined-only'):
            deps[name[o]].update(name[p] for p in objs if p != o and used in defined[p])
    if verbose:
        for m in sorted(deps):
            print(f'{driver}: {m} -> {", ".join(sorted(deps[m])) or "-"}')
    state = {}

    def visit(m, path):
        state[m] = 1
        for d in sorted(deps[m]):
            if state.get(d) == 1:
                failures.append(f'drivers/{driver}: cycle ' + ' -> '.join(path[path.index(d):] + [d]))
            elif d not in state:
                visit(d, path + [d])
        state[m] = 2

    for m in sorted(deps):
        if m not in state:
            visit(m, [m])

if not seen:
    failures.append(f'no driver object under {root}/*/CMakeFiles/*.dir/')
for f in failures:
    print('FAIL: ' + f, file=sys.stderr)
if not failures:
    print(f'ok: {seen} driver files, no cycle')
sys.exit(1 if failures else 0)
