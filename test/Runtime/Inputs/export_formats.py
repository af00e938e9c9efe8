#!/usr/bin/python3
"""export_formats.py DIR

Reads the IDX set make_idx.py wrote into DIR with NumPy (Debian's python3-numpy) and
writes the same examples in the other formats a run can bind, each with a run
configuration beside it that binds the inputs image and label:

  npy/{x,y}_{train,test}.npy            uint8 images [N, 28, 28], uint8 labels   run-npy.json
  f32/{x,y}_{train,test}.npy            float32 images [N, 28, 28, 1] = pixel / 255,
                                        int64 labels                             run-f32.json
  stored.npz, deflated.npz              members x_train, y_train, x_test, y_test
                                        (numpy.savez, numpy.savez_compressed)    run-stored.json,
                                                                                 run-deflated.json
  data.safetensors                      tensors x_train ... y_test               run-safetensors.json
  images/{train,test}/CLASS/N.png|jpg   PNG (even examples) and lossless-enough
                                        grey JPEG (odd ones) by Pillow           run-images.json

Every set holds the same numbers (the JPEGs aside), so training on any of them gives
the IDX run's losses exactly.
"""
import gzip
import json
import os
import sys

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "Data", "Inputs"))
from make_safetensors import write as write_safetensors  # noqa: E402


def read_idx(path):
    data = gzip.open(path).read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * d: 8 + 4 * d], "big") for d in range(ndim)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def config(folder, name, train, evaluation):
    with open(os.path.join(folder, name), "w") as out:
        json.dump({"data": {"train": train, "eval": evaluation}}, out, indent=2)


def main():
    folder = sys.argv[1]
    arrays = {}
    for split, prefix in (("train", "train"), ("test", "t10k")):
        arrays["x_" + split] = read_idx(os.path.join(folder, prefix + "-images-idx3-ubyte.gz"))
        arrays["y_" + split] = read_idx(os.path.join(folder, prefix + "-labels-idx1-ubyte.gz"))

    def bind(path_of):
        return {split: {"image": path_of("x_" + name), "label": path_of("y_" + name)}
                for split, name in (("train", "train"), ("eval", "test"))}

    os.makedirs(os.path.join(folder, "npy"), exist_ok=True)
    os.makedirs(os.path.join(folder, "f32"), exist_ok=True)
    for key, array in arrays.items():
        np.save(os.path.join(folder, "npy", key + ".npy"), array)
        converted = (array.astype(np.float64) / 255).astype(np.float32)[..., None] \
            if key.startswith("x") else array.astype(np.int64)
        np.save(os.path.join(folder, "f32", key + ".npy"), converted)
    splits = bind(lambda key: "npy/" + key + ".npy")
    config(folder, "run-npy.json", splits["train"], splits["eval"])
    splits = bind(lambda key: "f32/" + key + ".npy")
    config(folder, "run-f32.json", splits["train"], splits["eval"])

    np.savez(os.path.join(folder, "stored.npz"), **arrays)
    np.savez_compressed(os.path.join(folder, "deflated.npz"), **arrays)
    for name in ("stored", "deflated"):
        splits = bind(lambda key: name + ".npz#" + key)
        config(folder, "run-" + name + ".json", splits["train"], splits["eval"])

    header, data = {}, b""
    for key, array in arrays.items():
        raw = array.tobytes()
        header[key] = {"dtype": "U8", "shape": list(array.shape),
                       "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    write_safetensors(os.path.join(folder, "data.safetensors"), header, data)
    splits = bind(lambda key: {"path": "data.safetensors", "field": key})
    config(folder, "run-safetensors.json", splits["train"], splits["eval"])

    for split in ("train", "test"):
        for i, (pixels, label) in enumerate(zip(arrays["x_" + split], arrays["y_" + split])):
            target = os.path.join(folder, "images", split, "class%d" % label)
            os.makedirs(target, exist_ok=True)
            image = Image.fromarray(pixels, mode="L")
            if i % 2:
                image.save(os.path.join(target, "%d.jpg" % i), quality=95)
            else:
                image.save(os.path.join(target, "%d.png" % i))
    config(folder, "run-images.json",
           {"image": "images/train#image", "label": "images/train#label"},
           {"image": "images/test#image", "label": "images/test#label"})


if __name__ == "__main__":
    main()
