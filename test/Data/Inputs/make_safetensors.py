#!/usr/bin/env python3
"""make_safetensors.py DIR

Writes safetensors files into DIR through a writer of its own (struct and json: the
format in huggingface/safetensors' README), and NAME.values for each good tensor
(values.py):

  good.safetensors   u8 uint8 [5, 2], u16 uint16 [3], u32 uint32 [2, 2], i32 int32 [4],
                     i64 int64 [2, 1], f32 float32 [3, 4], f64 float64 [6]; also
                     half (BF16) and step (I32, shape []) and __metadata__; the data
                     section in another order than the header's (sorted) keys

and broken ones, each wrong one way (one tensor "x", F32 [3, 4], unless said):

  short        5 bytes                      length      a header length past the file
  limit        a header length of 2**40     not-json    a header that is not JSON
  not-object   a header that is [1, 2]      outside     data_offsets [0, 4000]
  mismatch     data_offsets [0, 40]         negative    data_offsets [-1, 47]
  no-offsets   an entry without data_offsets
"""
import json
import os
import struct
import sys

import numpy as np

from values import write_values

DTYPES = {"u8": ("U8", "<u1"), "u16": ("U16", "<u2"), "u32": ("U32", "<u4"),
          "i32": ("I32", "<i4"), "i64": ("I64", "<i8"), "f32": ("F32", "<f4"),
          "f64": ("F64", "<f8")}


def write(path, header, data=b""):
    """A safetensors file of HEADER (a dict, or text as it is) and DATA."""
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as out:
        out.write(struct.pack("<Q", len(text)) + text + data)


def main():
    directory = sys.argv[1]
    os.makedirs(directory, exist_ok=True)
    path = lambda name: os.path.join(directory, name)
    arrays = {
        "u8": np.arange(250, 260, dtype=np.int64).astype("<u1").reshape(5, 2),
        "u16": np.array([0, 65535, 1234], dtype="<u2"),
        "u32": np.array([[4000000000, 1], [2, 3]], dtype="<u4"),
        "i32": np.array([-7, 7, -2**31, 2**31 - 1], dtype="<i4"),
        "i64": np.array([[-2**40], [3]], dtype="<i8"),
        "f32": (np.arange(12, dtype="<f4") * -0.125).reshape(3, 4),
        "f64": np.array([1e300, -1e-300, 0.1, 2.5, -0.0, 1 / 3], dtype="<f8"),
    }
    header, data = {"__metadata__": {"format": "pt"}}, b""
    # Back to front, so that the file's order is not the header's.
    for name in reversed(list(arrays)):
        array = arrays[name]
        header[name] = {"dtype": DTYPES[name][0], "shape": list(array.shape),
                        "data_offsets": [len(data), len(data) + array.nbytes]}
        data += array.tobytes()
        write_values(path(name + ".values"), array)
    header["half"] = {"dtype": "BF16", "shape": [2], "data_offsets": [len(data), len(data) + 4]}
    header["step"] = {"dtype": "I32", "shape": [], "data_offsets": [len(data) + 4, len(data) + 8]}
    write(path("good.safetensors"), header, data + b"\0" * 8)

    floats = np.arange(12, dtype="<f4").tobytes()
    tensor = lambda offsets: {"x": {"dtype": "F32", "shape": [3, 4], "data_offsets": offsets}}
    with open(path("short.safetensors"), "wb") as out:
        out.write(b"\x10\0\0\0\0")
    with open(path("length.safetensors"), "wb") as out:
        out.write(struct.pack("<Q", 1000) + b'{"x": 1}')
    with open(path("limit.safetensors"), "wb") as out:
        out.write(struct.pack("<Q", 2**40) + b'{"x": 1}')
    write(path("not-json.safetensors"), b'{"x": {"dtype": "F32", ', floats)
    write(path("not-object.safetensors"), b"[1, 2]", floats)
    write(path("outside.safetensors"), tensor([0, 4000]), floats)
    write(path("mismatch.safetensors"), tensor([0, 40]), floats)
    write(path("negative.safetensors"), tensor([-1, 47]), floats)
    write(path("no-offsets.safetensors"), {"x": {"dtype": "F32", "shape": [3, 4]}}, floats)


if __name__ == "__main__":
    main()
