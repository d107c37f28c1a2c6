#!/usr/bin/env python3
"""core_layout.py CORE_DIR: the layout rules of core/ (core/DESIGN.md, Parts).

core/PARTS lists the parts, one folder each, bottom first; a line after "!"
names siblings, parts that never include each other. Reading every
'#include "..."' of core/, fails, naming the file, on: a file outside a
part's folder, a folder not listed or a listed part without its folder or
README.md; an include of a core header not named by its part
("poll/queries.h"); an include of a part listed above the includer's (an
upward include: with the parts in one order, no cycle of parts can form);
a sibling's include; a cycle among files; a file over 400 lines; and
core/DESIGN.md's parts table not in PARTS' order. With -v, prints the
graph of parts.
"""
import os
import re
import sys

MAX_LINES = 400

core = sys.argv[-1]
verbose = '-v' in sys.argv[1:-1]
failures = []
order, siblings = [], set()
with open(os.path.join(core, 'PARTS'), encoding='utf-8') as f:
    for line in f:
        if line.startswith('!'):
            siblings = set(line[1:].split())
        elif re.match(r'[a-z]', line):
            order.append(line.split()[0])
rank = {p: i for i, p in enumerate(order)}

headers, files = {}, {}
for name in sorted(os.listdir(core)):
    path = os.path.join(core, name)
    if name.endswith(('.c', '.h')):
        failures.append(f'core/{name}: outside a part\'s folder')
    elif os.path.isdir(path) and name not in rank:
        failures.append(f'core/{name}/: not a part listed in core/PARTS')
for part in order:
    folder = os.path.join(core, part)
    if not os.path.isdir(folder):
        failures.append(f'core/PARTS: {part} has no folder')
        continue
    if not os.path.isfile(os.path.join(folder, 'README.md')):
        failures.append(f'core/{part}/: no README.md')
    for name in sorted(os.listdir(folder)):
        if name.endswith(('.c', '.h')):
            with open(os.path.join(folder, name), encoding='utf-8') as f:
                files[f'{part}/{name}'] = f.read()
            if name.endswith('.h'):
                headers.setdefault(name, []).append(part)

deps, part_deps = {}, {}
for path, text in sorted(files.items()):
    part = path.split('/')[0]
    lines = text.count('\n')
    if lines > MAX_LINES:
        failures.append(f'core/{path}: {lines} lines, over {MAX_LINES}')
    deps[path] = set()
    for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', text, re.M):
        if '/' not in inc:
            if inc in headers:
                failures.append(f'core/{path}: includes "{inc}": name its part ("{headers[inc][0]}/{inc}")')
            continue
        target = inc.split('/')[0]
        if target not in rank or inc not in files:
            continue  # the public header (obx/...)
        deps[path].add(inc)
        if target == part:
            continue
        part_deps.setdefault(part, set()).add(target)
        if rank[target] > rank[part]:
            failures.append(f'core/{path}: includes {inc}, a part above {part} in core/PARTS')
        elif part in siblings and target in siblings:
            failures.append(f'core/{path}: includes {inc}: {part} and {target} are siblings')

state, stack = {}, []


def visit(node):
    state[node] = 'open'
    stack.append(node)
    for d in sorted(deps.get(node, ())):
        if state.get(d) == 'open':
            failures.append('include cycle: ' + ' -> '.join(stack[stack.index(d):] + [d]))
        elif d not in state:
            visit(d)
    stack.pop()
    state[node] = 'done'


for node in sorted(deps):
    if node not in state:
        visit(node)

design = os.path.join(core, 'DESIGN.md')
if os.path.isfile(design):
    with open(design, encoding='utf-8') as f:
        table = re.findall(r'^\| `([a-z]+)/` \|', f.read(), re.M)
    if table != order:
        failures.append(f'core/DESIGN.md: its parts table lists {table}, core/PARTS {order}')

if verbose:
    for part in order:
        print(f'{part} -> {", ".join(sorted(part_deps.get(part, ()), key=rank.get))}')
for f in failures:
    print('FAIL:', f)
print(f'{len(files)} files in {len(order)} parts, '
      f'{"FAILED" if failures else "no upward or sibling include, no cycle, no file over %d lines" % MAX_LINES}')
sys.exit(1 if failures else 0)
