"""The line shardrt-test-data prints for an array's elements, computed from the array
the make_*.py scripts wrote, so that a test can check that the reader read exactly it:

  values: count N, sum S, first [up to 8 values], fnv1a64 HASH

The sum is in double, element after element (not numpy's pairwise sum); integers print
as integers, floats as C's %.17g; the hash is FNV-1a 64 over the little-endian bytes.
"""
import numpy as np


def fnv1a64(data):
    value = 0xCBF29CE484222325
    for byte in data:
        value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return value


def values_line(array):
    array = np.ascontiguousarray(array)
    elements = array.reshape(-1).tolist()
    if array.dtype.kind == "f":
        text = lambda value: "%.17g" % value
    else:
        text = lambda value: "%d" % value
    total = 0.0
    for value in elements:
        total += float(value)
    little = array.astype(array.dtype.newbyteorder("<"))
    return "values: count %d, sum %.17g, first [%s], fnv1a64 %016x" % (
        array.size, total, ", ".join(text(v) for v in elements[:8]), fnv1a64(little.tobytes()))


def write_values(path, array):
    """Writes PATH with the values line of ARRAY."""
    with open(path, "w") as out:
        out.write(values_line(array) + "\n")
