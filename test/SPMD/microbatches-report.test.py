"""Compares two --report=json plans of one model, without and with microbatches."""
import json
import sys

whole, micro = (json.load(open(path)) for path in sys.argv[1:3])


def gradients(plan):
    return [c for c in plan["collectives_per_step"] if c["gradient_of"] or c["bucket"]]


def scalars(plan):
    return sum(c["count"] for c in plan["collectives_per_step"]
               if c["shape"] == "[]" and not c["gradient_of"])


def grad_bytes(plan):
    return sum(c["bytes"] * c["count"] for c in gradients(plan))


print("gradient collectives per step:",
      " and ".join(str(sum(c["count"] for c in gradients(p))) for p in (whole, micro)))
print("gradient bytes per step:",
      "equal" if grad_bytes(whole) == grad_bytes(micro) else f"{grad_bytes(whole)} vs {grad_bytes(micro)}")
print("scalar sums per step:", scalars(whole), "and", scalars(micro))
memory = whole["memory_per_rank"], micro["memory_per_rank"]
print("smaller with microbatches:",
      ", ".join(f"{key} {memory[1][key] < memory[0][key]}" for key in ("train_arena", "activations_at_peak")))
