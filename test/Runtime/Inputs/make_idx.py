#!/usr/bin/env python3
"""make_idx.py DIR [--train N] [--test N] [--break HOW]

Writes a small Fashion-MNIST lookalike into DIR: the four gzip IDX files, with N
training and N test examples of 28x28 pixels, and DIR/run.json, the run configuration
that binds the inputs image and label to them for training and evaluation. Example i of a split has label (7 i + 3) mod 10 and an image of faint noise
with a bright band on rows 2 label .. 2 label + 3, which a linear model learns in a few
steps.

--break damages the set in one way, for the driver's error tests:
  folder    DIR is not made            file      t10k-labels-idx1-ubyte.gz is missing
  gzip      train images cut mid-stream  crc     train images' gzip checksum is wrong
  magic     train images with a label file's magic number
  size      train images of 28x27 pixels
  short     train images' IDX data ends early (the gzip stream is whole)
  extra     train images with a byte after the last image
  count     train labels one fewer than the images
  label     a train label of 10
"""
import argparse
import gzip
import json
import os
import struct


def images(count):
    data = bytearray()
    for i in range(count):
        label = (7 * i + 3) % 10
        for row in range(28):
            for col in range(28):
                noise = (i * 7919 + row * 104729 + col * 1299709) % 41
                data.append(200 + noise if 2 * label <= row < 2 * label + 4 else noise)
    return data


def labels(count):
    return bytearray((7 * i + 3) % 10 for i in range(count))


def write(path, magic, dims, payload):
    header = struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in dims)
    with open(path, "wb") as out:
        # mtime=0: the same bytes on every run.
        out.write(gzip.compress(header + bytes(payload), mtime=0))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dir")
    parser.add_argument("--train", type=int, default=96)
    parser.add_argument("--test", type=int, default=20)
    parser.add_argument("--break", dest="damage", default=None)
    args = parser.parse_args()
    if args.damage == "folder":
        return
    os.makedirs(args.dir, exist_ok=True)
    for prefix, count in (("train", args.train), ("t10k", args.test)):
        pixels, tags = images(count), labels(count)
        magic, dims = 0x803, [count, 28, 28]
        damaged = prefix == "train"
        if damaged and args.damage == "magic":
            magic = 0x801
        if damaged and args.damage == "size":
            dims, pixels = [count, 28, 27], pixels[: count * 28 * 27]
        if damaged and args.damage == "short":
            pixels = pixels[:-784]
        if damaged and args.damage == "extra":
            pixels.append(0)
        if damaged and args.damage == "count":
            tags = tags[:-1]
        if damaged and args.damage == "label":
            tags[5] = 10
        images_path = os.path.join(args.dir, prefix + "-images-idx3-ubyte.gz")
        labels_path = os.path.join(args.dir, prefix + "-labels-idx1-ubyte.gz")
        write(images_path, magic, dims, pixels)
        write(labels_path, 0x801, [len(tags)], tags)
        if damaged and args.damage in ("gzip", "crc"):
            with open(images_path, "rb") as f:
                data = bytearray(f.read())
            if args.damage == "gzip":
                data = data[: len(data) // 2]
            else:
                data[-8] ^= 0xFF  # the trailer: CRC-32, then the length
            with open(images_path, "wb") as f:
                f.write(data)
    if args.damage == "file":
        os.remove(os.path.join(args.dir, "t10k-labels-idx1-ubyte.gz"))
    config = {"data": {split: {"image": prefix + "-images-idx3-ubyte.gz",
                               "label": prefix + "-labels-idx1-ubyte.gz"}
                       for split, prefix in (("train", "train"), ("eval", "t10k"))}}
    with open(os.path.join(args.dir, "run.json"), "w") as out:
        json.dump(config, out, indent=2)


if __name__ == "__main__":
    main()
