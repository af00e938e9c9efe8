#!/usr/bin/python3
"""Communication in flight across hosts: --overlap-gradients and --prefetch-weights.

W4's GPT (examples/gpt/gpt.shard) on two "hosts" (network namespaces joined by a veth
pair, test/Runtime/Inputs/two_hosts.sh; needs root), their link limited to 1 Gbit/s
(`--rate`, default 1gbit; "" for unlimited):

- fsdp2:  FSDP on one rank per host (test/Training/Inputs/fsdp2.rules),
- fsdp8:  FSDP on 2 hosts x 4 ranks (examples/gpt/fsdp.rules),
- dp2:    data parallel on one rank per host (bench/train/data2.rules),

each trained `--steps` synthetic steps with the gradients' reductions and the weights'
gathers waited for at once or in flight (off/off, off/on, on/off, on/on; dp2 has no
gathers: off/off and on/off), the runs of one round interleaved, `--reps` rounds. Prints
ONE JSON object on stdout, the medians of train_seconds and each setting's time over
off/off's; progress goes to stderr. Every setting's final losses must agree within a
relative 1e-6 (gathers copy blocks; the reductions in flight sum in group order, on 2
ranks as MPI does, on 8 maybe in another order): the bench stops otherwise.

    bench/overlap/run.py [--reps 3] [--steps 20] [--rate 1gbit] [--only fsdp2,fsdp8,dp2]

Sets itself up: builds build/bin/shardc with scripts/build.sh (which installs the Debian
packages) when it is missing.
"""

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARDC = os.path.join(REPO, "build", "bin", "shardc")
TWO_HOSTS = os.path.join(REPO, "test", "Runtime", "Inputs", "two_hosts.sh")
_spec = importlib.util.spec_from_file_location("train_bench", os.path.join(REPO, "bench", "train", "run.py"))
tb = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tb)

# name: (rules, ranks, whether it gathers weights)
CASES = {
    "fsdp2": (os.path.join(REPO, "test", "Training", "Inputs", "fsdp2.rules"), 2, True),
    "fsdp8": (os.path.join(REPO, "examples", "gpt", "fsdp.rules"), 8, True),
    "dp2": (os.path.join(REPO, "bench", "train", "data2.rules"), 2, False),
}


def log(message):
    print(f"[bench/overlap] {message}", file=sys.stderr, flush=True)


def train(exe, ranks, rate, steps, overlap, prefetch):
    cmd = ["bash", TWO_HOSTS] + (["--rate", rate] if rate else []) + [
        str(ranks), exe, "--synthetic", "--steps", str(steps), "--no-eval",
        "--overlap-gradients", overlap, "--prefetch-weights", prefetch]
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{r.stderr[-3000:]}")
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    return summary["train_seconds"], summary["final_train_loss"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--rate", default="1gbit")
    ap.add_argument("--only", default=",".join(CASES))
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/overlap: the two hosts are network namespaces: run as root")
    tb.build_shardc(SHARDC)
    names = [n for n in args.only.split(",") if n]
    result = {"bench": "overlap", "model": "examples/gpt/gpt.shard (W4)", "rate": args.rate or "unlimited",
              "steps": args.steps, "reps": args.reps, "cases": {}}
    with tempfile.TemporaryDirectory(prefix="shardc-bench-overlap-") as tmp:
        exes = {}
        for name in names:
            rules, _, _ = CASES[name]
            exes[name] = os.path.join(tmp, name)
            subprocess.run([SHARDC, os.path.join(REPO, "examples", "gpt", "gpt.shard"), "--rules", rules,
                            "-o", exes[name]], check=True, stdout=sys.stderr)
        settings = {name: [(o, p) for o in ("off", "on") for p in (("off", "on") if CASES[name][2] else ("off",))]
                    for name in names}
        samples = {name: {s: [] for s in settings[name]} for name in names}
        losses = {name: set() for name in names}
        for rep in range(args.reps):
            for name in names:
                for overlap, prefetch in settings[name]:
                    seconds, loss = train(exes[name], CASES[name][1], args.rate, args.steps, overlap, prefetch)
                    samples[name][(overlap, prefetch)].append(seconds)
                    losses[name].add(loss)
                    log(f"round {rep + 1}: {name} overlap-gradients {overlap} prefetch-weights {prefetch}: "
                        f"{seconds:.2f} s, loss {loss}")
        for name in names:
            low, high = min(losses[name]), max(losses[name])
            if high - low > 1e-6 * abs(high):
                sys.exit(f"bench/overlap: {name}'s settings ended at different losses: {sorted(losses[name])}")
            medians = {s: statistics.median(xs) for s, xs in samples[name].items()}
            base = medians[("off", "off")]
            result["cases"][name] = {
                "rules": os.path.relpath(CASES[name][0], REPO), "ranks": CASES[name][1],
                "final_train_losses": sorted(losses[name]),
                "median_seconds": {f"overlap_{o}_prefetch_{p}": round(m, 2) for (o, p), m in medians.items()},
                "over_off_off": {f"overlap_{o}_prefetch_{p}": round(m / base, 3) for (o, p), m in medians.items()},
                "samples_seconds": {f"overlap_{o}_prefetch_{p}": [round(x, 2) for x in xs]
                                    for (o, p), xs in samples[name].items()},
            }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
