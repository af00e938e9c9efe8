#!/usr/bin/env python3
"""Compares every tensor of two checkpoints, read by test/Runtime/Inputs/read_safetensors.py
(Python's standard library only, no code shared with the runtime).

compare_checkpoints.py A B [--rtol R]

The same tensor names, dtypes and shapes, and each value within R of the larger of its
magnitude and the tensor's RMS in A. Prints the worst difference; exits 1 on a mismatch.
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "Runtime", "Inputs"))
from read_safetensors import read_checkpoint  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--rtol", type=float, default=1e-5)
    args = parser.parse_args()
    _, a = read_checkpoint(args.a, sys.maxsize)
    _, b = read_checkpoint(args.b, sys.maxsize)
    if sorted(a) != sorted(b):
        sys.exit(f"compare_checkpoints: other tensors: {sorted(set(a) ^ set(b))}")
    worst, where = 0.0, ""
    for name in sorted(a):
        x, y = a[name], b[name]
        if (x["dtype"], x["shape"]) != (y["dtype"], y["shape"]):
            sys.exit(f"compare_checkpoints: {name}: {x['dtype']}{x['shape']} vs "
                     f"{y['dtype']}{y['shape']}")
        rms = math.sqrt(sum(v * v for v in x["values"]) / max(len(x["values"]), 1))
        for i, (u, v) in enumerate(zip(x["values"], y["values"])):
            diff = abs(u - v) / max(abs(u), rms, 1e-30)
            if diff > worst:
                worst, where = diff, f" ({name}[{i}]: {u!r} vs {v!r})"
    ok = worst <= args.rtol
    print(f"compare_checkpoints: {len(a)} tensors, worst relative difference {worst:.3g}{where}: "
          f"{'match' if ok else 'MISMATCH'} within rtol {args.rtol:g}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
