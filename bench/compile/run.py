#!/usr/bin/python3
"""Compile time against depth: shardc from a model file to an executable.

W4's GPT (examples/gpt/gpt.shard) at GPT-2 small's sizes (`--set dim=768 heads=12
head_dim=64 hidden=3072 context=256 batch_size=16`) with 1, 3, 6 and 12 blocks under
examples/gpt's fsdp.rules and tp.rules, and W4 itself under dp.rules. The scale issue
asks for 12 blocks in at most 1.3x the time of 1 (a block compiled once) and W4 in
3 s; this prints the medians of `--reps` runs (the machine is noisy: runs alternate
between the cases) and the ratios.

    bench/compile/run.py [--reps 3] [--shardc build/bin/shardc]

Prints ONE JSON object on stdout; progress goes to stderr. Sets itself up: builds
build/bin/shardc with scripts/build.sh (which installs the Debian packages) when it is
missing.
"""

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GPT = os.path.join(REPO, "examples", "gpt", "gpt.shard")
_spec = importlib.util.spec_from_file_location("train_bench", os.path.join(REPO, "bench", "train", "run.py"))
tb = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tb)
GPT2_SMALL = ["dim=768", "heads=12", "head_dim=64", "scale=0.125", "hidden=3072",
              "context=256", "batch_size=16"]


def compile_seconds(shardc, rules, sets, out):
    cmd = [shardc, GPT, "--rules", os.path.join(REPO, "examples", "gpt", rules), "-o", out]
    for s in sets:
        cmd += ["--set", s]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{r.stderr[-3000:]}")
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--shardc", default=os.path.join(REPO, "build", "bin", "shardc"))
    args = ap.parse_args()
    tb.build_shardc(args.shardc)

    cases = [(f"gpt2-small-{rules[:-6]}-{blocks}", rules, GPT2_SMALL + [f"layers={blocks}"])
             for rules in ("fsdp.rules", "tp.rules") for blocks in (1, 3, 6, 12)]
    cases.append(("w4-dp", "dp.rules", []))
    samples = {name: [] for name, _, _ in cases}
    with tempfile.TemporaryDirectory(prefix="shardc-bench-compile-") as tmp:
        for rep in range(args.reps):
            for name, rules, sets in cases:
                seconds = compile_seconds(args.shardc, rules, sets, os.path.join(tmp, "prog"))
                samples[name].append(seconds)
                print(f"[bench] rep {rep + 1}: {name} {seconds:.2f} s", file=sys.stderr, flush=True)
    medians = {name: round(statistics.median(xs), 2) for name, xs in samples.items()}
    ratios = {rules: round(medians[f"gpt2-small-{rules}-12"] / medians[f"gpt2-small-{rules}-1"], 2)
              for rules in ("fsdp", "tp")}
    print(json.dumps({"bench": "compile", "reps": args.reps, "median_seconds": medians,
                      "samples_seconds": {k: [round(x, 2) for x in v] for k, v in samples.items()},
                      "ratio_12_blocks_over_1": ratios,
                      "targets": {"gpt2_small_seconds": 6, "ratio_12_over_1": 1.3,
                                  "w4_seconds": 3}}))


if __name__ == "__main__":
    main()
