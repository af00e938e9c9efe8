"""peak_growth.py REPORT.json ONE_STEP.out MORE_STEPS.out: how much the largest rank's
peak resident memory grew between a run of one step and a longer run of the same
program, against the train step's planned arena (from `shardc --report=json`). Prints
`peak_growth: ok` when it grew by less than half the arena, else the figures."""
import json
import sys


def peak(path):
    for line in reversed(open(path).read().splitlines()):
        if line.startswith("{") and "resident_bytes_per_rank" in line:
            return json.loads(line)["resident_bytes_per_rank"]["peak"]
    sys.exit(f"peak_growth: no summary with resident_bytes_per_rank in {path}")


arena = json.load(open(sys.argv[1]))["memory_per_rank"]["train_arena"]
one, more = peak(sys.argv[2]), peak(sys.argv[3])
growth = more - one
if growth < arena / 2:
    print("peak_growth: ok")
else:
    print(f"peak_growth: {growth / 2**20:.1f} MiB more after the longer run, "
          f"train arena {arena / 2**20:.1f} MiB")
