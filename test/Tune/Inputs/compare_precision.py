"""compare_precision.py F32.json BF16.json: two `shardc tune --json` runs of one model
and calibration, the second with --precision matmul=bf16 --precision gradients=bf16.
Checks, candidate by candidate, that the second prices the same contraction work at the
calibration's bf16 rate, that data parallelism sends half the bytes, and that every
candidate's rules file carries both precision lines. Exits 1 at the first that does not."""
import json
import sys

f32, bf16 = (json.load(open(path)) for path in sys.argv[1:3])
cal = bf16["calibration"]
lines = ["precision matmul : bf16", "precision gradients : bf16"]


def report(candidate):
    return json.load(open(candidate["rules_file"][:-len(".rules")] + ".report.out"))


def fail(message):
    print(message)
    sys.exit(1)


plain = {c["label"]: c for c in f32["candidates"] if "predicted_seconds" in c}
sent = {}
for c in bf16["candidates"]:
    if "predicted_seconds" not in c:
        continue
    a, b = report(plain[c["label"]]), report(c)
    contraction = b["memory_per_rank"]["contraction_flops"]
    if contraction != a["memory_per_rank"]["contraction_flops"]:
        fail(f"{c['label']}: the contraction work differs")
    saved = contraction / cal["gemm_flops_per_rank"] - contraction / cal["gemm_bf16_flops_per_rank"]
    if abs(plain[c["label"]]["compute_seconds"] - c["compute_seconds"] - saved) > 1e-9:
        fail(f"{c['label']}: compute {c['compute_seconds']} is not f32's less {saved}")
    text = open(c["rules_file"]).read().splitlines()
    if text[-2:] != lines:
        fail(f"{c['label']}: rules file ends {text[-2:]}")
    sent[c["label"]] = b["sent_bytes_per_rank_per_step"] / a["sent_bytes_per_rank_per_step"]
print("every candidate: compute 0.5x in contractions, both precision lines")
print(f"dp 8x1: sent per rank {sent['dp 8x1']:.1f}x")
print(f"precisions: {bf16['precisions']}")
