#!/usr/bin/env python3
"""Compares the results JSON of two runs of a compiled program (runtime/README.md).

    compare_outputs.py REF.json GOT.json [--rtol 1e-4]

The runs must have the same seed and the same results (names, dtypes, shapes). With a
the first file's numbers and b the second's, a result matches when
  |sum_a - sum_b|         <= rtol * max(abs_sum_b, 1e-30)
  |abs_sum_a - abs_sum_b| <= rtol * max(abs_sum_b, 1e-30)
  |l2_a - l2_b|           <= rtol * max(l2_b, 1e-30)
  |v_a - v_b|             <= rtol * max(|v_b|, l2_b / sqrt(numel))  for each listed value
(the listed values both files have) and an i32 result matches only exactly (its digest
and values). NaN matches NaN and an infinity the same infinity. Prints one line per
result with its worst relative difference (|a - b| over the scale on the right, so a
match needs it <= rtol), then exits 0, or 1 with a message naming each mismatch.
"""
import argparse
import json
import math
import sys


def number(value):
    # The driver writes NaN and infinities as the strings "NaN", "Infinity", "-Infinity".
    return float(value)


def relative(a, b, scale):
    """|a - b| / scale, with non-finite numbers equal only to themselves."""
    if not (math.isfinite(a) and math.isfinite(b)):
        same = (math.isnan(a) and math.isnan(b)) or a == b
        return 0.0 if same else math.inf
    if a == b:
        return 0.0
    return abs(a - b) / scale


def compare_float(a, b):
    """The worst relative difference and what it was in."""
    abs_sum_b = number(b["abs_sum"])
    l2_b = number(b["l2"])
    checks = [
        ("sum", number(a["sum"]), number(b["sum"]), max(abs_sum_b, 1e-30)),
        ("abs_sum", number(a["abs_sum"]), abs_sum_b, max(abs_sum_b, 1e-30)),
        ("l2", number(a["l2"]), l2_b, max(l2_b, 1e-30)),
    ]
    numel = math.prod(b["shape"])
    rms = l2_b / math.sqrt(numel) if numel else 0.0
    for i, (va, vb) in enumerate(zip(a["values"], b["values"])):
        va, vb = number(va), number(vb)
        scale = max(abs(vb), rms) if math.isfinite(vb) else 1.0
        checks.append((f"values[{i}]", va, vb, max(scale, 1e-30)))
    worst, where, detail = 0.0, "sum", ""
    for what, va, vb, scale in checks:
        r = relative(va, vb, scale)
        if r > worst:
            worst, where, detail = r, what, f"{va!r} vs {vb!r}"
    return worst, where, detail


def compare_int(a, b):
    """None when the results are equal, else what differs."""
    for i, (va, vb) in enumerate(zip(a["values"], b["values"])):
        if va != vb:
            return f"values[{i}] {va} vs {vb}"
    if a["digest"] != b["digest"]:
        return f"digest {a['digest']} vs {b['digest']}"
    return None


def main():
    parser = argparse.ArgumentParser(description="Compare two results JSON files.")
    parser.add_argument("ref")
    parser.add_argument("got")
    parser.add_argument("--rtol", type=float, default=1e-4)
    args = parser.parse_args()

    runs = []
    for path in (args.ref, args.got):
        try:
            with open(path) as f:
                runs.append(json.load(f))
        except (OSError, ValueError) as error:
            sys.exit(f"compare_outputs: cannot read {path}: {error}")
    ref, got = runs

    problems = []
    if ref.get("seed") != got.get("seed"):
        problems.append(f"the seeds differ ({ref.get('seed')} vs {got.get('seed')})")
    ref_results, got_results = ref["results"], got["results"]
    for name in ref_results.keys() - got_results.keys():
        problems.append(f"{name}: only in {args.ref}")
    for name in got_results.keys() - ref_results.keys():
        problems.append(f"{name}: only in {args.got}")

    for name, a in ref_results.items():
        b = got_results.get(name)
        if b is None:
            continue
        if (a["dtype"], a["shape"]) != (b["dtype"], b["shape"]):
            problems.append(f"{name}: {a['dtype']}{a['shape']} vs {b['dtype']}{b['shape']}")
            continue
        label = f"{name}: {a['dtype']}{a['shape']}"
        if a["dtype"] == "i32":
            difference = compare_int(a, b)
            print(f"{label} {'exact' if difference is None else 'differs: ' + difference}")
            if difference is not None:
                problems.append(f"{name}: {difference}")
            continue
        worst, where, detail = compare_float(a, b)
        print(f"{label} worst relative difference {worst:.3g} ({where})")
        if not worst <= args.rtol:
            problems.append(f"{name}: {where} differs by {worst:.3g} relative, more than "
                            f"rtol {args.rtol:g} ({detail})")

    if problems:
        sys.stdout.flush()  # the per-result lines first, also when both go to one pipe
        print(f"compare_outputs: {args.got} does not match {args.ref}:", file=sys.stderr)
        for problem in problems:
            print(f"  {problem}", file=sys.stderr)
        sys.exit(1)
    print(f"compare_outputs: {len(ref_results)} results match (rtol {args.rtol:g})")


if __name__ == "__main__":
    main()
