#!/usr/bin/env python3
"""Data loading: what a rank holds of its dataset, and what the prefetch thread saves.

    bench/data/run.py [--ranks 8] [--steps 60] [--reps 3] [--baseline-shardc PATH]

Sets itself up as the README's commands do (scripts/build.sh), compiles W2
(examples/cnn, dp.rules) and trains it on Fashion-MNIST for --steps steps on --ranks
local ranks, alternately with the batch prefetched (the default) and loaded when its
step starts (--no-prefetch), --reps times each. While a run goes, every rank's
/proc/PID/{status,smaps_rollup} is sampled every 50 ms: peak resident memory (VmHWM),
its anonymous part (memory the rank alone holds) and its proportional share (Pss:
pages shared by the ranks of the host counted once over them). --baseline-shardc runs
the same with another build's compiler and runtime (say, an older commit's, which took
the dataset folder instead of a configuration), for a before/after.

Prints one JSON object: per configuration the median step time (train seconds per
step, from the run's summary), the median time steps waited for their batch, and the
memory per rank (the most of any rank, medians over the repetitions).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe"]


def status_kib(pid, key, name="status"):
    try:
        with open("/proc/%d/%s" % (pid, name)) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def ranks_of(program):
    """PIDs of the running processes of `program` (by their executable)."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.readlink("/proc/%s/exe" % entry) == program:
                    pids.append(int(entry))
            except OSError:
                pass
    return pids


def run(program, ranks, args):
    """Runs program under mpirun; returns its summary and the memory samples."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        proc = subprocess.Popen(MPIRUN + ["-np", str(ranks), program] + args +
                                ["--output", out.name], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        memory = {}
        while proc.poll() is None:
            for pid in ranks_of(program):
                seen = memory.setdefault(pid, {"peak": 0, "anonymous": 0, "pss": 0})
                seen["peak"] = max(seen["peak"], status_kib(pid, "VmHWM"))
                seen["anonymous"] = max(seen["anonymous"], status_kib(pid, "RssAnon"))
                seen["pss"] = max(seen["pss"], status_kib(pid, "Pss", "smaps_rollup"))
            time.sleep(0.05)
        if proc.returncode != 0:
            sys.exit("bench/data: %s failed:\n%s" % (program, proc.stderr.read()))
        summary = json.load(open(out.name))
    per_rank = {key: max(m[key] for m in memory.values()) * 1024 for key in
                ("peak", "anonymous", "pss")} if memory else {}
    return summary, per_rank


def measure(name, program, ranks, args, reps):
    steps, waits, memories = [], [], []
    for _ in range(reps):
        summary, memory = run(program, ranks, args)
        steps.append(summary["train_seconds"] / summary["steps"])
        waits.append(summary.get("prefetch_wait_seconds") or 0.0)
        memories.append(memory)
    result = {"step_seconds_median": statistics.median(steps),
              "step_seconds": steps,
              "prefetch_wait_seconds_median": statistics.median(waits)}
    for key in ("peak", "anonymous", "pss"):
        result["resident_%s_bytes_per_rank" % key] = statistics.median(m[key] for m in memories)
    print("bench/data: %s: %.2f ms per step, peak %.1f MiB, anonymous %.1f MiB, Pss %.1f MiB per rank"
          % (name, 1e3 * result["step_seconds_median"],
             result["resident_peak_bytes_per_rank"] / 2**20,
             result["resident_anonymous_bytes_per_rank"] / 2**20,
             result["resident_pss_bytes_per_rank"] / 2**20), file=sys.stderr)
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--baseline-shardc")
    options = parser.parse_args()
    subprocess.run(["bash", os.path.join(ROOT, "scripts", "build.sh")], check=True,
                   stdout=subprocess.DEVNULL)
    work = tempfile.mkdtemp(prefix="bench-data-")
    model = os.path.join(ROOT, "examples", "cnn", "cnn.shard")
    rules = os.path.join(ROOT, "examples", "cnn", "dp.rules")
    program = os.path.join(work, "cnn")
    subprocess.run([os.path.join(ROOT, "build", "bin", "shardc"), model, "--rules", rules,
                    "-o", program], check=True)
    common = ["--steps", str(options.steps), "--no-eval"]
    config = ["--config", os.path.join(ROOT, "examples", "cnn", "run.json")]
    configurations = [("prefetch", program, config + common),
                      ("no_prefetch", program, config + common + ["--no-prefetch"])]
    if options.baseline_shardc:
        baseline = os.path.join(work, "cnn-baseline")
        subprocess.run([options.baseline_shardc, model, "--rules", rules, "-o", baseline],
                       check=True)
        configurations.append(("baseline", baseline, common))
    results = {name: [] for name, _, _ in configurations}
    # Alternate the configurations, so that the machine's load falls on all alike.
    for _ in range(options.reps):
        for name, binary, args in configurations:
            results[name].append(measure(name, binary, options.ranks, args, 1))
    report = {"workload": "W2 CNN, dp.rules, Fashion-MNIST", "ranks": options.ranks,
              "steps": options.steps, "reps": options.reps}
    for name, runs in results.items():
        merged = {key: statistics.median(r[key] for r in runs)
                  for key in runs[0] if key != "step_seconds"}
        merged["step_seconds"] = [r["step_seconds"][0] for r in runs]
        report[name] = merged
    report["prefetch_over_no_prefetch"] = (report["prefetch"]["step_seconds_median"] /
                                           report["no_prefetch"]["step_seconds_median"])
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
