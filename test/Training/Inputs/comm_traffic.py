"""Holds what a run's collectives moved (the summary's `collectives`, rank 0's, over its
train steps) against the plan of `shardc --report=json`, per step and per kind.

    comm_traffic.py REPORT.json SUMMARY.txt

The plan's collectives that move anything (`traffic`) are summed per kind (the first
word of "all_reduce sum", "all_gather dim 0"): their calls (`count`), bytes and sent
bytes, each times its count. Rank 0 runs those of every rank and, under a pipeline, its
stage 0's; it sends stage 0's activation to each next stage once per microbatch. Prints
one line per kind and the totals; any figure off, and the script exits 1.
"""
import json
import sys

report = json.load(open(sys.argv[1]))
summary = [json.loads(line) for line in open(sys.argv[2]) if line.startswith("{")][-1]
counted = summary["collectives"]
steps = counted["steps"]

planned = {}
for c in report["collectives_per_step"]:
    if not c["traffic"] or c.get("pipeline_stage", 0) != 0:
        continue
    kind = planned.setdefault(c["kind"].split()[0], {"calls": 0, "bytes": 0, "sent_bytes": 0})
    kind["calls"] += c["count"]
    kind["bytes"] += c["bytes"] * c["count"]
    kind["sent_bytes"] += c["sent_bytes"] * c["count"]
pipeline = report.get("pipeline")
if pipeline:
    sends = [t for t in pipeline["transfers"] if t["from_stage"] == 0]
    activations = sum(t["activation_bytes_per_microbatch"] for t in sends) * pipeline["microbatches"]
    planned["send"] = {"calls": len(sends) * pipeline["microbatches"], "bytes": activations,
                       "sent_bytes": activations}

FIGURES = ("calls", "bytes", "sent_bytes")
ok = True


def per_step(name, totals):
    global ok
    if any(totals[f] % steps for f in FIGURES):
        print(f"{name}: {totals} over {steps} steps: MISMATCH, the steps differ")
        ok = False
    return {f: totals[f] // steps for f in FIGURES}


def line(name, got, want, figures=FIGURES):
    global ok
    same = all(got[f] == want[f] for f in figures)
    ok = ok and same
    text = ", ".join(f"{got[f]} {f.replace('_', ' ')}" for f in figures) + " per step"
    print(f"{name}: {text}" + (": as planned" if same else f": MISMATCH, the report plans {want}"))


print(f"steps: {steps}")
zero = dict.fromkeys(FIGURES, 0)
got = {kind: per_step(kind, totals) for kind, totals in counted["by_kind"].items()}
for kind in sorted(set(planned) | set(got)):
    line(kind, got.get(kind, zero), planned.get(kind, zero))
if not pipeline:
    # The plan's own totals: every collective of the step is one of the kinds above.
    line("total", {f: sum(g[f] for k, g in got.items() if k != "send") for f in FIGURES},
         {"bytes": report["collective_bytes_per_step"],
          "sent_bytes": report["sent_bytes_per_rank_per_step"]}, FIGURES[1:])
sys.exit(0 if ok else 1)
