"""Token windows of a file's bytes for a byte-level GPT, as .npy files PyTorch reads too.

byte_windows.py FILE OUTDIR --context T --train N --eval M

Consecutive windows of T bytes, each with its targets one byte later: the first N in
OUTDIR/train-{tokens,targets}.npy, the next M in OUTDIR/eval-{tokens,targets}.npy (i32).
"""
import argparse
import os

import numpy as np

parser = argparse.ArgumentParser()
parser.add_argument("file")
parser.add_argument("outdir")
parser.add_argument("--context", type=int, required=True)
parser.add_argument("--train", type=int, required=True)
parser.add_argument("--eval", type=int, required=True)
args = parser.parse_args()

windows = args.train + args.eval
data = np.frombuffer(open(args.file, "rb").read(), dtype=np.uint8).astype(np.int32)
if len(data) < windows * args.context + 1:
    raise SystemExit(f"byte_windows: {args.file} has {len(data)} bytes, "
                     f"{windows} windows of {args.context} need {windows * args.context + 1}")
starts = np.arange(windows) * args.context
tokens = np.stack([data[s:s + args.context] for s in starts])
targets = np.stack([data[s + 1:s + 1 + args.context] for s in starts])
for split, rows in (("train", slice(0, args.train)), ("eval", slice(args.train, windows))):
    np.save(os.path.join(args.outdir, f"{split}-tokens.npy"), tokens[rows])
    np.save(os.path.join(args.outdir, f"{split}-targets.npy"), targets[rows])
