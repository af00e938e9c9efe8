"""Prints what a --generate summary (--output FILE) drew, one line per sample:
"sample S: N tokens: t0 t1 ...", so that FileCheck and diff compare runs; with
--logits FILE.npy, also checks that every drawn token is the argmax of those
logits at the position before it (a greedy run) and prints how many it checked."""
import json
import struct
import sys


def read_npy(path):
    """A little-endian f32 .npy in C order: its shape and values (no numpy needed)."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x93NUMPY\x01\x00", "not a .npy 1.0 file"
    (length,) = struct.unpack("<H", data[8:10])
    header = eval(data[10:10 + length].decode("latin1"))  # a Python dict literal
    assert header["descr"] == "<f4" and not header["fortran_order"]
    shape = header["shape"]
    count = 1
    for d in shape:
        count *= d
    values = struct.unpack("<%df" % count, data[10 + length:10 + length + 4 * count])
    return shape, values


summary = json.load(open(sys.argv[1]))
prompt = summary["prompt_tokens"]
for s, sample in enumerate(summary["samples"]):
    print("sample %d: %d tokens: %s" % (s, len(sample["tokens"]),
                                        " ".join(map(str, sample["tokens"]))))
if len(sys.argv) > 3 and sys.argv[2] == "--logits":
    (samples, length, vocab), values = read_npy(sys.argv[3])
    checked = 0
    for s, sample in enumerate(summary["samples"]):
        for p in range(prompt, len(sample["tokens"])):
            row = values[(s * length + p - 1) * vocab:(s * length + p) * vocab]
            best = max(range(vocab), key=lambda v: (row[v], -v))
            if best != sample["tokens"][p]:
                sys.exit("sample %d position %d: drew %d, the argmax is %d" %
                         (s, p, sample["tokens"][p], best))
            checked += 1
    print("greedy: %d tokens are the argmax of the full forward pass" % checked)
