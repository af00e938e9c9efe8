#!/usr/bin/env python3
"""make_images.py DIR

Writes image folders (torchvision's ImageFolder layout, FOLDER/CLASS/IMAGE) into DIR with
PIL (Debian's python3-pil), and for each good folder NAME.images.values and
NAME.labels.values: the values lines (values.py) of the images as shardrt-test-data must
decode and resize them, and of the labels, in the reader's order (FNV-1a 64 of
"CLASS/FILE", ties by name). Only images whose result is exact are used: solid colours
(any filter keeps them), images already of the requested size, and a 2x shrink of 2x2
blocks (the box filter averages each block).

  colour/   read as 4x4 RGB: cat/ red.png (7x10), up.png (3x3, grown), grey.png (L mode,
            9x5, replicated to RGB), solid.jpg (16x16, quality 100: PIL's libjpeg
            decodes the same colour as stb); dog/ exact.png (4x4 noise), blocks.png (8x8 of
            2x2 blocks), noext (a PNG without an extension); zebra/ rgba.png (alpha
            dropped); and .DS_Store, .hidden/ and cat/.thumb, which are ignored
  grey/     read as 2x3 grey: a/ rgb.png (stb's grey: (77 r + 150 g + 29 b) >> 8),
            l.jpg (L mode); b/ deep.png (16 bits: the top byte), tall.png (3x40)

and broken folders, each wrong one way:

  text/       a/notes.txt is not an image    cut/       a/half.png is cut in half
  empty-class/  b/ is empty                  no-classes/  holds nothing but .hidden
  loose/      x.png directly in the folder   nested/    a/deeper/ is a folder
"""
import io
import os
import sys

import numpy as np
from PIL import Image

from values import write_values


def fnv1a64(text):
    value = 0xCBF29CE484222325
    for byte in text.encode():
        value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return value


def solid(mode, width, height, colour):
    return Image.new(mode, (width, height), colour)


def write_folder(directory, name, files, height, width, channels):
    """FILES: {"CLASS/FILE": (image, save options, expected pixels)}; writes the folder
    and the values of what the reader must produce."""
    root = os.path.join(directory, name)
    for path, (image, options, _) in files.items():
        os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
        image.save(os.path.join(root, path), **options)
    classes = sorted({path.split("/")[0] for path in files})
    order = sorted(files, key=lambda path: (fnv1a64(path), path))
    images = np.stack([np.broadcast_to(np.asarray(files[path][2], dtype=np.uint8),
                                       (height, width, channels)) for path in order])
    labels = np.array([classes.index(path.split("/")[0]) for path in order], dtype="<i4")
    write_values(os.path.join(directory, name + ".images.values"), images)
    write_values(os.path.join(directory, name + ".labels.values"), labels)


def main():
    directory = sys.argv[1]
    rng = np.random.default_rng(5)
    noise = rng.integers(0, 256, (4, 4, 3), dtype=np.uint8)
    blocks = rng.integers(0, 256, (4, 4, 3), dtype=np.uint8)
    jpeg = solid("RGB", 16, 16, (40, 160, 220))
    encoded = io.BytesIO()
    jpeg.save(encoded, format="JPEG", quality=100)
    decoded = np.asarray(Image.open(encoded))[0, 0]
    png = {"format": "PNG"}
    write_folder(directory, "colour", {
        "cat/red.png": (solid("RGB", 7, 10, (200, 30, 40)), png, (200, 30, 40)),
        "cat/up.png": (solid("RGB", 3, 3, (10, 250, 128)), png, (10, 250, 128)),
        "cat/grey.png": (solid("L", 9, 5, 77), png, 77),
        "cat/solid.jpg": (jpeg, {"quality": 100}, decoded),
        "dog/exact.png": (Image.fromarray(noise), png, noise),
        "dog/blocks.png": (Image.fromarray(blocks.repeat(2, 0).repeat(2, 1)), png, blocks),
        "dog/noext": (solid("RGB", 5, 5, (1, 2, 3)), png, (1, 2, 3)),
        "zebra/rgba.png": (solid("RGBA", 6, 6, (90, 80, 70, 10)), png, (90, 80, 70)),
    }, 4, 4, 3)
    colour = os.path.join(directory, "colour")
    os.makedirs(os.path.join(colour, ".hidden"))
    for ignored in (".DS_Store", "cat/.thumb"):
        open(os.path.join(colour, ignored), "w").write("not an image\n")

    deep = np.full((6, 6), 0x7F80, dtype=np.uint16)
    write_folder(directory, "grey", {
        "a/rgb.png": (solid("RGB", 8, 8, (200, 100, 50)), png,
                      (200 * 77 + 100 * 150 + 50 * 29) >> 8),
        "a/l.jpg": (solid("L", 8, 8, 130), {"quality": 100}, 130),
        "b/deep.png": (Image.fromarray(deep), png, 0x7F),
        "b/tall.png": (solid("L", 3, 40, 222), png, 222),
    }, 2, 3, 1)

    def folder(name, files):
        for path, data in files.items():
            os.makedirs(os.path.join(directory, name, os.path.dirname(path)), exist_ok=True)
            if data is not None:
                open(os.path.join(directory, name, path), "wb").write(data)

    with open(os.path.join(colour, "dog/exact.png"), "rb") as image:
        exact = image.read()
    folder("text", {"a/x.png": exact, "a/notes.txt": b"cats are nice\n"})
    folder("cut", {"a/x.png": exact, "b/half.png": exact[:len(exact) // 2]})
    folder("empty-class", {"a/x.png": exact, "b/": None})
    folder("no-classes", {".hidden/x.png": exact})
    folder("loose", {"a/x.png": exact, "x.png": exact})
    folder("nested", {"a/x.png": exact, "a/deeper/y.png": exact})


if __name__ == "__main__":
    main()
