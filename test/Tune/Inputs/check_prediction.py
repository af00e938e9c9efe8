"""check_prediction.py TUNE.json: recomputes every prediction of `shardc tune --json`
from the candidate's report (its rules file with .report.out for .rules) and the
calibration, by the cost model's closed form:

  compute = contraction_flops / gemm_flops_per_rank (gemm_bf16_flops_per_rank when the
            report's matmul_precision is bf16)
            + (step_flops - contraction_flops) / elementwise_per_rank
  comm    = sum over collectives with traffic of
            count * (steps * latency / (2 (ranks - 1)) + sent_bytes / bandwidth)
  steps   = 2 (group - 1) for an all_reduce, group - 1 otherwise; the link is
            `network` when the group of rank 0 reaches past its host's ranks.

Prints how many matched; exits 1 at the first that does not."""
import json
import sys

tune = json.load(open(sys.argv[1]))
cal = tune["calibration"]
ranks, hosts = cal["ranks"], cal["hosts"]
checked = 0
for c in tune["candidates"]:
    if "predicted_seconds" not in c:
        continue
    report = json.load(open(c["rules_file"][:-len(".rules")] + ".report.out"))
    axes = list(c["mesh"].items())
    # the candidates' meshes are (data, model): JSON objects keep no order
    axes.sort(key=lambda a: ["data", "model"].index(a[0]))
    comm = 0.0
    for coll in report["collectives_per_step"]:
        if not coll["traffic"]:
            continue
        names = [n.strip(" ()") for n in coll["mesh_axes"].split(",")]
        group, last = 1, 0
        for name, size in axes:
            inside = name in names
            group *= size if inside else 1
            last = last * size + (size - 1 if inside else 0)
        link = cal["network"] if hosts > 1 and last >= ranks // hosts else cal["local"]
        steps = (2 if coll["kind"].startswith("all_reduce") else 1) * (group - 1)
        comm += coll["count"] * (steps * link["latency_seconds"] / (2 * (ranks - 1)) +
                                 coll["sent_bytes"] / link["bandwidth_bytes_per_second"])
    memory = report["memory_per_rank"]
    gemm = cal["gemm_bf16_flops_per_rank" if report["matmul_precision"] == "bf16"
               else "gemm_flops_per_rank"]
    compute = (memory["contraction_flops"] / gemm +
               (memory["step_flops"] - memory["contraction_flops"]) / cal["elementwise_per_rank"])
    for key, want in (("compute_seconds", compute), ("communication_seconds", comm),
                      ("predicted_seconds", compute + comm)):
        if abs(c[key] - want) > 1e-9 * max(1.0, abs(want)):
            print(f"{c['label']}: {key} {c[key]} != {want}")
            sys.exit(1)
    if c["memory_per_rank"] != report["memory_per_rank"]["total"]:
        print(f"{c['label']}: memory {c['memory_per_rank']} != the report's")
        sys.exit(1)
    checked += 1
print(f"{checked} predictions match")
