#!/usr/bin/env python3
"""make_npz.py DIR

Writes .npz archives into DIR with numpy (Debian's python3-numpy) and Python's zipfile,
and NAME.values for each good member (values.py):

  stored.npz       np.savez: x_train float32 [4, 3, 2], y_train uint8 [4], ids int64 [4]
  compressed.npz   np.savez_compressed of the same, and big, float32 [64, 256] that
                   deflates to a fraction
  positional.npz   np.savez of one array passed by position: member arr_0

and broken ones, each wrong one way:

  not-zip.npz      a .npy file                  crc.npz        stored, one data byte flipped
  deflate.npz      compressed, bytes in the middle of big's deflate stream overwritten
  block.npz        compressed, big's first deflate block of the reserved type 3
  lying.npz        a member whose .npy header announces shape (100, 3), 12 elements
  not-npy.npz      a member x.npy that holds text
  bzip2.npz        a member compressed with bzip2 (zip method 12)
  size.npz         a deflated member whose sizes in the archive say 2**31 - 1 bytes
"""
import io
import os
import struct
import sys
import zipfile

import numpy as np

from values import write_values


def patch(path, offset, data):
    with open(path, "r+b") as out:
        out.seek(offset)
        out.write(data)


def data_offset(path, name):
    """Where member NAME's compressed bytes start in the archive at PATH."""
    with zipfile.ZipFile(path) as archive:
        start = archive.getinfo(name).header_offset
    with open(path, "rb") as data:
        data.seek(start + 26)
        name_length, extra_length = struct.unpack("<HH", data.read(4))
    return start + 30 + name_length + extra_length


def npy_bytes(array):
    out = io.BytesIO()
    np.save(out, array)
    return out.getvalue()


def main():
    directory = sys.argv[1]
    os.makedirs(directory, exist_ok=True)
    path = lambda name: os.path.join(directory, name)
    arrays = {
        "x_train": (np.arange(24, dtype="<f4") / 4 - 2).reshape(4, 3, 2),
        "y_train": np.array([3, 0, 255, 7], dtype="|u1"),
        "ids": np.array([10**12, -5, 0, 2**40], dtype="<i8"),
    }
    np.savez(path("stored.npz"), **arrays)
    big = (np.arange(64 * 256, dtype="<f4") % 17).reshape(64, 256)
    np.savez_compressed(path("compressed.npz"), big=big, **arrays)
    np.savez(path("positional.npz"), arrays["y_train"])
    for name, array in dict(arrays, big=big).items():
        write_values(path(name + ".values"), array)

    with open(path("not-zip.npz"), "wb") as out:
        out.write(npy_bytes(arrays["ids"]))
    np.savez(path("crc.npz"), **arrays)
    patch(path("crc.npz"), data_offset(path("crc.npz"), "x_train.npy") + 140, b"\x7f")
    np.savez_compressed(path("deflate.npz"), big=big)
    start = data_offset(path("deflate.npz"), "big.npy")
    with zipfile.ZipFile(path("deflate.npz")) as archive:
        middle = start + archive.getinfo("big.npy").compress_size // 2
    patch(path("deflate.npz"), middle, b"\xff" * 16)
    np.savez_compressed(path("block.npz"), big=big)
    patch(path("block.npz"), data_offset(path("block.npz"), "big.npy"), b"\x07")
    with zipfile.ZipFile(path("lying.npz"), "w") as archive:
        lying = npy_bytes(np.zeros((100, 3), dtype="<f4"))
        archive.writestr("x.npy", lying[:128] + b"\0" * 48)
    with zipfile.ZipFile(path("not-npy.npz"), "w") as archive:
        archive.writestr("x.npy", "these are not the numbers you are looking for\n")
    with zipfile.ZipFile(path("bzip2.npz"), "w", compression=zipfile.ZIP_BZIP2) as archive:
        archive.writestr("x.npy", npy_bytes(arrays["ids"]))
    with zipfile.ZipFile(path("size.npz"), "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("x.npy", npy_bytes(big))
    # The uncompressed size, in the local header and in the central directory.
    with open(path("size.npz"), "rb") as data:
        central = data.read().rindex(b"PK\x01\x02")
    patch(path("size.npz"), 22, struct.pack("<I", 2**31 - 1))
    patch(path("size.npz"), central + 24, struct.pack("<I", 2**31 - 1))


if __name__ == "__main__":
    main()
