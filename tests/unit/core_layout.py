#!/usr/bin/env python3
"""core_layout.py CORE_DIR: the layout rules of core/ (core/DESIGN.md).

core/ has one folder per part. A module is x.c with x.h (names are unique
across core/); it depends on y when x.c or x.h has '#include "y.h"' (log
left out: most include it). Fails, naming the file, on a file outside a
part's folder, a part without a README.md, a cycle among modules, a file
over 400 lines, or an include that breaks a part's never (NEVER below, as
each README says). With -v, prints the graph.
"""
import os
import re
import sys

MAX_LINES = 400

# part -> parts it must never include. The delivery core serves every
# source, so it knows none of them; sources never know each other.
NEVER = {
    'base': {'cursor', 'config', 'db', 'host', 'deliver', 'poll', 'wal', 'replay', 'ops', 'cli', 'conformance'},
    'config': {'cursor', 'db', 'host', 'deliver', 'poll', 'wal', 'replay', 'ops', 'cli', 'conformance'},
    'db': {'cursor', 'host', 'deliver', 'poll', 'wal', 'replay', 'ops', 'cli', 'conformance'},
    'deliver': {'poll', 'wal', 'cursor', 'replay', 'cli', 'conformance'},
    'poll': {'wal', 'cursor', 'replay', 'cli', 'conformance'},
    'wal': {'poll', 'cursor', 'replay', 'cli', 'conformance'},
    'replay': {'poll', 'wal', 'cursor', 'cli', 'conformance'},
    'ops': {'cli', 'replay', 'conformance'},
    'host': {'cli', 'replay', 'conformance'},
    'conformance': {'poll', 'wal', 'cursor', 'replay', 'cli', 'ops'},
    'cursor': {'poll', 'replay', 'cli', 'conformance'},
    'cli': set(),
}

core = sys.argv[-1]
verbose = '-v' in sys.argv[1:-1]
deps, part_of, failures = {}, {}, []
for name in sorted(os.listdir(core)):
    if name.endswith(('.c', '.h')):
        failures.append(f'core/{name}: outside a part\'s folder')
for part in sorted(os.listdir(core)):
    folder = os.path.join(core, part)
    if not os.path.isdir(folder):
        continue
    if part not in NEVER:
        failures.append(f'core/{part}/: not a known part (tests/unit/core_layout.py NEVER)')
    if not os.path.isfile(os.path.join(folder, 'README.md')):
        failures.append(f'core/{part}/: no README.md')
    for name in sorted(os.listdir(folder)):
        if not name.endswith(('.c', '.h')):
            continue
        with open(os.path.join(folder, name), encoding='utf-8') as f:
            text = f.read()
        lines = text.count('\n')
        if lines > MAX_LINES:
            failures.append(f'core/{part}/{name}: {lines} lines, over {MAX_LINES}')
        module = name.rsplit('.', 1)[0]
        if part_of.setdefault(module, part) != part:
            failures.append(f'core/{part}/{name}: module {module} also in core/{part_of[module]}/')
        found = re.findall(r'^#include "([^"/]+)\.h"', text, re.M)
        deps.setdefault(module, {})
        for d in found:
            if d not in (module, 'log'):
                deps[module].setdefault(d, f'core/{part}/{name}')

for m, ds in sorted(deps.items()):
    for d, where in sorted(ds.items()):
        if d in part_of and part_of[d] in NEVER.get(part_of[m], ()):
            failures.append(f'{where}: includes {d}.h of core/{part_of[d]}/, '
                            f'which core/{part_of[m]}/ never includes')

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
            print(f'{part_of[m]}/{m} -> {", ".join(sorted(deps[m]))}')
for f in failures:
    print('FAIL:', f)
print(f'{len(deps)} modules in {len(set(part_of.values()))} parts, '
      f'{"FAILED" if failures else "no cycle, no never broken, no file over %d lines" % MAX_LINES}')
sys.exit(1 if failures else 0)
