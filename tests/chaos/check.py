#!/usr/bin/env python3
"""Checks a chaos run from the outside: what the load generator says it
committed and rolled back against what a consumer received.

  check.py --name NAME --history FILE --load FILE... [--faults FILE] [--shared-faults FILE]
           [--until UNIX_MS]

Load lines (chaos_load): C|R, event_id, aggregate, seq, unix ms of the outcome.
History lines (chaos_*):  unix ms, event_id, aggregate, seq, redelivered 0|1.
Fault lines (faults.sh):  unix ms, kind, detail, ms until undone.
--shared-faults: faults another run injected (PostgreSQL, in a parallel run):
used to explain stalls, not counted.

Reports lost (committed, never received), phantom (received, not committed),
per-aggregate order breaks (in order of first receipt, a seq below one already
received), duplicates (relay: a repeat the broker delivered as new; consumer: a
redelivery after a consumer connection broke), and stalls: time with a
committed event pending and no first delivery, each charged to the first fault
in effect during it (else the last fault before it). Prints one summary line
and the detail per fault kind; exits 1 when anything was lost, phantom or out
of order.
"""
import argparse
import sys
from collections import defaultdict


def read_rows(path, width):
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) >= width:  # a torn last line of a killed writer is skipped
                yield parts


def load_outcomes(paths):
    committed, rolled_back = {}, set()
    for p in paths:
        for kind, eid, agg, seq, at in read_rows(p, 5):
            if kind == "C":
                committed[eid] = (agg, int(seq), int(at))
            elif kind == "R":
                rolled_back.add(eid)
    return committed, rolled_back


def load_faults(*paths):
    faults = []
    for path in filter(None, paths):
        for at, kind, *rest in read_rows(path, 2):
            dur = int(rest[1]) if len(rest) > 1 and rest[1].isdigit() else 0
            faults.append((int(at), kind, rest[0] if rest else "", dur))
    faults.sort()
    return faults


def fault_before(faults, t):
    """The last fault at or before t, or None."""
    lo, hi = 0, len(faults)
    while lo < hi:
        mid = (lo + hi) // 2
        if faults[mid][0] <= t:
            lo = mid + 1
        else:
            hi = mid
    return faults[lo - 1] if lo else None


def blame(faults, start, end):
    """The fault a stall is charged to, and when the faults in it were all
    undone: the first fault still in effect when the stall began or begun
    during it, else the last one before it."""
    during = [f for f in faults if f[0] < end and f[0] + f[3] >= start]
    if during:
        return during[0], max(f[0] + f[3] for f in during)
    f = fault_before(faults, start)
    return f, (f[0] + f[3] if f else start)


def stalls(committed, first_at):
    """(length ms, start ms) of each gap with a committed event pending and
    no first delivery. Events pending in a gap between first deliveries d_i
    and d_i+1 are those committed before d_i+1 and first received at or
    after it; the oldest of them starts the stall (or d_i, if later)."""
    got = sorted((first_at[e], c[2]) for e, c in committed.items() if e in first_at)
    out = []
    suffix_min = float("inf")
    mins = [0] * len(got)
    for i in range(len(got) - 1, -1, -1):
        suffix_min = min(suffix_min, got[i][1])
        mins[i] = suffix_min
    for i in range(1, len(got)):
        d_prev, d_next = got[i - 1][0], got[i][0]
        oldest = mins[i]
        if d_next > d_prev and oldest < d_next:
            start = max(d_prev, oldest)
            out.append((d_next - start, start))
    return out


def check(args):
    committed, rolled_back = load_outcomes(args.load)
    faults = load_faults(args.faults, args.shared_faults)
    own = len(load_faults(args.faults))
    first_at, max_seq = {}, {}
    lost_order, phantom, relay_dups, consumer_dups, bad_seq = [], set(), 0, 0, 0
    dups_after = defaultdict(int)  # fault (time, kind) -> relay duplicates
    received = 0
    cut = args.until or float("inf")
    if args.until:  # a history cut short: only what was committed 60 s before the cut must be there
        late = {e for e, c in committed.items() if c[2] > cut - 60000}
        committed = {e: c for e, c in committed.items() if e not in late}
    for at, eid, agg, seq, redelivered in read_rows(args.history, 5):
        if int(at) > cut:
            break
        if args.until and eid in late:
            continue
        at, received = int(at), received + 1
        if eid not in committed:
            phantom.add(eid)
            continue
        c_agg, c_seq, _ = committed[eid]
        if agg != c_agg or int(seq) != c_seq:
            bad_seq += 1
        if eid in first_at:
            if redelivered == "1":
                consumer_dups += 1
            else:
                relay_dups += 1
                f = fault_before(faults, at)
                dups_after[f[:2] if f else (0, "none")] += 1
            continue
        first_at[eid] = at
        top = max_seq.get(c_agg)
        if top is not None and c_seq < top:
            lost_order.append((c_agg, c_seq, top))
        if top is None or c_seq > top:
            max_seq[c_agg] = c_seq
    lost = [e for e in committed if e not in first_at]
    rolled_phantom = sum(1 for e in phantom if e in rolled_back)

    by_kind = defaultdict(lambda: {"faults": 0, "stall": 0, "beyond": 0, "dups": 0})
    for _, kind, _, _ in faults:
        by_kind[kind]["faults"] += 1
    for (t, kind), n in dups_after.items():
        by_kind[kind]["dups"] = max(by_kind[kind]["dups"], n)
    longest, longest_fault = (0, 0), None
    for length, start in stalls(committed, first_at):
        f, undone = blame(faults, start, start + length)
        kind = f[1] if f else "none"
        by_kind[kind]["stall"] = max(by_kind[kind]["stall"], length)
        # the part of the stall after the last fault in it was undone
        by_kind[kind]["beyond"] = max(by_kind[kind]["beyond"], start + length - max(start, undone))
        if length > longest[0]:
            longest, longest_fault = (length, start), f

    ok = not lost and not phantom and not lost_order and not bad_seq
    after = f"{longest_fault[1]} {longest_fault[2]}".strip() if longest_fault else "no fault"
    print(f"chaos {args.name}: {'PASS' if ok else 'FAIL'} faults={own} "
          f"committed={len(committed)} rolled_back={len(rolled_back)} received={received} "
          f"lost={len(lost)} phantom={len(phantom)} order_breaks={len(lost_order)} "
          f"bad_payload={bad_seq} duplicates={relay_dups + consumer_dups} "
          f"(relay {relay_dups}, consumer redelivery {consumer_dups}) "
          f"longest_stall={longest[0] / 1000:.1f}s after {after}")
    for kind in sorted(by_kind):
        k = by_kind[kind]
        print(f"  {args.name} {kind}: faults={k['faults']} longest_stall_after={k['stall'] / 1000:.1f}s "
              f"(after it was undone {k['beyond'] / 1000:.1f}s) "
              f"max_relay_duplicates_after_one={k['dups']}")
    for e in lost[:10]:
        agg, seq, at = committed[e]
        print(f"  LOST {e} aggregate {agg} seq {seq} committed at {at}")
    for e in list(phantom)[:10]:
        print(f"  PHANTOM {e} ({'rolled back' if e in rolled_back else 'never enqueued'})")
    for agg, seq, top in lost_order[:10]:
        print(f"  ORDER aggregate {agg}: seq {seq} first received after seq {top}")
    if rolled_phantom:
        print(f"  {rolled_phantom} of the phantoms were rolled back")
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", default="run")
    ap.add_argument("--history", required=True)
    ap.add_argument("--load", nargs="+", required=True)
    ap.add_argument("--faults")
    ap.add_argument("--shared-faults")
    ap.add_argument("--until", type=int, help="unix ms: check the history up to then only")
    sys.exit(check(ap.parse_args()))


if __name__ == "__main__":
    main()
