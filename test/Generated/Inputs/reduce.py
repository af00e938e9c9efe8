#!/usr/bin/env python3
"""Shrinks a failing generated program to a small reproducer: removes whole blocks,
then single lines (of the model, the imported module and the rules file), keeping
each removal while checkprog.py's same check still fails the same way (the same first
error message, where it prints one), until nothing more goes.

    reduce.py SHARDC FOLDER CHECK [--level front|exe]

FOLDER holds p.shard, p.rules (and genlib.shard); CHECK is the failing check's name
as checkprog.py prints it (emit-llvm, gradients, sharded-parameters, ...). The
reproducer goes to FOLDER/reduced/, whose path is printed last.
"""
import argparse
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checkprog  # noqa: E402

FILES = ("p.shard", "genlib.shard", "p.rules")


def failure_of(shardc, files, level, scratch):
    """The check the program fails and its first error message (None where the
    failure prints none, as a gradient mismatch), or None when it passes."""
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    for name, lines in files.items():
        with open(os.path.join(scratch, name), "w") as f:
            f.write("\n".join(lines) + "\n")
    try:
        checkprog.check_valid(shardc, scratch, level, timeout=120)
    except checkprog.Failure as failure:
        message = re.search(r"error: ([^\n]*)", str(failure))
        return failure.check, message.group(1) if message else None
    return None


def block_spans(lines):
    """(first, last) line indices of each top-level `block ... { ... }`."""
    spans, start = [], None
    for i, line in enumerate(lines):
        if line.startswith("block "):
            start = i
        elif line == "}" and start is not None:
            spans.append((start, i))
            start = None
    return spans


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("shardc")
    parser.add_argument("folder")
    parser.add_argument("check")
    parser.add_argument("--level", default="front")
    args = parser.parse_args()
    files = {}
    for name in FILES:
        path = os.path.join(args.folder, name)
        if os.path.exists(path):
            with open(path) as f:
                files[name] = f.read().rstrip("\n").split("\n")
    scratch = tempfile.mkdtemp(prefix="shardc-reduce-")
    # An empty program fails emit-llvm too: a removal must keep the same error.
    original = failure_of(args.shardc, files, args.level, scratch)
    if not original or original[0] != args.check:
        sys.exit(f"reduce: {args.folder} does not fail {args.check}")
    changed = True
    while changed:
        changed = False
        for name in list(files):
            candidates = [list(range(a, b + 1)) for a, b in reversed(block_spans(files[name]))]
            candidates += [[i] for i in reversed(range(len(files[name])))]
            for drop in candidates:
                if max(drop) >= len(files[name]):
                    continue
                trial = dict(files)
                trial[name] = [l for i, l in enumerate(files[name]) if i not in drop]
                if failure_of(args.shardc, trial, args.level, scratch) == original:
                    files, changed = trial, True
    shutil.rmtree(scratch, ignore_errors=True)
    out = os.path.join(args.folder, "reduced")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    for name, lines in files.items():
        with open(os.path.join(out, name), "w") as f:
            f.write("\n".join(lines) + "\n")
    print(f"reduce: {sum(len(l) for l in files.values())} lines left in {out}")


if __name__ == "__main__":
    main()
