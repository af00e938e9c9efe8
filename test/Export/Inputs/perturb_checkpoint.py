"""Adds N(0, STDDEV) noise to every parameter of a shardrt checkpoint, its checksums
redone, the rest of the file (optimizer state, metadata) as it was.

perturb_checkpoint.py SRC DST --stddev S [--seed N]

A GPT trained a few steps from its initialisation (weights of stddev 0.02) attends
almost uniformly and predicts almost uniformly: a test that compares an exported model
with shardc's on such weights hardly sees the attention. Weights of stddev 0.3 make
every part count. Standard library and numpy only.
"""
import argparse
import json
import struct
import zlib

import numpy as np

parser = argparse.ArgumentParser()
parser.add_argument("src")
parser.add_argument("dst")
parser.add_argument("--stddev", type=float, required=True)
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()

with open(args.src, "rb") as f:
    (length,) = struct.unpack("<Q", f.read(8))
    header = json.loads(f.read(length))
    data = bytearray(f.read())
metadata = header["__metadata__"]
checksums = json.loads(metadata["crc32"])
rng = np.random.default_rng(args.seed)
for name, entry in sorted(header.items()):
    if not name.startswith("params/"):
        continue
    assert entry["dtype"] == "F32", name
    begin, end = entry["data_offsets"]
    values = np.frombuffer(bytes(data[begin:end]), dtype="<f4")
    values = (values + rng.normal(0, args.stddev, values.shape)).astype("<f4")
    data[begin:end] = values.tobytes()
    checksums[name] = "%08x" % zlib.crc32(values.tobytes())
metadata["crc32"] = json.dumps(checksums, sort_keys=True, separators=(",", ":"))
encoded = json.dumps(header, separators=(",", ":")).encode()
with open(args.dst, "wb") as f:
    f.write(struct.pack("<Q", len(encoded)) + encoded + bytes(data))
