#!/usr/bin/python3
"""Export Fashion-MNIST from its IDX .gz files to the NumPy arrays W6 trains on.

Writes, into the folder given by --out (created if missing):

    x_train.npy  uint8 [60000, 784]   the training images, flattened row by row
    y_train.npy  uint8 [60000]        their labels, 0..9
    x_test.npy   uint8 [10000, 784]   the test images
    y_test.npy   uint8 [10000]        their labels

in the files' own order (the executable shuffles each epoch itself), so the output is
the same bytes on every run. The images stay uint8: the executable scales them by
1/255 into the f32 input `image` when it reads them.

Run it with Debian's Python, which has NumPy:

    /usr/bin/python3 examples/mnist-mlp/export_npy.py --out build/mnist-npy

examples/mnist-mlp/run.json expects the arrays in build/mnist-npy (the default of
--out, relative to the repository root whatever the current folder).
"""

import argparse
import gzip
import os
import sys

import numpy as np

REPO_ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DEFAULT_DATA = "/usr/share/datasets/fashion-mnist"
DEFAULT_OUT = os.path.join(REPO_ROOT, "build", "mnist-npy")

# (output name, IDX file, expected shape of the array as stored in the IDX file)
FILES = [
    ("x_train", "train-images-idx3-ubyte.gz", (60000, 28, 28)),
    ("y_train", "train-labels-idx1-ubyte.gz", (60000,)),
    ("x_test", "t10k-images-idx3-ubyte.gz", (10000, 28, 28)),
    ("y_test", "t10k-labels-idx1-ubyte.gz", (10000,)),
]


def read_idx(path):
    """An IDX file of unsigned bytes (element type 0x08), gzip-compressed, as an array."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0:
        raise ValueError(f"{path}: not an IDX file (bad magic)")
    if data[2] != 0x08:
        raise ValueError(f"{path}: element type 0x{data[2]:02x}, expected 0x08 (unsigned byte)")
    ndim = data[3]
    header = 4 + 4 * ndim
    shape = tuple(int(d) for d in np.frombuffer(data, dtype=">u4", count=ndim, offset=4))
    count = int(np.prod(shape))
    if len(data) != header + count:
        raise ValueError(f"{path}: {len(data) - header} bytes of elements, expected {count} for shape {shape}")
    return np.frombuffer(data, dtype=np.uint8, offset=header).reshape(shape)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=DEFAULT_OUT,
                        help="folder to write x_train.npy, y_train.npy, x_test.npy, y_test.npy into "
                             "(default: build/mnist-npy in the repository, where run.json looks)")
    parser.add_argument("--data", default=DEFAULT_DATA,
                        help=f"folder of Fashion-MNIST's IDX .gz files (default {DEFAULT_DATA})")
    args = parser.parse_args(argv)

    os.makedirs(args.out, exist_ok=True)
    for name, idx_name, expected in FILES:
        array = read_idx(os.path.join(args.data, idx_name))
        if array.shape != expected:
            raise ValueError(f"{idx_name}: shape {array.shape}, expected {expected}")
        if name.startswith("x_"):
            array = array.reshape(array.shape[0], -1)  # [N, 28, 28] -> [N, 784], row-major
        elif array.max() > 9:
            raise ValueError(f"{idx_name}: label {array.max()} out of 0..9")
        path = os.path.join(args.out, name + ".npy")
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            np.save(f, np.ascontiguousarray(array), allow_pickle=False)
        os.replace(tmp, path)
        print(f"{path}: {array.dtype} {list(array.shape)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
