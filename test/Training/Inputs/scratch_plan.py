"""scratch_plan.py REPORT.json RUN.out: whether the runtime's scratch buffer, as the
run's summary gives it (the largest rank's, after the run), is the one `shardc
--report=json` planned: the driver maps the planned size before the first step, and
a call that needed more would have grown it. Prints `scratch_plan: ok N` (N the
bytes), else both figures."""
import json
import sys

planned = json.load(open(sys.argv[1]))["memory_per_rank"].get("scratch", 0)
for line in reversed(open(sys.argv[2]).read().splitlines()):
    if line.startswith("{") and "resident_bytes_per_rank" in line:
        used = json.loads(line)["resident_bytes_per_rank"]["scratch"]
        break
else:
    sys.exit(f"scratch_plan: no summary with resident_bytes_per_rank in {sys.argv[2]}")
print(f"scratch_plan: ok {used}" if used == planned
      else f"scratch_plan: planned {planned} bytes, the run's buffer is {used}")
