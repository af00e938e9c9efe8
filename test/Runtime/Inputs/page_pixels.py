"""page_pixels.py SHOT.png: whether a screenshot shows something: the share of pixels
that are not the background and the number of colours, printed as a verdict."""
import sys

from PIL import Image

image = Image.open(sys.argv[1]).convert("RGB")
pixels = list(image.getdata())
background = max(set(pixels[:5000]), key=pixels[:5000].count)
drawn = sum(1 for p in pixels if p != background) / len(pixels)
colours = len(set(pixels))
verdict = "drawn" if drawn > 0.02 and colours > 16 else "blank"
print(f"page_pixels: {drawn:.1%} of the pixels drawn, {colours} colours: {verdict}")
