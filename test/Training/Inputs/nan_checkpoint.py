"""Copies a shardrt checkpoint with one parameter's first element NaN, its checksum
redone: a diverged run's checkpoint. nan_checkpoint.py SRC DST TENSOR (standard
library only)."""
import json
import struct
import sys
import zlib

src, dst, name = sys.argv[1:4]
with open(src, "rb") as f:
    (length,) = struct.unpack("<Q", f.read(8))
    header = json.loads(f.read(length))
    data = bytearray(f.read())
begin, end = header[name]["data_offsets"]
data[begin:begin + 4] = struct.pack("<f", float("nan"))
metadata = header["__metadata__"]
checksums = json.loads(metadata["crc32"])
checksums[name] = "%08x" % zlib.crc32(bytes(data[begin:end]))
metadata["crc32"] = json.dumps(checksums, sort_keys=True, separators=(",", ":"))
encoded = json.dumps(header, separators=(",", ":")).encode()
with open(dst, "wb") as f:
    f.write(struct.pack("<Q", len(encoded)) + encoded + bytes(data))
