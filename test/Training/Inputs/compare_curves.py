#!/usr/bin/env python3
"""Compares the training loss curves of two runs (the driver's --metrics JSON lines).

compare_curves.py REFERENCE.jsonl OTHER.jsonl [--first F | --resumed] [--steps N] [--rtol R]
                  [--exact] [--eval]

Both files must hold train lines for steps F..N (F defaults to 1; a run resumed after
step F-1 starts there; --resumed takes F from OTHER's first train line). Each step's loss must agree within
R relative to the reference's loss (or exactly with --exact). Prints the worst
relative difference and its step; exits 1 on a mismatch or a missing step. With --eval
the evaluations' losses are compared instead, at every step the reference evaluated.
"""
import argparse
import json
import sys


def records(path, kind):
    """The loss of each `kind` line of a metrics file, by step."""
    curve = {}
    with open(path) as f:
        for number, line in enumerate(f, 1):
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"compare_curves: {path}:{number}: not JSON: {e}")
            if record.get("kind") == kind:
                curve[record["step"]] = float(record["loss"])
    return curve


def losses(path, first, steps):
    curve = records(path, "train")
    missing = [s for s in range(first, steps + 1) if s not in curve]
    if missing:
        sys.exit(f"compare_curves: {path}: no train loss for step(s) {missing[:5]}")
    return [curve[s] for s in range(first, steps + 1)]


def first_step(path):
    with open(path) as f:
        for line in f:
            record = json.loads(line)
            if record.get("kind") == "train":
                return record["step"]
    sys.exit(f"compare_curves: {path}: no train lines")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("reference")
    parser.add_argument("other")
    parser.add_argument("--first", type=int, default=1)
    parser.add_argument("--resumed", action="store_true")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rtol", type=float, default=1e-4)
    parser.add_argument("--exact", action="store_true")
    parser.add_argument("--eval", action="store_true")
    args = parser.parse_args()
    if args.resumed:
        args.first = first_step(args.other)
    if args.eval:
        evaluated = records(args.reference, "eval")
        if not evaluated:
            sys.exit(f"compare_curves: {args.reference}: no eval lines")
        other = records(args.other, "eval")
        steps = sorted(evaluated)
        if sorted(other) != steps:
            sys.exit(f"compare_curves: evaluated at steps {sorted(other)}, the reference at "
                     f"{steps}")
        ref = [evaluated[s] for s in steps]
        got = [other[s] for s in steps]
    else:
        steps = list(range(args.first, args.steps + 1))
        ref = losses(args.reference, args.first, args.steps)
        got = losses(args.other, args.first, args.steps)
    worst, worst_step = 0.0, 0
    for step, a, b in zip(steps, ref, got):
        diff = 0.0 if a == b else abs(a - b) / max(abs(a), 1e-30)
        if diff > worst or (args.exact and a != b and worst_step == 0):
            worst, worst_step = diff, step
    ok = worst == 0.0 if args.exact else worst <= args.rtol
    bound = "exactly" if args.exact else f"within rtol {args.rtol:g}"
    at = steps.index(worst_step) if worst_step else 0
    print(f"compare_curves: {len(steps)} {'evaluations' if args.eval else 'steps'}, worst "
          f"relative difference {worst:.3g}"
          + (f" at step {worst_step} ({ref[at]!r} vs {got[at]!r})" if worst_step else "")
          + f": {'match' if ok else 'MISMATCH'} {bound}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
