#!/usr/bin/python3
"""Memory per rank: what `shardc --report` promises against what a run uses.

For each model and layout: the report's total per rank (parameters and optimizer state,
inputs, the larger of the train and eval steps' planned arenas, and the process itself:
what a rank holds before the program's own memory, measured by `shardrt-calibrate
--process-memory` when the runtime was built; what the runtime's memory check compares
with the host), and the peak resident memory of the largest rank (VmHWM, from the run's
summary) over a few synthetic training steps on 8 local ranks, with their ratio; beside
them the run's own figure of the process before the program's memory (`at_start`).
Models: W2 (examples/cnn), W4 (examples/gpt) and W7's GPT-2 small shape
(examples/gpt2/gpt2-small.shard), under data parallel, FSDP and tensor parallel rules
where the example has them, and GPT-2 small under FSDP with every block recomputed
(examples/gpt2/fsdp-remat.rules) and under tensor parallelism with 4 microbatches
(examples/gpt2/tp-microbatches.rules) and in 4 pipeline stages x data 2
(examples/gpt2/pp.rules).

    bench/memory/run.py            # every case (about 18 minutes on 2 cores)
    bench/memory/run.py --quick    # W2 and W4 only

Prints ONE JSON object on stdout; progress goes to stderr. Sets itself up: builds
build/bin/shardc with scripts/build.sh (which installs the Debian packages) when it is
missing.
"""

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SHARDC = os.path.join(REPO, "build", "bin", "shardc")

_spec = importlib.util.spec_from_file_location("train_bench", os.path.join(REPO, "bench", "train", "run.py"))
tb = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tb)

EX = os.path.join(REPO, "examples")
# (name, model, {layout: rules}, steps)
CASES = [
    ("W2", f"{EX}/cnn/cnn.shard", {"dp": f"{EX}/cnn/dp.rules", "tp": f"{EX}/cnn/2d.rules"}, 3),
    ("W4", f"{EX}/gpt/gpt.shard", {l: f"{EX}/gpt/{l}.rules" for l in ("dp", "fsdp", "tp")}, 3),
    ("GPT-2 small", f"{EX}/gpt2/gpt2-small.shard",
     dict({l: f"{EX}/gpt/{l}.rules" for l in ("dp", "fsdp", "tp")},
          **{"fsdp+remat": f"{EX}/gpt2/fsdp-remat.rules",
             "tp+microbatches": f"{EX}/gpt2/tp-microbatches.rules",
             "pp+dp": f"{EX}/gpt2/pp.rules"}), 2),
]
RANKS = 8


def log(*a):
    print("[bench/memory]", *a, file=sys.stderr, flush=True)


def report(model, rules):
    r = subprocess.run([SHARDC, model, "--rules", rules, "--report=json"], capture_output=True,
                       text=True, cwd=REPO, check=True)
    return json.loads(r.stdout)["memory_per_rank"]


def measure(model, rules, steps, workdir):
    exe = os.path.join(workdir, "model")
    compile_seconds = tb.compile_shardc(SHARDC, model, rules, exe)
    summary = tb.run_shardc(exe, RANKS, ["--synthetic", "--steps", str(steps), "--no-eval"], steps)
    return compile_seconds, summary["resident_bytes_per_rank"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="W2 and W4 only")
    args = parser.parse_args()
    tb.build_shardc(SHARDC)
    mib = lambda b: round(b / 2**20, 1)
    results = []
    with tempfile.TemporaryDirectory() as workdir:
        for name, model, layouts, steps in CASES:
            if args.quick and name.startswith("GPT-2"):
                continue
            for layout, rules in layouts.items():
                log(f"{name} under {os.path.relpath(rules, REPO)}")
                promised = report(model, rules)
                compile_seconds, resident = measure(model, rules, steps, workdir)
                peak = resident["peak"]
                row = {"model": name, "layout": layout, "rules": os.path.relpath(rules, REPO),
                       "report_total_mib": mib(promised["total"]),
                       "measured_peak_resident_mib": mib(peak),
                       "measured_over_report": round(peak / promised["total"], 3),
                       # At the end of the run, the largest rank's: anonymous memory
                       # (the program's), file-backed (libraries) and shared (MPI's
                       # shared-memory transport).
                       "end_anonymous_mib": mib(resident["anonymous"]),
                       "end_file_mib": mib(resident["file"]),
                       "end_shared_mib": mib(resident["shared"]),
                       "report_process_mib": mib(promised.get("process", 0)),
                       "measured_at_start_mib": mib(resident["at_start"]),
                       "train_arena_mib": mib(promised.get("train_arena", 0)),
                       "eval_arena_mib": mib(promised.get("eval_arena", 0)),
                       "parameters_mib": mib(promised["parameters"]),
                       "optimizer_state_mib": mib(promised["optimizer_state"]),
                       "inputs_mib": mib(promised["inputs"]),
                       "compile_seconds": round(compile_seconds, 1)}
                log("  ", json.dumps(row))
                results.append(row)
    print(json.dumps({"bench": "memory", "ranks": RANKS, "cases": results}, indent=1))


if __name__ == "__main__":
    main()
