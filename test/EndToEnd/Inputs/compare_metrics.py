#!/usr/bin/env python3
"""compare_metrics.py REF.jsonl GOT.jsonl [--rtol R]

Compares two metrics files of the training driver (--metrics, runtime/README.md), line
by line: the same kinds, steps, epochs and example counts, the same names, and every
other number within R (default 1e-4) of the larger magnitude of the two, or 1e-6
absolutely. images_per_second and seconds_per_step are timings and are skipped. Prints the worst relative
difference per field and exits 1 on a mismatch.
"""
import argparse
import json
import sys

EXACT = ("kind", "step", "epoch", "examples")
SKIPPED = ("images_per_second", "seconds_per_step")


def read(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("ref")
    parser.add_argument("got")
    parser.add_argument("--rtol", type=float, default=1e-4)
    args = parser.parse_args()
    ref, got = read(args.ref), read(args.got)
    errors, worst = [], {}
    if len(ref) != len(got):
        errors.append(f"{len(ref)} lines vs {len(got)}")
    for n, (a, b) in enumerate(zip(ref, got), 1):
        if list(a) != list(b):
            errors.append(f"line {n}: keys {list(a)} vs {list(b)}")
            continue
        for key in a:
            if key in SKIPPED:
                continue
            if key in EXACT:
                if a[key] != b[key]:
                    errors.append(f"line {n}: {key} {a[key]} vs {b[key]}")
                continue
            x, y = float(a[key]), float(b[key])
            scale = max(abs(x), abs(y))
            diff = abs(x - y) / scale if scale else 0.0
            field = f"{a['kind']}.{key}"
            worst[field] = max(worst.get(field, 0.0), diff)
            if abs(x - y) > max(args.rtol * scale, 1e-6):
                errors.append(f"line {n}: {key} {x!r} vs {y!r}, more than rtol {args.rtol}")
    for field, diff in worst.items():
        print(f"{field}: worst relative difference {diff:.3g}")
    if errors:
        print(f"compare_metrics: {args.got} does not match {args.ref}:", file=sys.stderr)
        for error in errors[:20]:
            print(error, file=sys.stderr)
        return 1
    print(f"compare_metrics: {len(ref)} lines match (rtol {args.rtol:g})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
