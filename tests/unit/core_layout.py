#!/usr/bin/env python3
"""core_layout.py CORE_DIR: the layout rules of core/ (core/DESIGN.md).

A module is x.c with x.h; it depends on y when x.c or x.h has
'#include "y.h"' (log left out: most include it). Fails on a cycle among
modules or on a file over 400 lines, naming it. With -v, prints the graph.
"""
import os
import re
import sys

MAX_LINES = 400

core = sys.argv[-1]
verbose = '-v' in sys.argv[1:-1]
deps, failures = {}, []
for name in sorted(os.listdir(core)):
    if not name.endswith(('.c', '.h')):
        continue
    with open(os.path.join(core, name), encoding='utf-8') as f:
        text = f.read()
    lines = text.count('\n')
    if lines > MAX_LINES:
        failures.append(f'core/{name}: {lines} lines, over {MAX_LINES}')
    module = name.rsplit('.', 1)[0]
    found = re.findall(r'^#include "([^"/]+)\.h"', text, re.M)
    deps.setdefault(module, set()).update(d for d in found if d not in (module, 'log'))

state, path = {}, []


def visit(m):
    state[m] = 'open'
    path.append(m)
    for d in sorted(deps.get(m, ())):
        if state.get(d) == 'open':
            failures.append('include cycle: ' + ' -> '.join(path[path.index(d):] + [d]))
        elif d not in state:
            visit(d)
    path.pop()
    state[m] = 'done'


for m in sorted(deps):
    if m not in state:
        visit(m)
if verbose:
    for m in sorted(deps):
        if deps[m]:
            print(f'{m} -> {", ".join(sorted(deps[m]))}')
for f in failures:
    print('FAIL:', f)
print(f'{len(deps)} modules, {"FAILED" if failures else "no cycle, no file over %d lines" % MAX_LINES}')
sys.exit(1 if failures else 0)
