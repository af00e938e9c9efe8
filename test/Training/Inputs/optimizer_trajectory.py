#!/usr/bin/env python3
"""Checks the checkpoints ckpt-1 .. ckpt-N of Inputs/constant-gradient.shard (gradient
1 for each of the 4 elements of body.W, from 0) against the optimizer's closed form:

  optimizer_trajectory.py DIR N sgd LR WARMUP DECAY_STEPS END_LR CLIP
      optax.chain(clip_by_global_norm(CLIP), sgd(warmup_cosine_decay_schedule(0, LR,
      WARMUP, DECAY_STEPS, END_LR))): the norm of the gradient is 2, so each step moves
      by lr(count) * min(1, CLIP / 2), count = step - 1
  optimizer_trajectory.py DIR N adamw LR WEIGHT_DECAY EPS
      optax.adamw: with a constant gradient mu and nu corrected are 1, so
      p <- p - LR (1 / (1 + EPS) + WEIGHT_DECAY p)

ckpt-T holds W after update T. Prints the worst relative difference; exits 1 above 1e-6
for sgd, 1e-4 for adamw (its bias corrections in f32: 1 - 0.999 is 1.3e-5 off in f32,
and nu / c2 divides two such numbers).
"""
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "Runtime", "Inputs"))
from read_safetensors import read_checkpoint  # noqa: E402


def schedule(count, peak, warmup, decay_steps, end):
    if count < warmup:
        return peak * count / warmup
    if decay_steps <= warmup:
        return peak
    t = min(count - warmup, decay_steps - warmup)
    return end + (peak - end) * 0.5 * (1 + math.cos(math.pi * t / (decay_steps - warmup)))


def main():
    folder, steps, kind = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    numbers = [float(a) for a in sys.argv[4:]]
    p, worst = 0.0, 0.0
    for step in range(1, steps + 1):
        if kind == "sgd":
            lr, warmup, decay_steps, end, clip = numbers
            p -= schedule(step - 1, lr, warmup, decay_steps, end) * min(1.0, clip / 2.0)
        else:
            lr, weight_decay, eps = numbers
            p -= lr * (1 / (1 + eps) + weight_decay * p)
        _, tensors = read_checkpoint(os.path.join(folder, f"ckpt-{step}.safetensors"), sys.maxsize)
        for value in tensors["params/body.W"]["values"]:
            worst = max(worst, abs(value - p) / max(abs(p), 1e-3))
    print(f"optimizer_trajectory: {kind}: {steps} steps, worst relative difference {worst:.2e}")
    sys.exit(1 if worst > (1e-6 if kind == "sgd" else 1e-4) else 0)


if __name__ == "__main__":
    main()
