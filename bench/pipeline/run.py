#!/usr/bin/python3
"""Pipeline stages: GPipe against 1F1B, and both against the same ranks without stages.

W4 (examples/gpt at its own size: batch 32, 4 blocks) on 2 local ranks: data parallel
over both (no stages), then 2 pipeline stages with 8 microbatches under GPipe and
under 1F1B (PipeDream-Flush), and 1F1B with every block recomputed (`remat "blocks" :
nothing`). For each: what the report says a stage keeps for its backward pass and the
rank's total (and its parameters and optimizer state: a stage holds its own layers'),
the largest rank's peak resident memory over a few synthetic steps, and
the median seconds per step over the rounds (the layouts interleaved, round by round,
on this noisy machine), with its ratio to data parallel. A pipeline on one host has
nothing to win in time (the stages idle (p - 1)/(m + p - 1) of the step, the bubble);
what it shows here is the memory: GPipe keeps every microbatch's activations until
the backward passes, 1F1B at most p - s of them.

    bench/pipeline/run.py [--steps 10] [--rounds 3]

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

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SHARDC = os.path.join(REPO, "build", "bin", "shardc")
MODEL = os.path.join(REPO, "examples", "gpt", "gpt.shard")
RANKS = 2

_spec = importlib.util.spec_from_file_location("train_bench", os.path.join(REPO, "bench", "train", "run.py"))
tb = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tb)

PIPELINE = "mesh (stage = 2)\nrules {\n  layer -> stage\n}\nmicrobatches 8\n"
LAYOUTS = {
    "dp2": "mesh (data = 2)\nrules {\n  batch -> data\n}\n",
    "pp2-gpipe": PIPELINE + 'schedule "gpipe"\n',
    "pp2-1f1b": PIPELINE + 'schedule "1f1b"\n',
    "pp2-1f1b-remat": PIPELINE + 'schedule "1f1b"\nremat "blocks" : nothing\n',
}


def log(*a):
    print("[bench/pipeline]", *a, file=sys.stderr, flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    tb.build_shardc(SHARDC)
    mib = lambda b: round(b / 2**20, 1)
    cases = {}
    with tempfile.TemporaryDirectory() as workdir:
        for name, text in LAYOUTS.items():
            rules = os.path.join(workdir, name + ".rules")
            with open(rules, "w") as f:
                f.write(text)
            r = subprocess.run([SHARDC, MODEL, "--rules", rules, "--report=json"],
                               capture_output=True, text=True, check=True)
            report = json.loads(r.stdout)
            exe = os.path.join(workdir, name)
            seconds = tb.compile_shardc(SHARDC, MODEL, rules, exe)
            pipeline = report.get("pipeline") or {}
            cases[name] = {"rules": text, "compile_seconds": round(seconds, 1),
                           "report_total_mib": mib(report["memory_per_rank"]["total"]),
                           # A stage holds its own layers' parameters and Adam state.
                           "report_parameters_and_state_mib": mib(
                               report["memory_per_rank"]["parameters"] +
                               report["memory_per_rank"]["optimizer_state"]),
                           "report_train_arena_mib": mib(report["memory_per_rank"].get("train_arena", 0)),
                           "report_kept_mib_per_stage": [mib(b) for b in pipeline.get("kept_activation_bytes_per_stage", [])],
                           "bubble_fraction": pipeline.get("bubble_fraction"),
                           "exe": exe, "step_seconds": [], "peak_mib": [],
                           # Per round: the least and the most of the step any rank
                           # waited in its receives (the bubble and the messages).
                           "receive_wait_share": []}
            log(f"{name}: compiled in {seconds:.1f} s")
        for round_ in range(args.rounds):
            for name, case in cases.items():
                out = tb.run_shardc(case["exe"], RANKS, ["--synthetic", "--steps", str(args.steps),
                                                         "--no-eval"], args.steps)
                case["step_seconds"].append(out["train_seconds"] / out["bench_steps"])
                if out.get("pipeline_receive_wait_seconds"):
                    waits = out["pipeline_receive_wait_seconds"]
                    case["receive_wait_share"].append(
                        [round(waits[k] / out["train_seconds"], 3) for k in ("min", "max")])
                case["peak_mib"].append(mib(out["resident_bytes_per_rank"]["peak"]))
                log(f"round {round_ + 1} {name}: {case['step_seconds'][-1]:.3f} s per step, "
                    f"peak {case['peak_mib'][-1]} MiB")
    base = statistics.median(cases["dp2"]["step_seconds"])
    for case in cases.values():
        del case["exe"]
        case["median_step_seconds"] = round(statistics.median(case["step_seconds"]), 4)
        case["step_time_over_dp2"] = round(case["median_step_seconds"] / base, 3)
        case["measured_peak_mib"] = max(case.pop("peak_mib"))
        case["step_seconds"] = [round(s, 4) for s in case["step_seconds"]]
    print(json.dumps({"bench": "pipeline", "model": "W4 (examples/gpt)", "ranks": RANKS,
                      "steps": args.steps, "rounds": args.rounds, "cases": cases}, indent=1))


if __name__ == "__main__":
    main()
