"""A nanoGPT-style GPT in PyTorch that loads what `shardc export` writes and runs it.

torch_gpt.py DIR --tokens T.npy|SUMMARY.json [--targets Y.npy --shardc-eval EVAL.json]
             [--logits REF.npy] [--write-logits OUT.npy] [--rtol 1e-5]

DIR holds model.safetensors and config.json in nanoGPT's names (nn.Linear weights
[out, in]) or Hugging Face GPT-2's (config.json's model_type "gpt2"; Conv1D weights
[in, out], transposed back here). The model is nanoGPT's model.py as W4 needs it: an
untied head, gelu's tanh approximation, attention scaled by 1/sqrt(head_dim), linear
biases (zeros in an export). It runs the token windows T.npy (int [B, T]), or the
samples of a --generate summary (its "samples"[i]["tokens"]), forward and:

- with --targets and --shardc-eval: each sequence's mean next-token cross-entropy, their
  mean over the batch, against the "loss" of the driver's --evaluate summary ("eval");
- with --logits: the logits [B, T, vocab] against REF.npy elementwise, the worst
  difference relative to the largest |logit| of the reference's row;

each printed with its relative difference, and the exit status 1 beyond --rtol.
The safetensors file is read with the standard library and numpy.
"""
import argparse
import json
import math
import os
import struct
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

# Hugging Face's Conv1D modules, whose weights are [in, out].
CONV1D = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")


def read_safetensors(path):
    dtypes = {"F32": np.float32, "I32": np.int32}
    with open(path, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(length))
        data = f.read()
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        tensors[name] = np.frombuffer(data[begin:end], dtype=dtypes[entry["dtype"]]).reshape(
            entry["shape"])
    return tensors


class Block(nn.Module):
    def __init__(self, embed, heads, hidden):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(embed, eps=1e-5)
        self.attn = nn.Module()
        self.attn.c_attn = nn.Linear(embed, 3 * embed)
        self.attn.c_proj = nn.Linear(embed, embed)
        self.ln_2 = nn.LayerNorm(embed, eps=1e-5)
        self.mlp = nn.Module()
        self.mlp.c_fc = nn.Linear(embed, hidden)
        self.mlp.c_proj = nn.Linear(hidden, embed)

    def attention(self, x):
        B, T, C = x.shape
        q, k, v = self.attn.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
        mixed = (F.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(B, T, C)
        return self.attn.c_proj(mixed)

    def forward(self, x):
        x = x + self.attention(self.ln_1(x))
        h = F.gelu(self.mlp.c_fc(self.ln_2(x)), approximate="tanh")
        return x + self.mlp.c_proj(h)


class GPT(nn.Module):
    def __init__(self, vocab, positions, embed, heads, layers, hidden):
        super().__init__()
        self.transformer = nn.Module()
        self.transformer.wte = nn.Embedding(vocab, embed)
        self.transformer.wpe = nn.Embedding(positions, embed)
        self.transformer.h = nn.ModuleList(Block(embed, heads, hidden) for _ in range(layers))
        self.transformer.ln_f = nn.LayerNorm(embed, eps=1e-5)
        self.lm_head = nn.Linear(embed, vocab, bias=False)

    def forward(self, ids):
        t = self.transformer
        x = t.wte(ids) + t.wpe(torch.arange(ids.shape[1]))
        for block in t.h:
            x = block(x)
        return self.lm_head(t.ln_f(x))


def load(folder):
    with open(os.path.join(folder, "config.json")) as f:
        config = json.load(f)
    tensors = read_safetensors(os.path.join(folder, "model.safetensors"))
    hf = config.get("model_type") == "gpt2"
    if hf:
        assert config["activation_function"] == "gelu_new", config["activation_function"]
        assert config["tie_word_embeddings"] is False
        sizes = (config["vocab_size"], config["n_positions"], config["n_embd"],
                 config["n_head"], config["n_layer"], config["n_inner"])
        tensors = {name: value.T if name.endswith(CONV1D) else value
                   for name, value in tensors.items()}
    else:
        assert config["bias"] is True
        sizes = (config["vocab_size"], config["block_size"], config["n_embd"],
                 config["n_head"], config["n_layer"], 4 * config["n_embd"])
    model = GPT(*sizes)
    # strict: every name the model has, and no other.
    model.load_state_dict({name: torch.from_numpy(np.array(value))
                           for name, value in tensors.items()}, strict=True)
    return model.eval(), ("hf" if hf else "nanogpt")


def verdict(what, difference, rtol):
    ok = difference <= rtol
    print(f"torch_gpt: {what}, relative difference {difference:.3g}: "
          f"{'within' if ok else 'BEYOND'} rtol {rtol:g}")
    return ok


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("folder")
    parser.add_argument("--tokens", required=True)
    parser.add_argument("--targets")
    parser.add_argument("--shardc-eval")
    parser.add_argument("--logits")
    parser.add_argument("--write-logits")
    parser.add_argument("--rtol", type=float, default=1e-5)
    args = parser.parse_args()

    model, kind = load(args.folder)
    if args.tokens.endswith(".json"):
        with open(args.tokens) as f:
            tokens = torch.tensor([sample["tokens"] for sample in json.load(f)["samples"]])
    else:
        tokens = torch.from_numpy(np.load(args.tokens).astype(np.int64))
    with torch.no_grad():
        logits = model(tokens)
    if args.write_logits:
        np.save(args.write_logits, logits.numpy())
    ok = True
    if args.targets:
        targets = torch.from_numpy(np.load(args.targets).astype(np.int64))
        nll = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                              reduction="none").view(targets.shape).mean(dim=1)
        loss = nll.mean().item()
        with open(args.shardc_eval) as f:
            shardc = json.load(f)["eval"]["loss"]
        ok &= verdict(f"{kind}: {len(nll)} sequences, mean cross-entropy {loss:.9g}, "
                      f"shardc's {shardc:.9g}", abs(loss - shardc) / abs(shardc), args.rtol)
    if args.logits:
        reference = np.load(args.logits)
        ours = logits.numpy()
        if reference.shape != ours.shape:
            print(f"torch_gpt: logits {list(ours.shape)}, the reference's {list(reference.shape)}")
            return 1
        scale = np.abs(reference).max(axis=-1, keepdims=True)
        worst = float((np.abs(ours - reference) / scale).max())
        ok &= verdict(f"{kind}: logits {list(ours.shape)}, worst absolute difference "
                      f"{float(np.abs(ours - reference).max()):.3g}", worst, args.rtol)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
