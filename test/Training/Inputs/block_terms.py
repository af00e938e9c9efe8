#!/usr/bin/env python3
"""Checks the block terms of test/Training/block-terms.test in a run's --metrics lines.

block_terms.py RUN.jsonl [--reference REF.jsonl --rtol R]

Every train and eval line must hold the loss, the model's metric `main` (its own
loss) and the block terms, with loss = main + 2 * blocks.balance (two layers, reported
as their mean) + head.decay. With --reference, every value of every line must agree
with the reference's within R relative.
"""
import argparse
import json
import sys

TERMS = ["blocks.balance", "blocks.active", "head.decay"]
KEYS = ["loss", "main"] + TERMS


def lines(path):
    with open(path) as f:
        return [r for r in map(json.loads, f) if r.get("kind") in ("train", "eval")]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("run")
    parser.add_argument("--reference")
    parser.add_argument("--rtol", type=float, default=1e-5)
    args = parser.parse_args()
    run = lines(args.run)
    kinds = sorted({r["kind"] for r in run})
    for r in run:
        missing = [k for k in KEYS if k not in r]
        if missing:
            sys.exit(f"block_terms: {r['kind']} line of step {r['step']} lacks {missing}")
        total = r["main"] + 2 * r["blocks.balance"] + r["head.decay"]
        if abs(r["loss"] - total) > 1e-5 * abs(r["loss"]):
            sys.exit(f"block_terms: step {r['step']} ({r['kind']}): loss {r['loss']} is not "
                     f"main + 2 balance + decay = {total}")
    print(f"block_terms: {len(run)} lines ({', '.join(kinds)}): loss = main + terms")
    if args.reference:
        ref = lines(args.reference)
        if [(r["kind"], r["step"]) for r in ref] != [(r["kind"], r["step"]) for r in run]:
            sys.exit("block_terms: the runs log different steps")
        worst = max(abs(a[k] - b[k]) / max(abs(b[k]), 1e-30)
                    for a, b in zip(run, ref) for k in KEYS)
        if worst > args.rtol:
            sys.exit(f"block_terms: a value differs from the reference's by {worst:.3g}")
        print(f"block_terms: every value equals the reference's within rtol {args.rtol}")


if __name__ == "__main__":
    main()
