#!/usr/bin/env python3
"""Writes W4's corpus: the text of Debian's `fortunes` package as one file of bytes.

    /usr/bin/python3 examples/gpt/make_corpus.py [--out build/fortunes.txt]

The package's fortune files (/usr/share/games/fortunes, not their `.dat` indexes or
`.u8` links) are concatenated in the order of their names. run.json reads the file as
bytes: its first 90 % of 128-byte windows train, the last 10 % validate.
"""
import argparse
import os
import sys

SOURCE = "/usr/share/games/fortunes"
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def fortune_files(folder):
    names = sorted(os.listdir(folder))
    return [os.path.join(folder, n) for n in names
            if not n.endswith((".dat", ".u8")) and not os.path.islink(os.path.join(folder, n))
            and os.path.isfile(os.path.join(folder, n))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(REPO_ROOT, "build", "fortunes.txt"),
                        help="the file to write (default: build/fortunes.txt in the "
                             "repository, where run.json looks)")
    args = parser.parse_args()
    files = fortune_files(SOURCE) if os.path.isdir(SOURCE) else []
    if not files:
        sys.exit(f"make_corpus.py: error: no fortune files in {SOURCE}: install Debian's "
                 "`fortunes` package (scripts/setup.sh does)")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    total = 0
    with open(args.out + ".tmp", "wb") as out:
        for path in files:
            with open(path, "rb") as f:
                data = f.read()
            out.write(data)
            total += len(data)
    os.replace(args.out + ".tmp", args.out)
    print(f"{args.out}: {total} bytes from {len(files)} files of {SOURCE}")


if __name__ == "__main__":
    main()
