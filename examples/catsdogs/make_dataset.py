#!/usr/bin/python3
"""Generate W5's synthetic cats-vs-dogs images as an ImageFolder tree.

    OUT/cat/cat_00000.png, cat_00001.jpg, ...
    OUT/dog/dog_00000.jpg, ...

(torchvision's ImageFolder layout: one folder per class, labels = index of the sorted
folder names, so cat = 0 and dog = 1.) There is no Kaggle download here, so the two
classes are drawn:

  cat  a round head (an ellipse close to a circle) with two triangular ears and two
       eyes, tilted by up to 35 degrees;
  dog  an elongated body (an ellipse 1.8 to 3 times longer than wide) with dark
       stripes across it, a round head at one end and a thin tail at the other, at
       any angle.

A cat's colour is a warm hue (red to yellow) 60% of the time, and a dog's a cool hue
(cyan to violet) 60% of the time. Otherwise the hue is drawn from the whole circle, so
colour is a hint and not the answer. Both classes get the same other variation:

- position, size and rotation;
- backgrounds that are a gradient between two random colours;
- 0 to 4 small distractor discs, boxes and lines;
- pixel noise and sometimes a blur;
- image sizes from 48 to 160 pixels, mostly not square: the width is drawn from 48 to
  160, and the height is the width times 0.8 to 1.25, clipped to the same range.
  Wider ratios are left out because the reader stretches every image to a square,
  and a 3:1 image squashed to 1:1 would turn a round cat head into a dog-like
  elongated blob;
- about half PNG and half JPEG (quality 70 to 95).

Everything is RGB. The output is deterministic: image i is drawn from its own
generator seeded by (--seed, i), and PNG and JPEG encoding is deterministic, so the
same arguments give the same files.

Run it with Debian's Python (NumPy and Pillow):

    /usr/bin/python3 examples/catsdogs/make_dataset.py --out build/catsdogs

examples/catsdogs/run.json expects the tree in build/catsdogs (the default of --out,
relative to the repository root whatever the current folder). OUT must hold nothing
but the class folders: any other folder there would be read as a third class. Images
that an earlier run left in cat/ and dog/ (cat_NNNNN.png|jpg, ...) are removed first.
"""

import argparse
import io
import math
import os
import re
import sys
import time

import numpy as np
from PIL import Image, ImageFilter

REPO_ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DEFAULT_OUT = os.path.join(REPO_ROOT, "build", "catsdogs")
CLASSES = ("cat", "dog")
OUR_FILE = re.compile(r"^(cat|dog)_\d{5,}\.(png|jpg)$")

MIN_SIDE, MAX_SIDE = 48, 160
MAX_LOG_ASPECT = math.log(1.25)  # height / width within [0.8, 1.25]
PREFERRED_HUE_PROBABILITY = 0.6
WARM_HUES = (-20.0, 55.0)   # degrees: red, orange, yellow
COOL_HUES = (175.0, 275.0)  # cyan, blue, violet


# --- colours -----------------------------------------------------------------------

def hsv_to_rgb(h, s, v):
    """h in degrees, s and v in [0, 1] -> RGB floats in [0, 255]."""
    h = (h % 360.0) / 60.0
    i = int(h) % 6
    f = h - int(h)
    p, q, t = v * (1 - s), v * (1 - s * f), v * (1 - s * (1 - f))
    r, g, b = [(v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q)][i]
    return np.array([r, g, b]) * 255.0


def foreground_colour(rng, cls):
    if rng.random() < PREFERRED_HUE_PROBABILITY:
        lo, hi = WARM_HUES if cls == 0 else COOL_HUES
        hue = rng.uniform(lo, hi)
    else:
        hue = rng.uniform(0.0, 360.0)
    return hsv_to_rgb(hue, rng.uniform(0.35, 0.95), rng.uniform(0.45, 1.0))


def any_colour(rng, s=(0.0, 1.0), v=(0.0, 1.0)):
    return hsv_to_rgb(rng.uniform(0, 360), rng.uniform(*s), rng.uniform(*v))


# --- shapes: soft-edged masks over the pixel grid ------------------------------------

def convex_mask(xs, ys, points):
    """Coverage in [0, 1] of the convex polygon `points` (x, y pairs, either winding),
    with a one-pixel soft edge."""
    pts = np.asarray(points, dtype=np.float64)
    area = np.sum(pts[:, 0] * np.roll(pts[:, 1], -1) - np.roll(pts[:, 0], -1) * pts[:, 1])
    if area < 0:
        pts = pts[::-1]
    inside = np.full(xs.shape, np.inf)
    for (x0, y0), (x1, y1) in zip(pts, np.roll(pts, -1, axis=0)):
        ex, ey = x1 - x0, y1 - y0
        length = math.hypot(ex, ey)
        if length < 1e-9:
            continue
        # inward normal of a counter-clockwise polygon (y axis pointing down)
        d = ((xs - x0) * ey - (ys - y0) * ex) / length
        inside = np.minimum(inside, -d)
    return np.clip(inside + 0.5, 0.0, 1.0)


def ellipse_points(cx, cy, a, b, angle, n=40):
    t = np.linspace(0.0, 2.0 * math.pi, n, endpoint=False)
    c, s = math.cos(angle), math.sin(angle)
    x, y = a * np.cos(t), b * np.sin(t)
    return np.stack([cx + x * c - y * s, cy + x * s + y * c], axis=1)


def ellipse_mask(xs, ys, cx, cy, a, b, angle):
    c, s = math.cos(angle), math.sin(angle)
    u = (xs - cx) * c + (ys - cy) * s
    v = -(xs - cx) * s + (ys - cy) * c
    r = np.sqrt((u / a) ** 2 + (v / b) ** 2)
    # distance to the edge, roughly, in pixels
    return np.clip((1.0 - r) * min(a, b) + 0.5, 0.0, 1.0)


def paint(img, mask, colour):
    """Alpha-blend `colour` onto the float image where `mask` covers it."""
    img += mask[..., None] * (np.asarray(colour)[None, None, :] - img)


def shade(colour, factor):
    return np.clip(np.asarray(colour) * factor, 0.0, 255.0)


def place(rng, lo, hi):
    """A coordinate in [lo, hi], or their middle when the shape is too big for that."""
    return rng.uniform(lo, hi) if hi > lo else (lo + hi) / 2.0


def draw_cat(img, xs, ys, rng, colour, size):
    h, w = xs.shape
    r = size * rng.uniform(0.22, 0.36)
    a, b = r * rng.uniform(0.9, 1.12), r * rng.uniform(0.88, 1.05)
    tilt = math.radians(rng.uniform(-35.0, 35.0))
    cx = place(rng, a, w - a)
    cy = place(rng, b + 0.8 * r, h - b)  # room for the ears above
    up = np.array([math.sin(tilt), -math.cos(tilt)])  # the head's "up", y pointing down
    side = np.array([math.cos(tilt), math.sin(tilt)])
    centre = np.array([cx, cy])
    ear_colour = shade(colour, rng.uniform(0.75, 1.0))
    for sign in (-1.0, 1.0):
        spread = rng.uniform(0.45, 0.75)
        base = centre + up * (b * 0.55) + side * (sign * a * spread)
        half = r * rng.uniform(0.28, 0.42)
        tip = base + up * r * rng.uniform(0.65, 1.0) + side * sign * r * rng.uniform(0.0, 0.25)
        paint(img, convex_mask(xs, ys, [base - side * half, base + side * half, tip]), ear_colour)
    paint(img, ellipse_mask(xs, ys, cx, cy, a, b, tilt), colour)
    eye_colour = any_colour(rng, s=(0.0, 0.6), v=(0.0, 0.25))
    eye_r = max(1.0, r * rng.uniform(0.09, 0.15))
    for sign in (-1.0, 1.0):
        e = centre + up * (b * 0.15) + side * sign * a * 0.38
        paint(img, ellipse_mask(xs, ys, e[0], e[1], eye_r, eye_r * 1.2, tilt), eye_colour)


def draw_dog(img, xs, ys, rng, colour, size):
    h, w = xs.shape
    a = size * rng.uniform(0.28, 0.42)
    b = a / rng.uniform(1.8, 3.0)
    angle = rng.uniform(0.0, math.pi)
    axis = np.array([math.cos(angle), math.sin(angle)])
    normal = np.array([-axis[1], axis[0]])
    cx = place(rng, 0.6 * a, w - 0.6 * a)
    cy = place(rng, 0.6 * a, h - 0.6 * a)
    centre = np.array([cx, cy])
    # tail: a thin bar out of one end
    tail_len, tail_w = a * rng.uniform(0.4, 0.7), max(1.0, b * rng.uniform(0.15, 0.3))
    t0 = centre - axis * a * 0.85
    bend = axis * math.cos(0.5) + normal * math.sin(0.5) * rng.choice([-1.0, 1.0])
    t1 = t0 - bend * tail_len
    paint(img, convex_mask(xs, ys, [t0 + normal * tail_w, t0 - normal * tail_w,
                                    t1 - normal * tail_w, t1 + normal * tail_w]),
          shade(colour, rng.uniform(0.7, 1.0)))
    # body with stripes across it
    body = ellipse_mask(xs, ys, cx, cy, a, b, angle)
    u = (xs - cx) * axis[0] + (ys - cy) * axis[1]
    period = a * rng.uniform(0.3, 0.55)
    phase = rng.uniform(0.0, 2.0 * math.pi)
    stripes = np.clip((np.sin(2.0 * math.pi * u / period + phase) - 0.2) * 2.0, 0.0, 1.0)
    paint(img, body, colour)
    paint(img, body * stripes, shade(colour, rng.uniform(0.3, 0.6)))
    # head: a disc at the other end, with a floppy ear
    hr = b * rng.uniform(0.8, 1.1)
    hc = centre + axis * (a * 0.9)
    paint(img, ellipse_mask(xs, ys, hc[0], hc[1], hr, hr, angle), shade(colour, rng.uniform(0.85, 1.1)))
    ear = hc + normal * hr * 0.6 * rng.choice([-1.0, 1.0])
    paint(img, ellipse_mask(xs, ys, ear[0], ear[1], hr * 0.55, hr * 0.3, angle + 0.9),
          shade(colour, rng.uniform(0.4, 0.7)))


def draw_distractors(img, xs, ys, rng, size):
    h, w = xs.shape
    for _ in range(rng.integers(0, 5)):
        colour = any_colour(rng, s=(0.1, 0.9), v=(0.2, 1.0))
        x, y = rng.uniform(0, w), rng.uniform(0, h)
        r = size * rng.uniform(0.03, 0.09)
        kind = rng.integers(0, 3)
        if kind == 0:
            mask = ellipse_mask(xs, ys, x, y, r, r, 0.0)
        elif kind == 1:
            mask = convex_mask(xs, ys, ellipse_points(x, y, r, r * rng.uniform(0.5, 1.0),
                                                      rng.uniform(0, math.pi), n=4))
        else:
            ang = rng.uniform(0, math.pi)
            d = np.array([math.cos(ang), math.sin(ang)]) * r * 2.5
            n = np.array([-d[1], d[0]]) / (np.linalg.norm(d) + 1e-9) * 0.8
            p = np.array([x, y])
            mask = convex_mask(xs, ys, [p - d + n, p - d - n, p + d - n, p + d + n])
        paint(img, mask, colour)


def render(rng, cls):
    """One image of class `cls` (0 cat, 1 dog) as a PIL RGB image, and its format."""
    # Non-square, but not by much: the image folder reader stretches every image to
    # the input's square, and a 3:1 image squashed to 1:1 would turn a round cat
    # head into a dog-like elongated blob.
    w = int(rng.integers(MIN_SIDE, MAX_SIDE + 1))
    h = int(np.clip(round(w * math.exp(rng.uniform(-MAX_LOG_ASPECT, MAX_LOG_ASPECT))), MIN_SIDE, MAX_SIDE))
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float64) + 0.5
    # background: a gradient between two colours in a random direction
    c0 = any_colour(rng, s=(0.0, 0.8), v=(0.15, 0.95))
    c1 = any_colour(rng, s=(0.0, 0.8), v=(0.15, 0.95))
    ang = rng.uniform(0, 2 * math.pi)
    g = (xs * math.cos(ang) + ys * math.sin(ang))
    g = (g - g.min()) / max(g.max() - g.min(), 1e-9)
    img = c0[None, None, :] * (1 - g[..., None]) + c1[None, None, :] * g[..., None]
    size = min(w, h) * rng.uniform(0.9, 1.25)
    draw_distractors(img, xs, ys, rng, size)
    colour = foreground_colour(rng, cls)
    if cls == 0:
        draw_cat(img, xs, ys, rng, colour, size)
    else:
        draw_dog(img, xs, ys, rng, colour, size)
    img += rng.normal(0.0, rng.uniform(3.0, 18.0), img.shape)
    pil = Image.fromarray(np.clip(np.rint(img), 0, 255).astype(np.uint8), "RGB")
    if rng.random() < 0.3:
        pil = pil.filter(ImageFilter.GaussianBlur(radius=float(rng.uniform(0.4, 1.2))))
    if rng.random() < 0.5:
        return pil, "png", None
    return pil, "jpg", int(rng.integers(70, 96))


def prepare(out):
    """Create OUT/cat and OUT/dog; remove images an earlier run wrote there; refuse an
    OUT that holds other folders (they would be classes)."""
    os.makedirs(out, exist_ok=True)
    others = [e for e in sorted(os.listdir(out))
              if e not in CLASSES and os.path.isdir(os.path.join(out, e))]
    if others:
        sys.exit(f"make_dataset: '{out}' holds folders other than {' and '.join(CLASSES)} "
                 f"({', '.join(others)}); an image folder reads every folder as a class. "
                 "Choose another --out or remove them.")
    for name in CLASSES:
        folder = os.path.join(out, name)
        os.makedirs(folder, exist_ok=True)
        for entry in os.listdir(folder):
            if OUR_FILE.match(entry):
                os.remove(os.path.join(folder, entry))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=DEFAULT_OUT,
                        help="folder of the tree, OUT/cat and OUT/dog "
                             "(default: build/catsdogs in the repository, where run.json looks)")
    parser.add_argument("--count", type=int, default=3000,
                        help="images in all, half of each class (default 3000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of everything drawn (default 0)")
    args = parser.parse_args(argv)
    if args.count < 2:
        parser.error("--count must be at least 2")

    start = time.time()
    prepare(args.out)
    counts = {"png": 0, "jpg": 0}
    per_class = [0, 0]
    total_bytes = 0
    widths, heights = [], []
    for i in range(args.count):
        cls = i % 2
        rng = np.random.default_rng([args.seed, i])
        pil, fmt, quality = render(rng, cls)
        buf = io.BytesIO()
        if fmt == "png":
            pil.save(buf, format="PNG", optimize=False)
        else:
            pil.save(buf, format="JPEG", quality=quality, subsampling=0 if quality >= 90 else 2)
        data = buf.getvalue()
        name = f"{CLASSES[cls]}_{i // 2:05d}.{fmt}"
        with open(os.path.join(args.out, CLASSES[cls], name), "wb") as f:
            f.write(data)
        counts[fmt] += 1
        per_class[cls] += 1
        total_bytes += len(data)
        widths.append(pil.width)
        heights.append(pil.height)
    seconds = time.time() - start
    print(f"make_dataset: {args.count} images in {args.out}: {per_class[0]} cat, {per_class[1]} dog; "
          f"{counts['png']} PNG, {counts['jpg']} JPEG; {min(widths)}..{max(widths)} x "
          f"{min(heights)}..{max(heights)} px; {total_bytes / 2**20:.1f} MiB; seed {args.seed}; "
          f"{seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
