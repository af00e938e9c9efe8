#!/usr/bin/env python3
"""make_idx.py DIR

Writes IDX files (LeCun's MNIST format: magic 0 0 TYPE NDIM, big-endian uint32 sizes,
big-endian elements) into DIR, plain and gzip-compressed, and NAME.values for each good
one (values.py, over the elements as the reader produces them: little-endian):

  u8.idx u8.idx.gz         uint8 [5, 3, 4]       labels.idx.gz   uint8 [7]
  i32.idx i32.idx.gz       int32 [4, 2]          f32.idx f32.idx.gz   float32 [3, 2, 2]
  f64.idx f64.idx.gz       float64 [5]

and broken ones, each wrong one way (uint8 [5, 3, 4] unless said):

  magic.idx       not an IDX file              int16.idx     element type 0x0b
  int8.idx        element type 0x09            unknown.idx   element type 0x07
  scalar.idx      no dimensions                header.idx    ends inside the sizes
  short.idx       4 bytes short                extra.idx     3 bytes more
  short.idx.gz    gzip whole, 4 IDX bytes short extra.idx.gz  gzip whole, 3 IDX bytes more
  cut.idx.gz      the gzip stream cut short    crc.idx.gz    the gzip checksum wrong
  cut-big.idx.gz crc-big.idx.gz                the same, of uint8 [64, 64, 64]
  huge.idx.gz     sizes (60000, 60000, 60000) in a few bytes of gzip
  overflow.idx    sizes (2**32 - 1) x 3 of float64
"""
import gzip
import os
import struct
import sys

import numpy as np

from values import write_values

CODES = {"u1": 0x08, "i1": 0x09, "i2": 0x0B, "i4": 0x0C, "f4": 0x0D, "f8": 0x0E}


def idx_bytes(array, code=None):
    code = CODES[array.dtype.str[1:]] if code is None else code
    header = bytes([0, 0, code, array.ndim]) + b"".join(struct.pack(">I", d) for d in array.shape)
    return header + array.astype(array.dtype.newbyteorder(">")).tobytes()


def write(path, data, compress):
    with open(path, "wb") as out:
        # mtime=0: the same bytes on every run.
        out.write(gzip.compress(data, mtime=0) if compress else data)


def main():
    directory = sys.argv[1]
    os.makedirs(directory, exist_ok=True)
    path = lambda name: os.path.join(directory, name)
    arrays = {
        "u8": (np.arange(60) * 37 % 256).astype("u1").reshape(5, 3, 4),
        "i32": np.array([[1, -1], [2**31 - 1, -2**31], [256, 65536], [-300, 7]], dtype="i4"),
        "f32": (np.arange(12, dtype="f4") / 8 - 0.75).reshape(3, 2, 2),
        "f64": np.array([1e-310, -2.5, 1e200, 0.1, 3.0], dtype="f8"),
    }
    for name, array in arrays.items():
        write(path(name + ".idx"), idx_bytes(array), False)
        write(path(name + ".idx.gz"), idx_bytes(array), True)
        write_values(path(name + ".values"), array)
    labels = np.array([9, 0, 0, 3, 1, 2, 7], dtype="u1")
    write(path("labels.idx.gz"), idx_bytes(labels), True)
    write_values(path("labels.values"), labels)

    u8 = idx_bytes(arrays["u8"])
    write(path("magic.idx"), b"PK\x03\x04" + u8[4:], False)
    write(path("int16.idx"), idx_bytes(np.arange(4, dtype="i2")), False)
    write(path("int8.idx"), idx_bytes(np.arange(4, dtype="i1")), False)
    write(path("unknown.idx"), idx_bytes(np.arange(4, dtype="u1"), code=0x07), False)
    write(path("scalar.idx"), bytes([0, 0, 8, 0, 42]), False)
    write(path("header.idx"), u8[:10], False)
    write(path("short.idx"), u8[:-4], False)
    write(path("extra.idx"), u8 + b"\1\2\3", False)
    write(path("short.idx.gz"), u8[:-4], True)
    write(path("extra.idx.gz"), u8 + b"\1\2\3", True)
    whole = gzip.compress(u8, mtime=0)
    write(path("cut.idx.gz"), whole[:len(whole) // 2], False)
    # The CRC-32 is the trailer's first 4 bytes.
    write(path("crc.idx.gz"), whole[:-8] + bytes(b ^ 0xFF for b in whole[-8:-4]) + whole[-4:], False)
    # Large enough (256 KiB of noise) that zlib finds the damage only when the elements
    # are read, after the header.
    noise = idx_bytes(np.random.default_rng(1).integers(0, 256, (64, 64, 64), dtype=np.uint8))
    whole = gzip.compress(noise, mtime=0)
    write(path("cut-big.idx.gz"), whole[:len(whole) // 2], False)
    write(path("crc-big.idx.gz"), whole[:-8] + bytes(b ^ 0xFF for b in whole[-8:-4]) + whole[-4:], False)
    write(path("huge.idx.gz"), bytes([0, 0, 8, 3]) + struct.pack(">III", 60000, 60000, 60000), True)
    write(path("overflow.idx"), bytes([0, 0, 0x0E, 3]) + struct.pack(">I", 2**32 - 1) * 3, False)


if __name__ == "__main__":
    main()
