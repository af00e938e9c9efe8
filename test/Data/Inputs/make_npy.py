#!/usr/bin/env python3
"""make_npy.py DIR

Writes .npy files into DIR with numpy (Debian's python3-numpy), and for each good one
NAME.values, the line shardrt-test-data must print for its elements (values.py):

  uint8 uint16 uint32 int32 int64 float32 float64   np.save of each accepted dtype
  v1 v2 v3                                           format versions 1.0, 2.0 and 3.0
  handmade                                           a header numpy would not write
                                                     but Python reads: double quotes,
                                                     keys in another order, no
                                                     trailing comma

and broken ones, each wrong one way:

  magic       not a .npy file                   truncated   7 bytes cut off the end
  extra       4 bytes after the data            lying       shape (1000, 1000), 12 elements
  overflow    shape (2**62, 2**62)              bytes       shape (2**60, 4) of float32
  huge        shape (2**40,) of float64, 8 bytes of data
  fortran     fortran_order True                big-endian  >f4
  object      an object array                   bool        |b1
  float16     <f2                               structured  [('a', '<f4')]
  scalar      shape ()                          empty       shape (0, 3)
  version     format version 4.0                long-header a header length of 2**31-1
  short-header  a 1.0 header length of 60000 in a file of 200 bytes
  unknown-key  missing-key  not-tuple  not-dict  duplicate-key   malformed dicts
"""
import os
import struct
import sys

import numpy as np
from numpy.lib import format as npformat

from values import write_values


def save(directory, name, array, **options):
    np.save(os.path.join(directory, name + ".npy"), array, **options)


def handmade(directory, name, header, data=b"", version=(1, 0)):
    """A .npy file with HEADER as its dict text, padded as numpy pads it."""
    text = header.encode("utf-8")
    length_format = "<H" if version[0] == 1 else "<I"
    prelude = len(npformat.MAGIC_PREFIX) + 2 + struct.calcsize(length_format)
    text += b" " * ((64 - (prelude + len(text) + 1) % 64) % 64) + b"\n"
    with open(os.path.join(directory, name + ".npy"), "wb") as out:
        out.write(npformat.MAGIC_PREFIX + bytes(version) + struct.pack(length_format, len(text)))
        out.write(text + data)


def main():
    directory = sys.argv[1]
    os.makedirs(directory, exist_ok=True)
    good = {
        "uint8": np.arange(24, dtype="|u1").reshape(2, 3, 4),
        "uint16": (np.arange(10) * 6553).astype("<u2"),
        "uint32": np.array([[0, 1], [4294967295, 123456789]], dtype="<u4"),
        "int32": np.array([-2147483648, -1, 0, 2147483647, 5, 6], dtype="<i4").reshape(3, 2),
        "int64": np.array([[-2**63], [2**63 - 1], [-1], [2**53 + 1]], dtype="<i8"),
        "float32": np.concatenate([
            np.array([-0.0, 1e-45, 3.4028235e38, -1.5], dtype="<f4"),
            np.arange(56, dtype="<f4") / 7 - 4]).reshape(5, 3, 4),
        "float64": np.random.default_rng(7).standard_normal((7, 3)),
    }
    for name, array in good.items():
        save(directory, name, array)
        write_values(os.path.join(directory, name + ".values"), array)
    versioned = (np.arange(30, dtype="<f4") * 0.5).reshape(6, 5)
    for major in (1, 2, 3):
        with open(os.path.join(directory, "v%d.npy" % major), "wb") as out:
            npformat.write_array(out, versioned, version=(major, 0))
        write_values(os.path.join(directory, "v%d.values" % major), versioned)
    ints = np.array([7, -8], dtype="<i4")
    handmade(directory, "handmade", '{"shape": (2,),"fortran_order":False, "descr": "<i4"}',
             ints.tobytes())
    write_values(os.path.join(directory, "handmade.values"), ints)

    with open(os.path.join(directory, "magic.npy"), "wb") as out:
        out.write(b"PK\x03\x04 not numpy at all")
    floats = np.arange(12, dtype="<f4").reshape(3, 4)
    save(directory, "whole", floats)
    with open(os.path.join(directory, "whole.npy"), "rb") as whole:
        data = whole.read()
    with open(os.path.join(directory, "truncated.npy"), "wb") as out:
        out.write(data[:-7])
    with open(os.path.join(directory, "extra.npy"), "wb") as out:
        out.write(data + b"\0\0\0\0")
    bytes12 = floats.tobytes()
    handmade(directory, "lying", "{'descr': '<f4', 'fortran_order': False, 'shape': (1000, 1000), }", bytes12)
    handmade(directory, "overflow", "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (2**62, 2**62), bytes12)
    handmade(directory, "bytes", "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, 4), }" % 2**60, bytes12)
    handmade(directory, "huge", "{'descr': '<f8', 'fortran_order': False, 'shape': (%d,), }" % 2**40, b"\0" * 8)
    save(directory, "fortran", np.asfortranarray(floats))
    save(directory, "big-endian", floats.astype(">f4"))
    save(directory, "object", np.array([1, "a"], dtype=object), allow_pickle=True)
    save(directory, "bool", np.array([True, False]))
    save(directory, "float16", floats.astype("<f2"))
    save(directory, "structured", np.zeros(3, dtype=[("a", "<f4")]))
    save(directory, "scalar", np.float32(3))
    save(directory, "empty", np.zeros((0, 3), dtype="<f4"))
    with open(os.path.join(directory, "version.npy"), "wb") as out:
        out.write(data[:6] + b"\x04\x00" + data[8:])
    with open(os.path.join(directory, "long-header.npy"), "wb") as out:
        out.write(npformat.MAGIC_PREFIX + b"\x02\x00" + struct.pack("<I", 2**31 - 1) + b"{" * 100)
    with open(os.path.join(directory, "short-header.npy"), "wb") as out:
        out.write(npformat.MAGIC_PREFIX + b"\x01\x00" + struct.pack("<H", 60000) + b"{" * 190)
    handmade(directory, "unknown-key", "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), 'order': 'C'}", bytes12)
    handmade(directory, "missing-key", "{'descr': '<f4', 'shape': (3, 4), }", bytes12)
    handmade(directory, "not-tuple", "{'descr': '<f4', 'fortran_order': False, 'shape': (12), }", bytes12)
    handmade(directory, "not-dict", "[3, 4]", bytes12)
    handmade(directory, "duplicate-key", "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (3, 4)}", bytes12)


if __name__ == "__main__":
    main()
