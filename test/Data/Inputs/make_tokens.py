#!/usr/bin/env python3
"""make_tokens.py DIR

Writes flat token files into DIR with numpy's tofile, as nanoGPT's prepare.py does, and
NAME.values for each good one (values.py):

  gpt.bin    uint16, 1000 tokens below 50257 (GPT-2's vocabulary)
  wide.bin   uint32, 5 tokens
  text.txt   a text file, read as uint8 bytes

and broken ones: odd.bin (7 bytes, not whole uint16 tokens), empty.bin.
"""
import os
import sys

import numpy as np

from values import write_values


def main():
    directory = sys.argv[1]
    os.makedirs(directory, exist_ok=True)
    path = lambda name: os.path.join(directory, name)
    gpt = np.random.default_rng(3).integers(0, 50257, 1000).astype(np.uint16)
    wide = np.array([0, 1, 100000, 4294967295, 7], dtype=np.uint32)
    text = np.frombuffer("Tokens, one byte each: ünïcode too.\n".encode(), dtype=np.uint8)
    for name, array in (("gpt.bin", gpt), ("wide.bin", wide), ("text.txt", text)):
        array.tofile(path(name))
        write_values(path(name.split(".")[0] + ".values"), array)
    np.arange(7, dtype=np.uint8).tofile(path("odd.bin"))
    open(path("empty.bin"), "wb").close()


if __name__ == "__main__":
    main()
