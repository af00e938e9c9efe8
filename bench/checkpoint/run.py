#!/usr/bin/env python3
"""What a checkpoint costs, against a train step and against writing the same bytes.

For W2 (examples/cnn, dp.rules, 8 ranks: 9.4 MiB of parameters and Adam state) and W1
(examples/mlp, tp.rules, 8 ranks: 96 MiB), runs the compiled program for 12 steps with a
checkpoint every 4 (3 checkpoints) and reads its summary: seconds per train step and per
checkpoint (gather to rank 0, write, fsync, rename, prune). Beside it, the floor that
any scheme pays on this disk: one process writing and fsyncing a file of the checkpoint's
size. checkpoint / floor - 1 is what gathering through rank 0 adds; writing per-rank
slices in parallel could at most save that part. Repetitions are interleaved; medians.
Prints ONE JSON object on stdout.

    bench/checkpoint/run.py [--reps 3] [--build build]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe"]
# Each workload's inputs: W2 reads Fashion-MNIST as its run configuration binds it, W1
# has no dataset and trains on synthetic numbers.
WORKLOADS = {
    "W2": ("examples/cnn/cnn.shard", "examples/cnn/dp.rules", 8,
           ["--config", os.path.join(REPO, "examples/cnn/run.json")]),
    "W1": ("examples/mlp/mlp.shard", "examples/mlp/tp.rules", 8, ["--synthetic"]),
}
STEPS, EVERY = 12, 4


def run_program(program, ranks, inputs, folder):
    out = subprocess.run(
        MPIRUN + ["-np", str(ranks), program] + inputs + ["--steps", str(STEPS), "--no-eval",
                  "--checkpoint-dir", folder, "--checkpoint-every", str(EVERY), "--keep", "1"],
        check=True, capture_output=True, text=True)
    summary = json.loads(out.stdout)
    size = max(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder))
    return (summary["train_seconds"] / STEPS,
            summary["checkpoint_seconds"] / summary["checkpoints"], size)


def write_floor(folder, size):
    """One process writes `size` bytes to a fresh file and fsyncs it, as rank 0 does."""
    data = os.urandom(1 << 20) * (size >> 20) + os.urandom(size & ((1 << 20) - 1))
    path = os.path.join(folder, "floor.bin")
    start = time.perf_counter()
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    seconds = time.perf_counter() - start
    os.unlink(path)
    return seconds


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--build", default=os.path.join(REPO, "build"))
    args = parser.parse_args()
    shardc = os.path.join(args.build, "bin", "shardc")
    work = tempfile.mkdtemp(prefix="bench-checkpoint-")
    samples = {name: {"step": [], "checkpoint": [], "floor": []} for name in WORKLOADS}
    sizes = {}
    for name, (model, rules, _, _) in WORKLOADS.items():
        subprocess.run([shardc, os.path.join(REPO, model), "--rules", os.path.join(REPO, rules),
                        "-o", os.path.join(work, name)], check=True)
    for rep in range(args.reps):
        for name, (_, _, ranks, inputs) in WORKLOADS.items():
            folder = os.path.join(work, f"{name}-{rep}")
            step, checkpoint, size = run_program(os.path.join(work, name), ranks, inputs, folder)
            sizes[name] = size
            samples[name]["step"].append(step)
            samples[name]["checkpoint"].append(checkpoint)
            samples[name]["floor"].append(write_floor(work, size))
            print(f"rep {rep} {name}: step {step * 1e3:.1f} ms, checkpoint "
                  f"{checkpoint * 1e3:.1f} ms, floor {samples[name]['floor'][-1] * 1e3:.1f} ms",
                  file=sys.stderr)
    result = {"reps": args.reps, "steps": STEPS, "checkpoint_every": EVERY, "workloads": {}}
    for name, s in samples.items():
        step, checkpoint, floor = (statistics.median(s[k]) for k in ("step", "checkpoint", "floor"))
        result["workloads"][name] = {
            "model": WORKLOADS[name][0], "rules": WORKLOADS[name][1], "ranks": WORKLOADS[name][2],
            "checkpoint_bytes": sizes[name],
            "train_step_ms": round(step * 1e3, 2),
            "checkpoint_ms": round(checkpoint * 1e3, 2),
            "single_writer_floor_ms": round(floor * 1e3, 2),
            "checkpoint_over_step": round(checkpoint / step, 3),
            "checkpoint_over_floor": round(checkpoint / floor, 3),
        }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
