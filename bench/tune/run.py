#!/usr/bin/python3
"""The layout search against the examples' hand-written rules files, on 8 ranks.

For W1 (examples/mlp), W2 (examples/cnn) and W4 (examples/gpt):

  1. `shardc tune MODEL --ranks 8 --top K --json`: every candidate predicted, the K
     best built and timed by the search itself; Spearman's rank correlation of the
     predicted and the measured step times over the candidates it timed;
  2. side by side, in interleaved repetitions (the machine is noisy: medians): the
     search's pick and each of the example's hand-written rules files for 8 ranks, each
     built and trained --steps steps on synthetic inputs, its step time the median of
     the steps after the second (the `seconds_per_step` of the metrics lines, as tune times);
     the pick's time over the fastest hand-written file's (the issue asks <= 1.10).

With --two-hosts (root: network namespaces, test/Runtime/Inputs/two_hosts.sh), also W2
data parallel across two hosts over TCP: `shardc tune --hosts 2` with that launcher
predicts it, and the same launcher measures it (the issue asks within 25 %).

    bench/tune/run.py [--reps 3] [--top 5] [--steps 10] [--only w1,w2,w4] [--two-hosts]
    bench/tune/run.py --only "" --two-hosts     # the two-host prediction alone

Prints ONE JSON object on stdout; progress goes to stderr. Sets itself up: builds
build/bin/shardc, shardc-tune and shardrt-calibrate with scripts/build.sh (which
installs the Debian packages) when one is missing.
"""

import argparse
import glob
import importlib.util
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.join(REPO, "build", "bin")
_spec = importlib.util.spec_from_file_location("train_bench", os.path.join(REPO, "bench", "train", "run.py"))
tb = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tb)

WORKLOADS = {"w1": "mlp", "w2": "cnn", "w4": "gpt"}
TWO_HOSTS = os.path.join(REPO, "test", "Runtime", "Inputs", "two_hosts.sh")


def log(*a):
    print("[bench]", *a, file=sys.stderr, flush=True)


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed (exit {r.returncode}):\n"
                           f"{r.stdout[-2000:]}{r.stderr[-4000:]}")
    return r.stdout


def mesh_ranks(rules):
    m = re.search(r"^mesh\s*\(([^)]*)\)", open(rules).read(), re.M)
    ranks = 1
    for size in re.findall(r"=\s*(\d+)", m.group(1)) if m else []:
        ranks *= int(size)
    return ranks


def step_seconds(launcher, exe, steps, workdir):
    """The median `seconds_per_step` of the metrics lines after the second step."""
    metrics = os.path.join(workdir, "metrics.jsonl")
    if os.path.exists(metrics):
        os.remove(metrics)
    run(launcher + [exe, "--steps", str(steps), "--synthetic", "--no-eval", "--metrics", metrics],
        env=tb.shardc_env())
    lines = [json.loads(l) for l in open(metrics) if l.strip()]
    times = [l["seconds_per_step"] for l in lines if l.get("kind") == "train" and l["step"] > 2]
    return statistics.median(times)


def spearman(xs, ys):
    def ranks(v):
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        for rank, i in enumerate(order):
            r[i] = float(rank)
        return r
    rx, ry = ranks(xs), ranks(ys)
    n = len(xs)
    if n < 2:
        return None
    d2 = sum((a - b) ** 2 for a, b in zip(rx, ry))
    return 1 - 6 * d2 / (n * (n * n - 1))


def mpirun(ranks):
    return ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(ranks)]


def workload(name, args, tmp):
    example = os.path.join(REPO, "examples", WORKLOADS[name])
    model = glob.glob(os.path.join(example, "*.shard"))[0]
    work = os.path.join(tmp, name)
    os.makedirs(work)
    log(f"{name}: shardc tune {os.path.relpath(model, REPO)} --ranks 8 --top {args.top}")
    tuned = json.loads(run([os.path.join(BIN, "shardc"), "tune", model, "--ranks", "8",
                            "--top", str(args.top), "--steps", str(args.steps), "--json",
                            "--work-dir", os.path.join(work, "tune"),
                            "-o", os.path.join(work, "tuned.rules")], cwd=work))
    timed = [c for c in tuned["candidates"] if c.get("measured_seconds")]
    rho = spearman([c["predicted_seconds"] for c in timed], [c["measured_seconds"] for c in timed])
    layouts = {"tuned": os.path.join(work, "tuned.rules")}
    for rules in sorted(glob.glob(os.path.join(example, "*.rules"))):
        if mesh_ranks(rules) == 8:
            layouts[os.path.basename(rules)[:-len(".rules")]] = rules
    exes = {}
    for label, rules in layouts.items():
        exes[label] = os.path.join(work, label)
        run([os.path.join(BIN, "shardc"), model, "--rules", rules, "-o", exes[label]])
    samples = {label: [] for label in layouts}
    for rep in range(args.reps):
        for label in layouts:
            seconds = step_seconds(mpirun(8), exes[label], args.steps, work)
            samples[label].append(seconds)
            log(f"{name} rep {rep + 1}: {label} {seconds * 1e3:.1f} ms per step")
    medians = {label: statistics.median(v) for label, v in samples.items()}
    hand = {k: v for k, v in medians.items() if k != "tuned"}
    fastest = min(hand, key=hand.get)
    return {
        "pick": tuned["best"],
        "pick_rules": open(layouts["tuned"]).read().splitlines()[-20:],
        "timed_by_tune": [{"layout": c["label"], "predicted_ms": round(c["predicted_seconds"] * 1e3, 2),
                           "measured_ms": round(c["measured_seconds"] * 1e3, 2)} for c in timed],
        "spearman_predicted_vs_measured": None if rho is None else round(rho, 3),
        "candidates": len(tuned["candidates"]),
        "left_out": sum(1 for c in tuned["candidates"] if c["rejected"]),
        "step_ms_median": {k: round(v * 1e3, 2) for k, v in medians.items()},
        "step_ms_samples": {k: [round(x * 1e3, 2) for x in v] for k, v in samples.items()},
        "fastest_hand_written": fastest,
        "pick_over_fastest_hand_written": round(medians["tuned"] / hand[fastest], 3),
    }


def two_hosts(args, tmp):
    model = os.path.join(REPO, "examples", "cnn", "cnn.shard")
    work = os.path.join(tmp, "two-hosts")
    os.makedirs(work)
    launcher = f"{TWO_HOSTS} {{ranks}}"
    log("w2 on two hosts: shardc tune --hosts 2 (calibrated under two_hosts.sh)")
    tuned = json.loads(run([os.path.join(BIN, "shardc"), "tune", model, "--ranks", "8", "--hosts", "2",
                            "--top", "0", "--json", "--launcher", launcher,
                            "--work-dir", os.path.join(work, "tune"),
                            "-o", os.path.join(work, "tuned.rules")], cwd=work))
    dp = next(c for c in tuned["candidates"] if c["label"] == "dp 8x1")
    exe = os.path.join(work, "dp")
    run([os.path.join(BIN, "shardc"), model, "--rules", os.path.join(REPO, "examples", "cnn", "dp.rules"),
         "-o", exe])
    measured = [step_seconds([TWO_HOSTS, "8"], exe, args.steps, work) for _ in range(args.reps)]
    m = statistics.median(measured)
    return {"layout": "examples/cnn/dp.rules (dp 8x1)", "calibration": tuned["calibration"],
            "predicted_ms": round(dp["predicted_seconds"] * 1e3, 2),
            "measured_ms": round(m * 1e3, 2),
            "measured_ms_samples": [round(x * 1e3, 2) for x in measured],
            "predicted_over_measured": round(dp["predicted_seconds"] / m, 3)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--top", type=int, default=5)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--only", default="w1,w2,w4")
    ap.add_argument("--two-hosts", action="store_true")
    args = ap.parse_args()
    for tool in ("shardc", "shardc-tune", "shardrt-calibrate"):
        tb.build_shardc(os.path.join(BIN, tool))
    result = {"bench": "tune", "ranks": 8, "reps": args.reps, "top": args.top, "steps": args.steps,
              "targets": {"pick_over_fastest_hand_written": 1.10, "spearman": 0.8,
                          "two_hosts_prediction_error": 0.25}}
    with tempfile.TemporaryDirectory(prefix="shardc-bench-tune-") as tmp:
        for name in [n for n in args.only.split(",") if n]:
            result[name] = workload(name, args, tmp)
        if args.two_hosts:
            result["w2_two_hosts"] = two_hosts(args, tmp)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
