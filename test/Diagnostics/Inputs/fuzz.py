"""Feeds shardc random inputs: bytes, printable text, and soups of the
language's own tokens (which get deep into the parser). Every run must end
with exit 0, or exit 1 with an error message, within the time limit: never a
crash, an assertion or a hang.

usage: fuzz.py SHARDC WORKDIR [COUNT]"""
import os
import random
import subprocess
import sys

shardc, workdir = sys.argv[1], sys.argv[2]
count = int(sys.argv[3]) if len(sys.argv) > 3 else 120
os.makedirs(workdir, exist_ok=True)

MODEL_TOKENS = ("model block param forward let return input loss metric optimizer "
                "import init f32 i32 bool int float axis string [ ] ( ) { } , : = -> @ "
                "+ - * / == < > x y batch embed 1 0 2.5 1e-3 \"s\" true relu sum mean "
                "scan conv2d one_hot flatten Dense DotReluDot nn . // \n /* */").split(" ")
RULES_TOKENS = "mesh rules override none ( ) { } [ ] , : = -> data model batch 2 0 \"a.*\" \n".split(" ")
rng = random.Random(20261122)


HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
SEEDS = [open(os.path.join(ROOT, p)).read().split(" ") for p in
         ("examples/mlp/mlp.shard", "examples/cnn/cnn.shard", "stdlib/nn.shard",
          "test/Sema/conv-pool.shard", "test/Sema/instances.shard")]


def mutate(words, tokens):
    """A real model file with a few words deleted, duplicated or replaced."""
    words = list(words)
    for _ in range(rng.randrange(1, 6)):
        at = rng.randrange(len(words))
        op = rng.randrange(3)
        if op == 0:
            del words[at]
        elif op == 1:
            words.insert(at, words[rng.randrange(len(words))])
        else:
            words[at] = rng.choice(tokens)
    return " ".join(words)


def sample(i, tokens):
    kind = i % 5
    if kind == 4 and tokens is MODEL_TOKENS:
        return mutate(rng.choice(SEEDS), tokens).encode()
    if kind == 0:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 600)))
    if kind == 1:
        return "".join(chr(rng.randrange(32, 127)) for _ in range(rng.randrange(1, 600))).encode()
    text = " ".join(rng.choice(tokens) for _ in range(rng.randrange(1, 400)))
    return text.encode()


failures = []
rejected = 0
for i in range(count):
    model = os.path.join(workdir, f"f{i}.shard")
    rules = os.path.join(workdir, f"f{i}.rules")
    with open(model, "wb") as f:
        f.write(sample(i, MODEL_TOKENS))
    with open(rules, "wb") as f:
        f.write(sample(i + 2, RULES_TOKENS))
    good_rules = os.path.join(ROOT, "examples", "mlp", "tp.rules")
    for args in ([model, "--rules", rules], [model, "--rules", good_rules], [model, "--emit=ast"]):
        try:
            run = subprocess.run([shardc] + args, capture_output=True, timeout=20)
        except subprocess.TimeoutExpired:
            failures.append(f"{args}: hang (over 20 s)")
            continue
        if run.returncode not in (0, 1):
            failures.append(f"{args}: exit {run.returncode}")
        elif run.returncode == 1:
            rejected += 1
            if b"error:" not in run.stderr:
                failures.append(f"{args}: exit 1 without an error message")

print(f"{count * 3} runs, {rejected} rejected with errors, {len(failures)} failures")
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
