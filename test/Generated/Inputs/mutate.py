#!/usr/bin/env python3
"""Invalid programs by construction: a valid generated program (shardgen.py) with one
known defect, and the file and line where shardc must report it.

    mutate.py SEED MUTATION OUTDIR

Defects: a wrong size, a repeated axis, a shadowed name, an undivided mesh axis, an
unknown name, an unknown block, a type error, a wrong argument count, an unknown axis,
a size that overflows, a non-scalar loss, a metric named like a metrics-line key, a
float number beside an i32 tensor.
"""
import json
import os
import random
import re
import sys


def lines_matching(text, pattern):
    return [i for i, line in enumerate(text.split("\n")) if re.search(pattern, line)]


def replace_line(text, index, line):
    lines = text.split("\n")
    lines[index] = line
    return "\n".join(lines)


def insert_before_loss(text, line):
    lines = text.split("\n")
    at = next(i for i, l in enumerate(lines) if l.startswith("  loss "))
    lines.insert(at, line)
    return "\n".join(lines), at


def defects(files, r):
    """Yields (name, make) pairs; make() returns (files, file name, 0-based line)."""
    model, rules = files["p.shard"], files["p.rules"]
    lets = lines_matching(model, r"^  let v\d+ = ")
    inputs = lines_matching(model, r"^  input ")

    def wrong_size():
        i = lines_matching(model, r"^  input x: ")[0]
        size = int(re.search(r"batch = (\d+)", model.split("\n")[i]).group(1))
        text, at = insert_before_loss(model, f"  let wrong = x : [batch = {size + 1}, "
                                             + re.search(r"\[batch = \d+, (\w+)", model).group(1) + "]")
        return dict(files, **{"p.shard": text}), "p.shard", at

    def repeated_axis():
        i = lines_matching(model, r"^  input x: ")[0]
        line = re.sub(r"\[batch = (\d+), ", r"[batch = \1, batch, ", model.split("\n")[i])
        return dict(files, **{"p.shard": replace_line(model, i, line)}), "p.shard", i

    def shadowed_name():
        i = r.choice(lets)
        line = re.sub(r"let v\d+ = ", "let x = ", model.split("\n")[i], count=1)
        return dict(files, **{"p.shard": replace_line(model, i, line)}), "p.shard", i

    def undivided_mesh_axis():
        # The batch's rule: every program has an input with the batch (8), whereas
        # a rule for an axis of intermediates only is never applied.
        rule = lines_matching(rules, r"^  batch -> ")
        if not rule:
            return None
        axis = re.search(r"-> \(?(\w+)", rules.split("\n")[rule[0]]).group(1)
        text = re.sub(rf"\b{axis} = \d+", f"{axis} = 3", rules, count=1)
        return dict(files, **{"p.rules": text}), "p.rules", rule[0]

    def unknown_name():
        i = r.choice(lets)
        line = model.split("\n")[i]
        names = re.findall(r"\b(v\d+|x|img)\b", line.split("=", 1)[1])
        if not names:
            return None
        line = line.split("=", 1)[0] + "=" + re.sub(rf"\b{names[0]}\b", "nosuch",
                                                   line.split("=", 1)[1], count=1)
        return dict(files, **{"p.shard": replace_line(model, i, line)}), "p.shard", i

    def unknown_block():
        calls = lines_matching(model, r"= (Dense|MLP|Conv|Lin\d+|Conv\d+)\(")
        if not calls:
            return None
        i = r.choice(calls)
        line = re.sub(r"= (\w+)\(", r"= \1x(", model.split("\n")[i], count=1)
        return dict(files, **{"p.shard": replace_line(model, i, line)}), "p.shard", i

    def type_error():
        text, at = insert_before_loss(model, "  let bad = x @ x")
        return dict(files, **{"p.shard": text}), "p.shard", at

    def wrong_arity():
        text, at = insert_before_loss(model, "  let bad = relu(x, x)")
        return dict(files, **{"p.shard": text}), "p.shard", at

    def unknown_axis():
        text, at = insert_before_loss(model, "  let bad = sum(x, over = [nosuch])")
        return dict(files, **{"p.shard": text}), "p.shard", at

    def overflowing_size():
        i = lines_matching(model, r"^  input x: ")[0]
        line = re.sub(r"batch = \d+", "batch = 4611686018427387904 * 4", model.split("\n")[i])
        return dict(files, **{"p.shard": replace_line(model, i, line)}), "p.shard", i

    def loss_not_scalar():
        i = lines_matching(model, r"^  loss ")[0]
        return dict(files, **{"p.shard": replace_line(model, i, "  loss x")}), "p.shard", i

    def reserved_metric():
        text, at = insert_before_loss(model, "  metric step = mean(x)")
        # Metrics come after the loss in generated programs; either order is valid.
        return dict(files, **{"p.shard": text}), "p.shard", at

    def float_beside_i32():
        if not lines_matching(model, r"^  input labels: i32"):
            return None
        text, at = insert_before_loss(model, "  let bad = labels + 0.5")
        return dict(files, **{"p.shard": text}), "p.shard", at

    return [("wrong size", wrong_size), ("repeated axis", repeated_axis),
            ("shadowed name", shadowed_name), ("undivided mesh axis", undivided_mesh_axis),
            ("unknown name", unknown_name), ("unknown block", unknown_block),
            ("type error", type_error), ("wrong argument count", wrong_arity),
            ("unknown axis", unknown_axis), ("overflowing size", overflowing_size),
            ("non-scalar loss", loss_not_scalar), ("reserved metric name", reserved_metric),
            ("float beside i32", float_beside_i32)]


def write_mutant(files, key, outdir):
    """Writes one mutant of `files` chosen by `key` into outdir; returns its expectation
    ({file, line (1-based), defect}) or None when the chosen defect does not apply."""
    r = random.Random(key)
    name, make = r.choice(defects(files, r))
    made = make()
    if made is None:
        return None
    mutated, target, line = made
    if mutated == files:  # the defect's pattern is not in this program
        return None
    os.makedirs(outdir, exist_ok=True)
    for fname, text in mutated.items():
        with open(os.path.join(outdir, fname), "w") as f:
            f.write(text)
    expect = {"file": target, "line": line + 1, "defect": name}
    with open(os.path.join(outdir, "expect.json"), "w") as f:
        json.dump(expect, f)
    return expect


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import shardgen
    seed, mutation, outdir = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    model, lib, rules = shardgen.Program(seed).build()
    files = {"p.shard": model, "p.rules": rules}
    if lib:
        files["genlib.shard"] = lib
    print(json.dumps(write_mutant(files, seed * 1000 + mutation, outdir)))
