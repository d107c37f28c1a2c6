#!/usr/bin/env python3
"""The checker proves itself: a clean history passes; histories with a lost,
a phantom, a reordered and a duplicated event each make it report exactly
that (and fail for the first three)."""
import os
import re
import subprocess
import sys
import tempfile

CHECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check.py")

# committed: aggregate a0 seqs 1..3, a1 seqs 1..2; rolled back: r1 (a0 seq 4)
LOAD = [("C", "e1", "a0", 1, 1000), ("C", "e2", "a0", 2, 1000), ("C", "e3", "a0", 3, 1100),
        ("C", "f1", "a1", 1, 1000), ("C", "f2", "a1", 2, 1200), ("R", "r1", "a0", 4, 1300)]
CLEAN = [(1010, "e1", "a0", 1, 0), (1020, "f1", "a1", 1, 0), (1030, "e2", "a0", 2, 0),
         (1150, "e3", "a0", 3, 0), (1250, "f2", "a1", 2, 0)]


def run(history, faults=()):
    with tempfile.TemporaryDirectory() as d:
        paths = {n: os.path.join(d, n) for n in ("load.0", "history", "faults")}
        with open(paths["load.0"], "w") as f:
            f.writelines("\t".join(map(str, r)) + "\n" for r in LOAD)
        with open(paths["history"], "w") as f:
            f.writelines("\t".join(map(str, r)) + "\n" for r in history)
        with open(paths["faults"], "w") as f:
            f.writelines("\t".join(map(str, r)) + "\n" for r in faults)
        p = subprocess.run([sys.executable, CHECK, "--name", "selftest", "--history",
                            paths["history"], "--load", paths["load.0"], "--faults", paths["faults"]],
                           capture_output=True, text=True)
    counts = dict(re.findall(r"\b(lost|phantom|order_breaks|duplicates)=(\d+)", p.stdout))
    return p.returncode, {k: int(v) for k, v in counts.items()}, p.stdout


def expect(name, history, want_rc, **want):
    rc, counts, out = run(history, faults=[(1005, "relay-kill", "test")])
    full = {"lost": 0, "phantom": 0, "order_breaks": 0, "duplicates": 0, **want}
    if rc != want_rc or counts != full:
        sys.exit(f"FAIL {name}: exit {rc} (want {want_rc}), counts {counts} (want {full})\n{out}")
    print(f"ok {name}: {out.splitlines()[0]}")


expect("clean", CLEAN, 0)
expect("lost", [r for r in CLEAN if r[1] != "e3"], 1, lost=1)
expect("phantom", CLEAN + [(1400, "r1", "a0", 4, 0)], 1, phantom=1)
expect("reordered", [CLEAN[0], CLEAN[1], CLEAN[3], CLEAN[2], CLEAN[4]], 1, order_breaks=1)
expect("duplicated", CLEAN + [(1300, "e2", "a0", 2, 0)], 0, duplicates=1)
# a stall: f2 committed at 1200 but first received at 9200 after a fault at 1190
rc, _, out = run(CLEAN[:4] + [(9200, "f2", "a1", 2, 0)], faults=[(1190, "pg-crash", "x")])
if "longest_stall=8.0s after pg-crash" not in out:
    sys.exit(f"FAIL stall: want an 8.0 s stall after pg-crash\n{out}")
print("ok stall: 8.0 s after pg-crash")
print("PASS chaos checker self-test")
