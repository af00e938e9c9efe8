#!/usr/bin/python3
"""W4 (the byte-level GPT of examples/gpt) in shardc and in PyTorch 1.13, side by side.

Speed (default): tokens per second of a training step at global batch 32 x 128 bytes --
shardc's executable for examples/gpt/gpt.shard under bench/train/data2.rules on 2 ranks,
against PyTorch in its best configuration on the same 2 cores (DDP over gloo, 2 processes
x 1 thread, and 1 process x 2 threads; the environment of shared/anchors/README.md); and
the same in bfloat16: shardc's executable with --matmul-precision bf16 (every matrix
product in bf16 with f32 accumulation, oneDNN) against PyTorch under bf16 autocast
(torch.autocast("cpu", torch.bfloat16) around the forward pass and the loss, both
configurations); and shardc's f32 step again from the same program built for
x86-64-v3 (AVX2, what a mixed cluster's oldest nodes have; --target-cpu) beside the
native build's. Each side runs a short and a long run; the marginal time per step,
(long - short) / (steps between), leaves out start-up. Repetitions are interleaved;
medians.

--size gpt2-small measures the same at GPT-2 small's shape instead (examples/gpt2/
gpt2-small.shard: 12 blocks of 12 heads of 64, embed 768, MLP 3072, context 256, global
batch 16; 85 M parameters), with fewer steps per run (a step takes seconds).

--size w8 measures W8, the Mixture-of-Experts GPT (examples/moe/gpt_moe.shard: W4's 4
blocks in pairs, a dense one then one whose MLP is 8 experts of 512, top 2, 40 slots per
expert and sequence), in f32: shardc on 2 ranks (data2.rules: examples/moe/dp.rules's
rule, batch -> data) and on dp.rules's own 8 ranks, against PyTorch running
stdlib/moe.shard's layer written plainly with torch.einsum (dense 0/1 dispatch and
combine masks, GShard's slot order, the same capacity and losses). A routing check of
that layer (against a loop, at a tiny size and at W8's) runs once first, untimed.

Quality (--train): both sides train the 2000 steps of examples/gpt/run.json and report
the validation loss in bits per byte; shardc also with --matmul-precision bf16. PyTorch runs the same model (sizes, pre-norm, no
biases in the projections, gelu's tanh form, dropout 0.1 on both branches, initial
distributions), the same recipe (AdamW lr 1e-3, b2 0.99, weight decay 0.1 on every
parameter, linear warmup over 100 updates from 0 then cosine to 1e-4 at update 2000,
global-norm clipping at 1.0) and the same data rule (windows of 128 bytes one window apart,
the first 90 % train, shuffled every epoch; its own random numbers).

    bench/gpt/run.py                  # speed, 3 repetitions (several minutes)
    bench/gpt/run.py --train          # quality: both trainings (about an hour each here)
    bench/gpt/run.py --quick          # smoke test
    bench/gpt/run.py --size gpt2-small --reps 3   # GPT-2 small's shape (about 15 minutes)
    bench/gpt/run.py --size w8 --reps 3           # W8, the MoE GPT (about 15 minutes)

Prints ONE JSON object on stdout; progress goes to stderr. Sets itself up: Debian's
python3-torch, libtcmalloc-minimal4 and libopenblas0-openmp (installed when run as root,
else named, exit 2), the corpus (examples/gpt/make_corpus.py) and build/bin/shardc
(scripts/build.sh).
"""

import argparse
import importlib.util
import json
import math
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(REPO, "build", "fortunes.txt")
RUN_CONFIG = os.path.join(REPO, "examples", "gpt", "run.json")
RULES = os.path.join(REPO, "bench", "train", "data2.rules")

# Each size: its model file, its sizes and recipe (as the model file says), and the
# steps of the short and the long run whose difference is timed; DEFAULTS fills in what
# a size leaves out (no experts: every block dense).
DEFAULTS = dict(RUN_CONFIG=RUN_CONFIG, EXPERTS=0, TOP=0, EXPERT_HIDDEN=0, CAPACITY=0,
                MOE_RULES=None, MOE_RANKS=0)
SIZES = {
    "w4": dict(MODEL=os.path.join(REPO, "examples", "gpt", "gpt.shard"),
               VOCAB=256, CTX=128, EMBED=256, HEADS=8, LAYERS=4, MLP=1024, BATCH=32,
               LR=1e-3, B2=0.99, END_LR=1e-4, SPEED_STEPS=(3, 23), QUICK_STEPS=(2, 6)),
    "gpt2-small": dict(MODEL=os.path.join(REPO, "examples", "gpt2", "gpt2-small.shard"),
                       VOCAB=256, CTX=256, EMBED=768, HEADS=12, LAYERS=12, MLP=3072, BATCH=16,
                       LR=6e-4, B2=0.95, END_LR=6e-5, SPEED_STEPS=(1, 4), QUICK_STEPS=(1, 2)),
    # W8: W4 with blocks in pairs, a dense one then one whose MLP is a mixture of 8
    # experts of 512 (top 2, 40 slots per expert and sequence); LAYERS counts blocks.
    # shardc runs examples/moe/dp.rules's rule (batch -> data) on 2 ranks as data2.rules
    # says it, and dp.rules itself on its 8 ranks.
    "w8": dict(MODEL=os.path.join(REPO, "examples", "moe", "gpt_moe.shard"),
               RUN_CONFIG=os.path.join(REPO, "examples", "moe", "run.json"),
               VOCAB=256, CTX=128, EMBED=256, HEADS=8, LAYERS=4, MLP=1024, BATCH=32,
               EXPERTS=8, TOP=2, EXPERT_HIDDEN=512, CAPACITY=40,
               MOE_RULES=os.path.join(REPO, "examples", "moe", "dp.rules"), MOE_RANKS=8,
               LR=1e-3, B2=0.99, END_LR=1e-4, SPEED_STEPS=(2, 10), QUICK_STEPS=(1, 3)),
}
BALANCE_WEIGHT, Z_WEIGHT = 0.01, 0.001  # stdlib/moe.shard's defaults
DROPOUT, WARMUP, DECAY_STEPS, WEIGHT_DECAY, CLIP = 0.1, 100, 2000, 0.1, 1.0
TRAIN_STEPS = 2000


def use_size(name):
    """Sets this module's MODEL, VOCAB, ... to those of SIZES[name]."""
    globals().update(DEFAULTS, **SIZES[name])


use_size("w4")

# The side-by-side machinery of bench/train/run.py (environment, launching, parsing).
_spec = importlib.util.spec_from_file_location("train_bench", os.path.join(REPO, "bench", "train", "run.py"))
tb = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tb)


def log(*a):
    print("[bench/gpt]", *a, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------
# Worker side: PyTorch, started by this script under the best configuration.
# --------------------------------------------------------------------------------------

def learning_rate(count):
    """optax.warmup_cosine_decay_schedule(0, LR, WARMUP, DECAY_STEPS, END_LR) at update `count`."""
    if count < WARMUP:
        return LR * count / WARMUP
    progress = min(count - WARMUP, DECAY_STEPS - WARMUP) / (DECAY_STEPS - WARMUP)
    return END_LR + (LR - END_LR) * 0.5 * (1 + math.cos(math.pi * progress))


def moe_feed_forward(torch):
    """stdlib/moe.shard's MoEFeedForward in PyTorch, GShard's dense einsum form: a
    router, top-k experts per token (best first, ties to the lower index), slots in
    GShard's order (a sequence's first choices before its second ones, each by
    position), `capacity` slots per expert and sequence (a choice past them dropped),
    0/1 dispatch and gate-weighted combine masks, and a gelu (tanh) MLP per expert. Its
    forward leaves the block's losses (Switch's load balance, the router z-loss) in
    `aux` and the fraction of choices dropped in `dropped`."""
    import torch.nn as nn
    import torch.nn.functional as F

    class MoEFeedForward(nn.Module):
        def __init__(self, embed, experts, top, hidden, capacity):
            super().__init__()
            self.experts, self.top, self.capacity = experts, top, capacity
            self.router = nn.Parameter(torch.randn(embed, experts) * 0.02)
            self.w1 = nn.Parameter(torch.randn(experts, embed, hidden) * 0.02)
            self.w2 = nn.Parameter(torch.randn(experts, hidden, embed) * 0.02)

        def route(self, x):
            """logits, probs [b, s, e]; chosen [b, s, k, e] (0/1); dispatch [b, s, k, e, c]
            (0/1); combine [b, s, e, c] (gates at the kept slots)."""
            logits = x @ self.router
            probs = logits.softmax(-1)
            # A stable descending sort: of equal probabilities the lower expert first.
            best = probs.detach().sort(dim=-1, descending=True, stable=True).indices[..., :self.top]
            chosen = F.one_hot(best, self.experts).to(x.dtype)
            per_choice = chosen.sum(1)                               # [b, k, e]
            before = per_choice.cumsum(1) - per_choice               # exclusive, over k
            slot = chosen.cumsum(1) - chosen + before[:, None]       # exclusive, over s
            # one_hot(slot, capacity): a slot past the buffer matches nothing (dropped).
            slots = torch.arange(self.capacity, dtype=x.dtype)
            dispatch = chosen[..., None] * (slot[..., None] == slots).to(x.dtype)
            gates = (chosen * probs[:, :, None, :]).sum(-1)          # [b, s, k]
            combine = torch.einsum("bskec,bsk->bsec", dispatch, gates)
            return logits, probs, chosen, dispatch, combine

        def forward(self, x):
            logits, probs, chosen, dispatch, combine = self.route(x)
            gathered = torch.einsum("bsec,bsm->becm", dispatch.sum(2), x)
            inbox = gathered.transpose(0, 1)                         # [e, b, c, m]
            h = F.gelu(torch.einsum("ebcm,emh->ebch", inbox, self.w1), approximate="tanh")
            outbox = torch.einsum("ebch,ehm->ebcm", h, self.w2)
            returned = outbox.transpose(0, 1)                        # [b, e, c, m]
            share = chosen.sum(2).mean((0, 1)) / self.top
            balance = (share * probs.mean((0, 1))).sum() * (BALANCE_WEIGHT * self.experts)
            router_z = (logits.logsumexp(-1) ** 2).mean() * Z_WEIGHT
            self.aux = balance + router_z
            self.dropped = 1.0 - dispatch.detach().sum((2, 3, 4)).mean().item() / self.top
            return torch.einsum("bsec,becm->bsm", combine, returned)

    return MoEFeedForward


def build_model(torch):
    import torch.nn as nn
    import torch.nn.functional as F
    MoEFeedForward = moe_feed_forward(torch)

    class Block(nn.Module):
        """A pre-norm block; with `moe`, stdlib/moe.shard's MoETransformerBlock (the MLP
        a mixture of experts)."""

        def __init__(self, moe=False):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(EMBED), nn.LayerNorm(EMBED)
            self.q, self.k, self.v, self.o = (nn.Linear(EMBED, EMBED, bias=False) for _ in range(4))
            if moe:
                self.moe = MoEFeedForward(EMBED, EXPERTS, TOP, EXPERT_HIDDEN, CAPACITY)
            else:
                self.fc1 = nn.Linear(EMBED, MLP, bias=False)
                self.fc2 = nn.Linear(MLP, EMBED, bias=False)
            self.drop = nn.Dropout(DROPOUT)

        def mlp(self, h):
            if hasattr(self, "moe"):
                return self.moe(h)
            return self.fc2(F.gelu(self.fc1(h), approximate="tanh"))

        def attend(self, h):
            b, t, e = h.shape
            split = lambda y: y.view(b, t, HEADS, e // HEADS).transpose(1, 2)
            q, k, v = split(self.q(h)), split(self.k(h)), split(self.v(h))
            scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(e // HEADS))
            mask = torch.ones(t, t, dtype=torch.bool).triu(1)
            mixed = scores.masked_fill(mask, float("-inf")).softmax(-1) @ v
            return self.o(mixed.transpose(1, 2).reshape(b, t, e))

        def forward(self, x):
            x = x + self.drop(self.attend(self.ln1(x)))
            return x + self.drop(self.mlp(self.ln2(x)))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.table = nn.Parameter(torch.randn(VOCAB, EMBED) * 0.02)
            self.positions = nn.Parameter(torch.randn(CTX, EMBED) * 0.01)
            # W8 (EXPERTS > 0): the blocks in pairs, a dense one then an MoE one.
            self.blocks = nn.Sequential(*(Block(moe=bool(EXPERTS and i % 2)) for i in range(LAYERS)))
            self.ln_f = nn.LayerNorm(EMBED)
            self.head = nn.Linear(EMBED, VOCAB, bias=False)
            for name, p in self.named_parameters():
                if name.endswith(("q.weight", "k.weight", "v.weight", "o.weight", "fc1.weight",
                                  "fc2.weight", "head.weight")):
                    nn.init.normal_(p, std=0.02)

        def forward(self, tokens):
            x = self.table[tokens] + self.positions
            logits = self.head(self.ln_f(self.blocks(x)))
            moe = [b.moe for b in self.blocks if hasattr(b, "moe")]
            if moe:  # the MoE blocks' losses, summed, and their mean dropped fraction
                self.aux = sum(m.aux for m in moe)
                self.dropped = sum(m.dropped for m in moe) / len(moe)
            return logits

    return GPT()


def windows(torch):
    """The corpus as run.json reads it: example i is bytes [i*CTX, i*CTX + CTX), its
    targets one byte later; the first 90 % of the examples train."""
    with open(CORPUS, "rb") as f:
        data = torch.frombuffer(bytearray(f.read()), dtype=torch.uint8).to(torch.int64)
    n = (data.numel() - 1) // CTX
    inputs = data[:n * CTX].view(n, CTX)
    targets = data[1:n * CTX + 1].view(n, CTX)
    split = round(0.9 * n)
    return (inputs[:split], targets[:split]), (inputs[split:], targets[split:])


def worker(args):
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(args.threads)
    rank, world = tb.worker_dist_setup(args)
    torch.manual_seed(args.seed)
    model = build_model(torch)
    if world > 1:
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=LR, betas=(0.9, B2), eps=1e-8,
                            weight_decay=WEIGHT_DECAY)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda count: learning_rate(count) / LR)
    (train_x, train_y), (val_x, val_y) = windows(torch)
    per_epoch = train_x.shape[0] // BATCH
    local = BATCH // world

    def batch(step):
        epoch, i = divmod(step, per_epoch)
        order = torch.randperm(train_x.shape[0], generator=torch.Generator().manual_seed(
            args.seed * 1000003 + epoch))
        rows = order[i * BATCH + rank * local:i * BATCH + (rank + 1) * local]
        return train_x[rows], train_y[rows]

    core = model.module if world > 1 else model
    dropped = []

    def step(s):
        x, y = batch(s)
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16):
            loss = F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))
            if EXPERTS:  # the MoE blocks' balance and router z-losses
                loss = loss + core.aux
                dropped.append(core.dropped)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        opt.step()
        sched.step()
        return loss.item()

    model.train()
    for s in range(args.warmup):
        step(s)
    if world > 1:
        torch.distributed.barrier()
    start = time.perf_counter()
    losses = []
    for s in range(args.warmup, args.warmup + args.steps):
        losses.append(step(s))
        if rank == 0 and (s + 1) % 100 == 0:
            log(f"PyTorch step {s + 1}: loss {losses[-1]:.4f}, "
                f"{(time.perf_counter() - start) / len(losses):.3f} s per step")
    if world > 1:
        torch.distributed.barrier()
    seconds = time.perf_counter() - start
    result = {"seconds": seconds, "steps": args.steps, "final_loss_rank0": losses[-1]}
    if EXPERTS:  # rank 0's MoE blocks: the fraction of choices dropped at the last step
        result["moe_dropped_fraction_rank0"] = dropped[-1]
    if args.evaluate:
        model.eval()
        total, count = 0.0, 0
        with torch.no_grad():
            for first in range(0, val_x.shape[0] - BATCH + 1, BATCH):
                logits = model(val_x[first:first + BATCH])
                total += F.cross_entropy(logits.reshape(-1, VOCAB),
                                         val_y[first:first + BATCH].reshape(-1)).item()
                count += 1
        result["validation_loss"] = total / count
        result["validation_bits_per_byte"] = total / count / math.log(2)
        result["validation_examples"] = count * BATCH
    result["torch_version"] = torch.__version__
    result["libraries"] = tb.mapped_libraries()
    if world > 1:
        torch.distributed.destroy_process_group()
    if rank == 0:
        print(tb.RESULT_TAG + json.dumps(result), flush=True)


def moe_check(args):
    """A correctness check of moe_feed_forward's routing (not timed): its dispatch mask
    against a loop that hands out slots one choice at a time in GShard's order, its output
    against each token's kept experts applied one by one, and at W8's sizes (with the
    router as initialised and skewed to overload an expert) no slot holding two tokens and
    no expert more than CAPACITY per sequence. Prints the dropped fractions."""
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    MoEFeedForward = moe_feed_forward(torch)
    result = {}

    def check(name, layer, x):
        with torch.no_grad():
            _, probs, chosen, dispatch, combine = layer.route(x)
            y = layer(x)
        b, s, k, e, c = dispatch.shape
        best = chosen.argmax(-1)                                 # [b, s, k]
        loop = torch.zeros_like(dispatch)
        expected = torch.zeros_like(y)
        for g in range(b):
            used = [0] * e
            for choice in range(k):                              # first choices first
                for t in range(s):                               # then by position
                    i = int(best[g, t, choice])
                    if used[i] < c:
                        loop[g, t, choice, i, used[i]] = 1
                        h = F.gelu(x[g, t] @ layer.w1[i], approximate="tanh") @ layer.w2[i]
                        expected[g, t] += probs[g, t, i] * h
                    used[i] += 1
        per_slot = dispatch.sum((1, 2))                          # [b, e, c]
        per_expert = per_slot.sum(-1)                            # [b, e]
        assert torch.equal(dispatch, loop), f"{name}: dispatch differs from the loop's"
        assert per_slot.max() <= 1, f"{name}: a slot holds two tokens"
        assert per_expert.max() <= layer.capacity, f"{name}: an expert over capacity"
        assert torch.allclose(y, expected, atol=1e-5), f"{name}: output differs from the loop's"
        chose = chosen.sum((1, 2))                               # [b, e]: choices per expert
        dropped = (chose - layer.capacity).clamp(min=0).sum() / (b * s * k)
        assert abs(layer.dropped - float(dropped)) < 1e-6, f"{name}: dropped fraction"
        result[name] = {"groups": b, "tokens_per_group": s, "experts": e, "top": k, "capacity": c,
                        "dropped_fraction": layer.dropped,
                        "max_tokens_per_expert_and_group": int(per_expert.max()),
                        "max_choices_per_expert_and_group": int(chose.max())}

    tiny = MoEFeedForward(8, 4, 2, 16, 5)   # 32 choices a group for 4 x 5 slots: drops
    check("tiny", tiny, torch.randn(3, 16, 8))
    full = MoEFeedForward(EMBED, EXPERTS, TOP, EXPERT_HIDDEN, CAPACITY)
    x = torch.nn.functional.layer_norm(torch.randn(4, CTX, EMBED), (EMBED,))
    check("w8_initial_router", full, x)
    with torch.no_grad():
        full.router[:, 0] += x.mean((0, 1)) * 4.0                # most tokens want expert 0
    check("w8_skewed_router", full, x)
    assert result["w8_skewed_router"]["max_choices_per_expert_and_group"] > CAPACITY
    print(tb.RESULT_TAG + json.dumps(result), flush=True)


def run_torch(world, threads, steps, warmup, seed, size, evaluate=False, bf16=False):
    extra = ["--size", size] + (["--evaluate"] if evaluate else []) + (["--bf16"] if bf16 else [])
    return tb.run_torch("gpt", world, threads, steps, seed, warmup=warmup, timeout=14400,
                        script=__file__, extra=extra)


# --------------------------------------------------------------------------------------
# Parent side.
# --------------------------------------------------------------------------------------

def marginal(short, full, short_steps, full_steps):
    return (full - short) / (full_steps - short_steps)


def speed_moe(args, reps, short, full, prog, prog_moe, shardc_args):
    """W8's speed in f32: shardc on 2 ranks (data2.rules) and on MOE_RANKS
    (MOE_RULES), PyTorch's two configurations; interleaved repetitions, medians."""
    torch_runs = (("pytorch/ddp_2x1", 2, 1), ("pytorch/threads_1x2", 1, 2))
    moe_key = f"shardc/{os.path.basename(MOE_RULES)}_{MOE_RANKS}_ranks"
    shardc_runs = (("shardc", prog, 2), (moe_key, prog_moe, MOE_RANKS))
    samples = {k: [] for k, _, _ in shardc_runs + torch_runs}
    dropped = {k: [] for k, _, _ in shardc_runs + torch_runs}
    metrics = os.path.join(os.path.dirname(prog), "metrics.jsonl")
    for rep in range(reps):
        log(f"rep {rep + 1}/{reps}")
        for key, program, ranks in shardc_runs:
            run = shardc_args + ["--no-eval", "--matmul-precision", "f32"]
            a = tb.run_shardc(program, ranks, run + ["--steps", str(short)], short)
            if os.path.exists(metrics):
                os.remove(metrics)
            b = tb.run_shardc(program, ranks, run + ["--steps", str(full), "--metrics", metrics], full)
            samples[key].append(marginal(a["train_seconds"], b["train_seconds"], short, full))
            # The MoE blocks' `dropped` metric at the last step (the mean over the blocks).
            with open(metrics) as f:
                last = [json.loads(line) for line in f if '"train"' in line][-1]
            values = [v for k, v in last.items() if k.endswith(".dropped")]
            dropped[key].append(sum(values) / len(values))
            log(f"  {key}: {samples[key][-1]:.3f} s per step")
        for key, world, threads in torch_runs:
            r = run_torch(world, threads, full - short, short, args.seed, args.size)
            samples[key].append(r["seconds"] / r["steps"])
            dropped[key].append(r["moe_dropped_fraction_rank0"])
            log(f"  {key}: {samples[key][-1]:.3f} s per step")
    med = {k: tb.median(v) for k, v in samples.items()}
    best = min((k for k, _, _ in torch_runs), key=lambda k: med[k])
    return {
        "steps_timed": full - short, "reps": reps,
        **{k: {"seconds_per_step": med[k], "tokens_per_second": BATCH * CTX / med[k],
               "samples": v} for k, v in samples.items()},
        # The fraction of expert choices dropped at the long run's last step (the mean
        # over the MoE blocks; PyTorch's rank 0's); medians over repetitions.
        "moe_dropped_fraction": {k: tb.median(v) for k, v in dropped.items()},
        "pytorch_best": best,
        "ratio_shardc_time_over_pytorch_best": med["shardc"] / med[best],
        f"ratio_{moe_key.replace('/', '_')}_time_over_pytorch_best": med[moe_key] / med[best],
        # Each repetition's shardc step over PyTorch's of the same repetition: on a
        # shared machine the two sides of one repetition saw much the same load.
        "ratio_shardc_time_over_pytorch_best_per_rep":
            [a / b for a, b in zip(samples["shardc"], samples[best])],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--train", action="store_true", help="quality: train both sides 2000 steps")
    ap.add_argument("--quick", action="store_true", help="smoke test: few steps, 1 repetition")
    ap.add_argument("--size", choices=sorted(SIZES), default="w4",
                    help="the model: W4 (examples/gpt), GPT-2 small's shape (examples/gpt2) or "
                         "W8, the MoE GPT (examples/moe)")
    ap.add_argument("--reps", type=int, default=None, help="repetitions (default 3; 1 with --quick or --train)")
    ap.add_argument("--shardc", default=os.path.join(REPO, "build", "bin", "shardc"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--worker", choices=["gpt", "moe-check"], help=argparse.SUPPRESS)
    ap.add_argument("--evaluate", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--bf16", action="store_true", help=argparse.SUPPRESS)
    for flag in ("--rank", "--world", "--port", "--threads", "--steps", "--warmup", "--batch"):
        ap.add_argument(flag, type=int, default=1 if flag in ("--world", "--threads") else 0,
                        help=argparse.SUPPRESS)
    args = ap.parse_args()
    use_size(args.size)
    if args.train and args.size != "w4":
        ap.error("--train trains W4 (examples/gpt/run.json's recipe); drop --size")
    if args.worker:
        (moe_check if args.worker == "moe-check" else worker)(args)
        return 0

    # Sets itself up as the README's commands do: Debian packages (as root), the
    # corpus, the compiler.
    tb.install_prereqs(exclude=("dataset-fashion-mnist",))
    tb.build_shardc(args.shardc)
    if not os.path.exists(CORPUS):
        subprocess.run([sys.executable, os.path.join(REPO, "examples", "gpt", "make_corpus.py")], check=True)
    missing = [(pkg, what) for pkg, what in tb.check_pytorch_prereqs() if pkg != "dataset-fashion-mnist"]
    if not os.access(args.shardc, os.X_OK):
        missing.append(("(build)", f"{args.shardc}: run scripts/build.sh or pass --shardc"))
    if missing:
        for pkg, what in missing:
            print(f"bench/gpt: missing {pkg}: {what} (apt-get install {pkg}, as root)", file=sys.stderr)
        return 2

    reps = args.reps or (1 if args.quick or args.train else 3)
    short, full = QUICK_STEPS if args.quick else SPEED_STEPS
    tmp = tempfile.mkdtemp(prefix="shardc-bench-gpt-")
    prog = os.path.join(tmp, "gpt")
    started = time.perf_counter()
    tb.compile_shardc(args.shardc, MODEL, RULES, prog)
    compile_seconds = time.perf_counter() - started
    prog_v3 = os.path.join(tmp, "gpt-x86-64-v3")
    prog_moe = os.path.join(tmp, "gpt-" + os.path.splitext(os.path.basename(MOE_RULES or ""))[0])
    if EXPERTS:
        tb.compile_shardc(args.shardc, MODEL, MOE_RULES, prog_moe)
    elif not args.train:
        tb.compile_shardc(args.shardc, MODEL, RULES, prog_v3, ["--target-cpu", "x86-64-v3"])
    shardc_args = ["--config", RUN_CONFIG, "--seed", str(args.seed)]

    out = {"benchmark": "bench/gpt", "model": os.path.relpath(MODEL, REPO),
           "shardc_rules": "bench/train/data2.rules (batch -> data, 2 ranks)",
           "tokens_per_step": BATCH * CTX, "compile_seconds": round(compile_seconds, 2),
           "machine": {"cpu": tb.cpu_model(), "cpus": os.cpu_count(),
                       "loadavg_before": os.getloadavg()}}
    if EXPERTS:
        out["shardc_rules_moe"] = f"{os.path.relpath(MOE_RULES, REPO)} ({MOE_RANKS} ranks)"
        out["pytorch_moe"] = ("stdlib/moe.shard's layer in torch.einsum: dense 0/1 dispatch "
                              f"and combine masks, top {TOP} of {EXPERTS} experts, {CAPACITY} "
                              "slots per expert and sequence, balance and router z-losses")
        log("PyTorch MoE routing check (tiny and W8 sizes, not timed)")
        out["pytorch_moe_check"] = tb.run_torch("moe-check", 1, 2, 0, args.seed, script=__file__,
                                                extra=["--size", args.size])
        out["speed"] = speed_moe(args, reps, short, full, prog, prog_moe, shardc_args)
    elif args.train:
        log(f"shardc: {TRAIN_STEPS} steps with evaluation")
        s = tb.run_shardc(prog, 2, shardc_args + ["--steps", str(TRAIN_STEPS)], TRAIN_STEPS, timeout=14400)
        log("shardc, --matmul-precision bf16: the same")
        s16 = tb.run_shardc(prog, 2, shardc_args + ["--steps", str(TRAIN_STEPS), "--matmul-precision", "bf16"],
                            TRAIN_STEPS, timeout=14400)
        log("PyTorch (1 process x 2 threads): the same")
        t = run_torch(1, 2, TRAIN_STEPS, 0, args.seed, args.size, evaluate=True)
        bpb = s["eval"]["bits_per_byte"]
        out["train"] = {
            "steps": TRAIN_STEPS,
            "shardc": {"validation_bits_per_byte": bpb, "validation_loss": s["eval"]["loss"],
                       "train_seconds": s["train_seconds"]},
            "shardc_bf16_matmul": {"validation_bits_per_byte": s16["eval"]["bits_per_byte"],
                                   "validation_loss": s16["eval"]["loss"],
                                   "train_seconds": s16["train_seconds"]},
            "pytorch": {k: t[k] for k in ("validation_bits_per_byte", "validation_loss", "seconds")},
            "bits_per_byte_relative_difference": bpb / t["validation_bits_per_byte"] - 1,
            "bf16_bits_per_byte_relative_to_f32": s16["eval"]["bits_per_byte"] / bpb - 1,
        }
    else:
        torch_runs = (("pytorch/ddp_2x1", 2, 1), ("pytorch/threads_1x2", 1, 2))
        samples = {k: [] for k in ("shardc", "shardc/bf16_matmul", "shardc/x86-64-v3")}
        bf16_products = None
        torch_bf16_error = None
        samples.update({k + suffix: [] for k, _, _ in torch_runs for suffix in ("", "/bf16_autocast")})
        for rep in range(reps):
            log(f"rep {rep + 1}/{reps}")
            for key, program, precision in (("shardc", prog, "f32"),
                                            ("shardc/bf16_matmul", prog, "bf16"),
                                            ("shardc/x86-64-v3", prog_v3, "f32")):
                run = shardc_args + ["--no-eval", "--matmul-precision", precision]
                a = tb.run_shardc(program, 2, run + ["--steps", str(short)], short)
                b = tb.run_shardc(program, 2, run + ["--steps", str(full)], full)
                samples[key].append(marginal(a["train_seconds"], b["train_seconds"], short, full))
                bf16_products = b.get("bf16_products") or bf16_products
            for key, world, threads in torch_runs:
                for suffix, bf16 in (("", False), ("/bf16_autocast", True)):
                    if bf16 and torch_bf16_error:
                        continue
                    try:
                        r = run_torch(world, threads, full - short, short, args.seed, args.size,
                                      bf16=bf16)
                    except RuntimeError as e:
                        if not bf16:
                            raise
                        # PyTorch's own oneDNN has no bf16 kernels for what this CPU (or
                        # ONEDNN_MAX_CPU_ISA) allows: its bf16 row is left out, shardc's not.
                        torch_bf16_error = str(e).strip().splitlines()[-1]
                        log(f"  PyTorch under bf16 autocast failed: {torch_bf16_error}")
                        continue
                    samples[key + suffix].append(r["seconds"] / r["steps"])
        samples = {k: v for k, v in samples.items() if v}
        med = {k: tb.median(v) for k, v in samples.items()}
        best = min((k for k, _, _ in torch_runs), key=lambda k: med[k])
        best16 = min((k + "/bf16_autocast" for k, _, _ in torch_runs if k + "/bf16_autocast" in med),
                     key=lambda k: med[k], default=None)
        out["speed"] = {
            "steps_timed": full - short, "reps": reps,
            **{k: {"seconds_per_step": med[k], "tokens_per_second": BATCH * CTX / med[k],
                   "samples": v} for k, v in samples.items()},
            "shardc_bf16_products": bf16_products,
            "pytorch_best": best,
            "pytorch_best_bf16": best16,
            "ratio_shardc_time_over_pytorch_best": med["shardc"] / med[best],
            "ratio_shardc_bf16_time_over_pytorch_best": med["shardc/bf16_matmul"] / med[best],
            "pytorch_bf16_error": torch_bf16_error,
            "ratio_shardc_bf16_time_over_pytorch_best_bf16":
                med["shardc/bf16_matmul"] / med[best16] if best16 else None,
            "ratio_shardc_x86_64_v3_time_over_native": med["shardc/x86-64-v3"] / med["shardc"],
        }
    out["machine"]["loadavg_after"] = os.getloadavg()
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
