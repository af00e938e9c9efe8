#!/usr/bin/env python3
"""Generates programs with shardgen.py and checks what shardc and the executables do
with them.

    checkprog.py SHARDC WORKDIR --seeds A:B [--level front|exe] [--invalid K]
                 [--timeout S] [--keep-going] [--reduce]

Valid programs (every seed in [A, B)):
  quick  --emit=llvm --report: one run through every stage, printing the plan and the
         LLVM dialect (for long runs)
  front  every --emit stage (ast, typed, mlir, sharded, spmd with --report, llvm) exits 0
         with output and no error text;
  exe    also: the reference and the sharded executable build; 2 steps of the reference
         on synthetic inputs (--synthetic: a generated program reads no data) give a
         finite loss; its gradients match finite differences (--check-gradients);
         2 steps under the rules on as many ranks as the mesh has give every parameter
         (and optimizer state) within 1e-5 of the reference's, read from both runs'
         last checkpoints (test/Checkpoint/Inputs/compare_checkpoints.py), and the same
         losses.
Invalid programs (--invalid K: K mutations of each seed, by mutate.py): shardc exits 1
with `FILE:LINE:COL: error:` on the mutated line, within the time limit, without a
crash or internal text.

Prints one line per failure and a summary `checkprog: N programs, ...: M failed`; exits 1
if anything failed. With --reduce each failure is shrunk (reduce.py) and the reproducer
path printed.
"""
import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import shardgen  # noqa: E402
import mutate  # noqa: E402

COMPARE_CHECKPOINTS = os.path.join(HERE, "..", "..", "Checkpoint", "Inputs",
                                   "compare_checkpoints.py")
# Text that must never reach a user: MLIR's own op diagnostics, verifier failures,
# crashes and sanitizer reports.
INTERNAL = re.compile(r"' op |does not verify|internal error|Assertion|LLVM ERROR|"
                      r"Stack dump|PLEASE submit|AddressSanitizer|runtime error:|"
                      r"UndefinedBehaviorSanitizer")
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe"]


class Failure(Exception):
    def __init__(self, check, detail):
        super().__init__(f"{check}: {detail}")
        self.check = check


def run(cmd, timeout, cwd=None):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd,
                              errors="replace")
    except subprocess.TimeoutExpired:
        raise Failure("hang", f"{' '.join(cmd)}: over {timeout} s")


def tail(text, lines=6):
    return "\n    ".join(text.strip().splitlines()[-lines:])


def write_program(seed, folder, all_layouts):
    program = shardgen.Program(seed, all_layouts)
    model, lib, rules = program.build()
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    files = {"p.shard": model, "p.rules": rules}
    if program.sets:
        files["p.flags"] = "".join(f"--set {s}\n" for s in program.sets)
    if lib:
        files["genlib.shard"] = lib
    for name, text in files.items():
        with open(os.path.join(folder, name), "w") as f:
            f.write(text)
    return files


def compile_ok(shardc, args, timeout, check):
    """shardc on `args` and the program's flags (p.flags beside the model: --set)."""
    flags = os.path.join(os.path.dirname(args[0]), "p.flags")
    if os.path.exists(flags):
        with open(flags) as f:
            args = args + f.read().split()
    r = run([shardc] + args, timeout)
    if r.returncode != 0 or INTERNAL.search(r.stderr):
        raise Failure(check, f"shardc {' '.join(args)} exited {r.returncode}:\n    {tail(r.stderr)}")
    return r


def mesh_ranks(rules_text):
    sizes = re.search(r"mesh \(([^)]*)\)", rules_text).group(1)
    ranks = 1
    for part in sizes.split(","):
        ranks *= int(part.split("=")[1])
    return ranks


def train_losses(path):
    with open(path) as f:
        return [json.loads(line)["loss"] for line in f if '"train"' in line]


def check_valid(shardc, folder, level, timeout):
    model, rules = os.path.join(folder, "p.shard"), os.path.join(folder, "p.rules")
    if level == "quick":
        r = compile_ok(shardc, [model, "--rules", rules, "--emit=llvm", "--report"], timeout,
                       "emit-llvm")
        if "communication plan" not in r.stdout or "llvm.func" not in r.stdout:
            raise Failure("emit-llvm", "no plan or no LLVM dialect in the output")
        return
    compile_ok(shardc, [model, "--emit=ast"], timeout, "emit-ast")
    for stage in ("typed", "mlir", "sharded", "llvm"):
        r = compile_ok(shardc, [model, "--rules", rules, f"--emit={stage}"], timeout,
                       f"emit-{stage}")
        if not r.stdout.strip():
            raise Failure(f"emit-{stage}", "no output")
    compile_ok(shardc, [model, "--rules", rules, "--emit=spmd", "--report"], timeout, "emit-spmd")
    if level != "exe":
        return
    ref, sharded = os.path.join(folder, "ref"), os.path.join(folder, "sharded")
    compile_ok(shardc, [model, "--reference", "-o", ref], timeout, "exe-reference")
    compile_ok(shardc, [model, "--rules", rules, "-o", sharded], timeout, "exe-sharded")

    with open(model) as f:
        trains = "\n  optimizer " in f.read()
    with open(rules) as f:
        ranks = mesh_ranks(f.read())
    if not trains:
        check_forward(ref, sharded, ranks, timeout)
    else:
        check_training(ref, sharded, ranks, folder, timeout)
    # (c) gradients against finite differences, on the reference.
    r = run([ref, "--check-gradients", "--fd-eps", "1e-3"], timeout)
    if r.returncode != 0:
        raise Failure("gradients", f"exit {r.returncode}:\n    {tail(r.stdout + r.stderr, 12)}")


def forward_results(cmd, timeout, check):
    r = run(cmd + ["--forward", "--values", "1000000"], timeout)
    if r.returncode != 0:
        raise Failure(check, f"exit {r.returncode}:\n    {tail(r.stderr)}")
    return json.loads(r.stdout)["results"]


def check_forward(ref, sharded, ranks, timeout):
    """A model without an optimizer does not train: its forward results instead."""
    want = forward_results([ref], timeout, "run-reference")
    if not all(math.isfinite(v) for v in want["loss"]["values"]):
        raise Failure("finite-loss", f"loss {want['loss']['values'][:8]}")
    got = forward_results(MPIRUN + ["-np", str(ranks), sharded], timeout, "run-sharded")
    for name, result in want.items():
        a, b = result["values"], got[name]["values"]
        scale = max([abs(v) for v in a] + [1e-6])
        if len(a) != len(b) or any(abs(u - v) > 1e-5 * max(abs(u), scale) for u, v in zip(a, b)):
            raise Failure("sharded-forward", f"result '{name}' differs from the reference's")


def check_training(ref, sharded, ranks, folder, timeout):
    # (b) two steps of the reference, with a checkpoint after the last.
    ref_ck, ref_metrics = os.path.join(folder, "ref-ck"), os.path.join(folder, "ref.jsonl")
    r = run([ref, "--synthetic", "--steps", "2", "--no-eval", "--metrics", ref_metrics,
             "--checkpoint-dir", ref_ck], timeout)
    if r.returncode != 0:
        raise Failure("run-reference", f"exit {r.returncode}:\n    {tail(r.stderr)}")
    losses = train_losses(ref_metrics)
    if len(losses) != 2 or not all(math.isfinite(x) for x in losses):
        raise Failure("finite-loss", f"losses {losses}")

    # (d) two steps under the rules: the same parameters and state, the same losses.
    ck, metrics = os.path.join(folder, "ck"), os.path.join(folder, "sharded.jsonl")
    r = run(MPIRUN + ["-np", str(ranks), sharded, "--synthetic", "--steps", "2", "--no-eval",
                      "--metrics", metrics, "--checkpoint-dir", ck], timeout)
    if r.returncode != 0:
        raise Failure("run-sharded", f"exit {r.returncode}:\n    {tail(r.stderr)}")
    r = run([sys.executable, COMPARE_CHECKPOINTS, os.path.join(ref_ck, "ckpt-2.safetensors"),
             os.path.join(ck, "ckpt-2.safetensors"), "--rtol", "1e-5"], timeout)
    if r.returncode != 0:
        raise Failure("sharded-parameters", tail(r.stdout + r.stderr))
    got = train_losses(metrics)
    if len(got) != 2 or any(abs(a - b) > 1e-4 * max(abs(a), 1e-6) for a, b in zip(losses, got)):
        raise Failure("sharded-loss", f"reference {losses}, sharded {got}")


def check_invalid(shardc, folder, expect, timeout):
    target = os.path.join(folder, expect["file"])
    args = [os.path.join(folder, "p.shard"), "--rules", os.path.join(folder, "p.rules"),
            "--emit=llvm"]
    r = run([shardc] + args, timeout)
    if r.returncode != 1:
        raise Failure("invalid-exit", f"{expect['defect']}: exit {r.returncode}:\n    {tail(r.stderr)}")
    if INTERNAL.search(r.stderr):
        raise Failure("invalid-internal", f"{expect['defect']}:\n    {tail(r.stderr)}")
    # shardc shows paths under the working folder relative to it.
    located = re.compile(r"^([^\s:]+):(\d+):(\d+): error: ", re.M)
    lines = [int(m.group(2)) for m in located.finditer(r.stderr)
             if os.path.realpath(m.group(1)) == os.path.realpath(target)]
    if expect["line"] not in lines:
        raise Failure("invalid-location", f"{expect['defect']} on {expect['file']}:{expect['line']}, "
                      f"errors at lines {lines}:\n    {tail(r.stderr)}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("shardc")
    parser.add_argument("workdir")
    parser.add_argument("--seeds", default="0:20")
    parser.add_argument("--level", choices=["quick", "front", "exe"], default="front")
    parser.add_argument("--invalid", type=int, default=0,
                        help="mutations per seed; 0 checks the valid programs instead")
    parser.add_argument("--timeout", type=float, default=60)
    parser.add_argument("--all-layouts", action="store_true")
    parser.add_argument("--reduce", action="store_true")
    args = parser.parse_args()
    first, last = (int(x) for x in args.seeds.split(":"))
    os.makedirs(args.workdir, exist_ok=True)
    tried, failures, by_check = 0, [], {}
    for seed in range(first, last):
        folder = os.path.join(args.workdir, f"s{seed}")
        files = write_program(seed, folder, args.all_layouts)
        cases = [None] if not args.invalid else range(args.invalid)
        failed_before = len(failures)
        for k in cases:
            tried += 1
            case = f"seed {seed}" + ("" if k is None else f" mutation {k}")
            try:
                if k is None:
                    check_valid(args.shardc, folder, args.level, args.timeout)
                else:
                    mfolder = os.path.join(args.workdir, f"s{seed}-m{k}")
                    expect = mutate.write_mutant(files, seed * 1000 + k, mfolder)
                    if expect is None:
                        tried -= 1
                        continue
                    check_invalid(args.shardc, mfolder, expect, args.timeout)
                    shutil.rmtree(mfolder)
            except Failure as f:
                by_check[f.check] = by_check.get(f.check, 0) + 1
                where = folder if k is None else mfolder
                failures.append(f"FAIL {case} ({where}): {f}")
                print(failures[-1], flush=True)
                if args.reduce and k is None:
                    r = run([sys.executable, os.path.join(HERE, "reduce.py"), args.shardc, where,
                             f.check, "--level", args.level], 3600)
                    print("  reduced:", r.stdout.strip().splitlines()[-1:] or r.stderr[-300:],
                          flush=True)
                continue
        if len(failures) == failed_before:
            shutil.rmtree(folder, ignore_errors=True)
    kind = "invalid programs" if args.invalid else f"valid programs at level {args.level}"
    summary = ", ".join(f"{c} {n}" for c, n in sorted(by_check.items()))
    print(f"checkprog: {tried} {kind} (seeds {first}..{last - 1}): {len(failures)} failed"
          + (f" ({summary})" if summary else ""))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
