#!/usr/bin/env python3
"""Reads a checkpoint as shardrt writes it (safetensors, F32 and I32 tensors, each
tensor's CRC-32 in __metadata__["crc32"]) with Python's standard library only: a
reader that shares no code with runtime/lib/driver/checkpoint_file.cpp, to check its files.

    read_safetensors.py FILE [--values K]

Prints one JSON object, sorted keys, a line per tensor:
    {"metadata": {...without crc32...},
     "tensors": {NAME: {"dtype", "shape", "sum", "values": [the first K]}, ...}}
Sums are in double, in row-major order. Exits 1 with a message on stderr when the file
is inconsistent in any way: lengths, JSON, types, offsets, checksums.
"""

import argparse
import json
import re
import struct
import sys
import zlib

FORMATS = {"F32": "f", "I32": "i"}
ENTRY_KEYS = {"dtype", "shape", "data_offsets"}


class Inconsistent(Exception):
    pass


def is_count(value):
    # bool is an int in Python, and not a size.
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def checked_entry(name, entry):
    """(dtype, shape, begin, end) of a tensor's header entry."""
    if not isinstance(entry, dict) or set(entry) != ENTRY_KEYS:
        raise Inconsistent(f"tensor {name!r}: its entry is not an object of {sorted(ENTRY_KEYS)}")
    dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    if dtype not in FORMATS:
        raise Inconsistent(f"tensor {name!r}: dtype {dtype!r} is not F32 or I32")
    if not isinstance(shape, list) or not all(is_count(size) for size in shape):
        raise Inconsistent(f"tensor {name!r}: shape {shape!r} is not a list of sizes")
    if not isinstance(offsets, list) or len(offsets) != 2 or not all(map(is_count, offsets)):
        raise Inconsistent(f"tensor {name!r}: data_offsets {offsets!r} is not [begin, end]")
    count = 1
    for size in shape:
        count *= size
    if offsets[1] - offsets[0] != 4 * count:
        raise Inconsistent(f"tensor {name!r}: data_offsets {offsets} do not hold "
                           f"{4 * count} bytes for shape {shape}")
    return dtype, shape, offsets[0], offsets[1]


def read_checkpoint(path, num_values):
    with open(path, "rb") as file:
        data = file.read()
    if len(data) < 8:
        raise Inconsistent(f"truncated: {len(data)} bytes, fewer than the 8 of the header length")
    (header_bytes,) = struct.unpack_from("<Q", data, 0)
    if 8 + header_bytes > len(data):
        raise Inconsistent(f"the header length {header_bytes} does not fit the file "
                           f"({len(data)} bytes)")
    try:
        header = json.loads(data[8:8 + header_bytes].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise Inconsistent(f"the header is not JSON: {error}")
    except RecursionError:
        raise Inconsistent("the header is not JSON that Python can read: nested too deeply")
    if not isinstance(header, dict):
        raise Inconsistent("the header is not a JSON object")

    metadata = header.pop("__metadata__", {})
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise Inconsistent("__metadata__ is not an object of strings")
    if "crc32" not in metadata:
        raise Inconsistent("__metadata__ has no crc32")
    try:
        checksums = json.loads(metadata.pop("crc32"))
    except json.JSONDecodeError:
        raise Inconsistent("__metadata__ crc32 is not JSON")
    if not isinstance(checksums, dict) or set(checksums) != set(header):
        raise Inconsistent("__metadata__ crc32 does not name exactly the tensors")

    entries = {name: checked_entry(name, entry) for name, entry in header.items()}
    data_section = data[8 + header_bytes:]
    end = 0
    for name, (_, _, begin, stop) in sorted(entries.items(), key=lambda item: item[1][2:]):
        if begin != end:
            raise Inconsistent(f"tensor {name!r} begins at byte {begin} of the data section, "
                               f"not at {end}")
        end = stop
    if end != len(data_section):
        raise Inconsistent(f"the tensors hold {end} bytes, the data section {len(data_section)}")

    tensors = {}
    for name, (dtype, shape, begin, stop) in entries.items():
        stored = checksums[name]
        if not isinstance(stored, str) or not re.fullmatch("[0-9a-fA-F]{8}", stored):
            raise Inconsistent(f"tensor {name!r}: checksum {stored!r} is not 8 hex digits")
        computed = zlib.crc32(data_section[begin:stop])
        if int(stored, 16) != computed:
            raise Inconsistent(f"tensor {name!r}: CRC-32 mismatch: stored {stored!r}, "
                               f"computed {computed:08x}")
        count = (stop - begin) // 4
        values = struct.unpack_from(f"<{count}{FORMATS[dtype]}", data_section, begin)
        tensors[name] = {"dtype": dtype, "shape": shape, "sum": sum(map(float, values), 0.0),
                         "values": list(values[:num_values])}
    return metadata, tensors


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file")
    parser.add_argument("--values", type=int, default=4, metavar="K",
                        help="how many of each tensor's first values to print (default 4)")
    args = parser.parse_args()
    try:
        metadata, tensors = read_checkpoint(args.file, args.values)
    except (OSError, ValueError, Inconsistent) as error:
        print(f"read_safetensors.py: {args.file}: {error}", file=sys.stderr)
        return 1
    lines = [f"  {json.dumps(name)}: {json.dumps(tensors[name], sort_keys=True)}"
             for name in sorted(tensors)]
    print('{"metadata": ' + json.dumps(metadata, sort_keys=True) + ',\n "tensors": {\n' +
          ",\n".join(lines) + "\n }}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
