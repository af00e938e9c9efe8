#!/usr/bin/python3
"""W4's generation speed: new tokens per second, shardc's --generate beside PyTorch.

One sample, greedy, a prompt of PROMPT bytes continued to the end of the 128-byte
context. shardc: W4 compiled at batch 1 (--set batch_size=1) without rules, one process,
from a checkpoint of one synthetic step (speed does not depend on what the weights
are), twice: --generate with its decode step and key/value caches (one position per
token: O(n)) and with --recompute (the whole 128-position context for every new token).
PyTorch: the same model (bench/gpt/run.py's, in eval mode, one
thread, the anchors' environment) generating the same way, nanoGPT's sample.py style,
twice: with a key/value cache per block (each new token attends to the cached keys and
values: O(n) per token) and recomputing the prefix so far for every token (nanoGPT's
generate: O(n^2) per token). The times cover the new tokens only, not start-up.
Repetitions are interleaved; medians.

    bench/gpt/decode.py               # 3 repetitions (a minute or two)
    bench/gpt/decode.py --quick       # smoke test

Prints ONE JSON object on stdout; progress goes to stderr. Sets itself up as
bench/gpt/run.py does (python3-torch, tcmalloc and OpenBLAS installed when run as root;
build/bin/shardc by scripts/build.sh).
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run as gpt_bench  # noqa: E402  (bench/gpt/run.py: the model, the environment)

tb = gpt_bench.tb
REPO = gpt_bench.REPO
PROMPT = b"Q: What is the meaning of life?\nA:"
RESULT_TAG = "DECODE_RESULT "


def log(*a):
    print("[bench/gpt/decode]", *a, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------
# Worker side: PyTorch, one process.
# --------------------------------------------------------------------------------------

def logits_of(torch, model, tokens, start, cache):
    """The logits of `tokens` [1, t] at positions start.. start + t - 1. With `cache` (a
    list of [keys, values] per block, or Nones), the blocks' keys and values are appended
    to it and attention reads every cached position; without, `tokens` is the whole
    prefix (start 0)."""
    m = model
    x = m.table[tokens] + m.positions[start:start + tokens.shape[1]]
    for i, block in enumerate(m.blocks):
        h = block.ln1(x)
        b, t, e = h.shape
        split = lambda y: y.view(b, t, gpt_bench.HEADS, e // gpt_bench.HEADS).transpose(1, 2)
        q, k, v = split(block.q(h)), split(block.k(h)), split(block.v(h))
        if cache is not None:
            if cache[i] is not None:
                k = torch.cat([cache[i][0], k], dim=2)
                v = torch.cat([cache[i][1], v], dim=2)
            cache[i] = (k, v)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(e // gpt_bench.HEADS))
        query = torch.arange(start, start + t).view(t, 1)
        key = torch.arange(k.shape[2]).view(1, -1)
        mixed = scores.masked_fill(key > query, float("-inf")).softmax(-1) @ v
        x = x + block.o(mixed.transpose(1, 2).reshape(b, t, e))
        x = x + block.mlp(block.ln2(x))
    return m.head(m.ln_f(x))


def worker(args):
    import torch
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    model = gpt_bench.build_model(torch).eval()
    prompt = torch.tensor([list(PROMPT)], dtype=torch.int64)
    result = {}
    with torch.no_grad():
        for kind in ("kv_cache", "recompute"):
            tokens = prompt
            cache = [None] * len(model.blocks) if kind == "kv_cache" else None
            if cache is not None:  # the prefill: the prompt at once, its keys cached
                next_logits = logits_of(torch, model, tokens, 0, cache)[0, -1]
            start = time.perf_counter()
            while tokens.shape[1] < gpt_bench.CTX:
                if cache is None:
                    next_logits = logits_of(torch, model, tokens, 0, None)[0, -1]
                token = next_logits.argmax().view(1, 1)
                tokens = torch.cat([tokens, token], dim=1)
                if cache is not None and tokens.shape[1] < gpt_bench.CTX:
                    next_logits = logits_of(torch, model, token, tokens.shape[1] - 1, cache)[0, -1]
            seconds = time.perf_counter() - start
            result[kind] = (gpt_bench.CTX - len(PROMPT)) / seconds
    print(RESULT_TAG + json.dumps(result), flush=True)


def run_torch(seed):
    cmd = [tb.SYSTEM_PYTHON, os.path.abspath(__file__), "--worker", "--seed", str(seed)]
    r = subprocess.run(cmd, env=tb.best_env(1), capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        raise RuntimeError(f"the PyTorch worker failed (exit {r.returncode}):\n{r.stderr[-4000:]}")
    for line in r.stdout.splitlines():
        if line.startswith(RESULT_TAG):
            return json.loads(line[len(RESULT_TAG):])
    raise RuntimeError(f"the PyTorch worker printed no result:\n{r.stdout[-2000:]}")


# --------------------------------------------------------------------------------------
# shardc side.
# --------------------------------------------------------------------------------------

def prepare_shardc(shardc, folder):
    """W4 at batch 1 and a checkpoint of it; returns the executable's path."""
    exe = os.path.join(folder, "gpt1")
    cmd = [shardc, gpt_bench.MODEL, "--reference", "--set", "batch_size=1", "-o", exe]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed (exit {r.returncode}):\n{r.stderr[-4000:]}")
    r = subprocess.run([exe, "--synthetic", "--steps", "1", "--checkpoint-dir",
                        os.path.join(folder, "ck")], capture_output=True, text=True,
                       env=tb.shardc_env())
    if r.returncode != 0:
        raise RuntimeError(f"training one step failed (exit {r.returncode}):\n{r.stderr[-4000:]}")
    return exe


def run_shardc(exe, folder, recompute):
    summary = os.path.join(folder, "generate.json")
    cmd = [exe, "--generate", "--resume", os.path.join(folder, "ck"), "--prompt-file",
           os.path.join(folder, "prompt.txt"), "--temperature", "0", "--output", summary]
    if recompute:
        cmd.append("--recompute")
    r = subprocess.run(cmd, capture_output=True, env=tb.shardc_env(), timeout=1800)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed (exit {r.returncode}):\n"
                           f"{r.stderr.decode(errors='replace')[-4000:]}")
    with open(summary) as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke test: 1 repetition")
    ap.add_argument("--reps", type=int, default=None, help="repetitions (default 3)")
    ap.add_argument("--shardc", default=os.path.join(REPO, "build", "bin", "shardc"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args)

    tb.install_prereqs(exclude=("dataset-fashion-mnist",))
    missing = [m for m in tb.check_pytorch_prereqs() if m[0] != "dataset-fashion-mnist"]
    if missing:
        log("missing: " + ", ".join(f"{pkg} ({what})" for pkg, what in missing) +
            "; run as root to install them")
        return 2
    tb.build_shardc(args.shardc)
    reps = args.reps or (1 if args.quick else 3)
    shardc_cache, shardc_recompute, torch_cache, torch_recompute = [], [], [], []
    with tempfile.TemporaryDirectory() as folder:
        with open(os.path.join(folder, "prompt.txt"), "wb") as f:
            f.write(PROMPT)
        exe = prepare_shardc(args.shardc, folder)
        for rep in range(reps):
            for rates, recompute in ((shardc_cache, False), (shardc_recompute, True)):
                summary = run_shardc(exe, folder, recompute)
                if summary["decode"] != ("recompute" if recompute else "kv_cache"):
                    raise RuntimeError(f"--generate decoded by {summary['decode']}")
                rates.append(summary["tokens_per_second"])
            torch_side = run_torch(args.seed)
            torch_cache.append(torch_side["kv_cache"])
            torch_recompute.append(torch_side["recompute"])
            log(f"rep {rep + 1}/{reps}: shardc {shardc_cache[-1]:.1f} tokens/s with its cache, "
                f"{shardc_recompute[-1]:.1f} without; PyTorch {torch_cache[-1]:.1f} with its "
                f"cache, {torch_recompute[-1]:.1f} without")
    cache, recompute = tb.median(shardc_cache), tb.median(shardc_recompute)
    result = {
        "bench": "gpt-decode",
        "cpu": tb.cpu_model()["model"],
        "model": "W4 (examples/gpt/gpt.shard), batch 1, greedy",
        "prompt_tokens": len(PROMPT),
        "new_tokens": gpt_bench.CTX - len(PROMPT),
        "repetitions": reps,
        "tokens_per_second": {
            "shardc_kv_cache": cache,
            "shardc_recompute": recompute,
            "pytorch_kv_cache": tb.median(torch_cache),
            "pytorch_recompute": tb.median(torch_recompute),
        },
        "shardc_kv_cache_over_pytorch_kv_cache": cache / tb.median(torch_cache),
        "shardc_recompute_over_pytorch_recompute": recompute / tb.median(torch_recompute),
        "shardc_kv_cache_over_shardc_recompute": cache / recompute,
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
