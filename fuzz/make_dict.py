#!/usr/bin/env python3
"""make_dict.py OUT GRAMMAR.g4... [--builtins Builtins.def] [--words WORD...]

Writes a libFuzzer dictionary: every quoted literal of the ANTLR grammars (keywords,
operators), the names of the language's builtins, initialisers and optimizers
(Builtins.def) and the extra WORDs (axis names the examples use), one per line.
Made at build time, so that it never misses a keyword the grammar gains.
"""
import re
import sys


def main():
    args = sys.argv[1:]
    out, words = args.pop(0), set()
    while args:
        arg = args.pop(0)
        if arg == "--builtins":
            text = open(args.pop(0)).read()
            words.update(re.findall(r"^SHARDC_(?:OP|INIT|OPTIMIZER)\((\w+)", text, re.M))
        elif arg == "--words":
            words.update(args)
            args = []
        else:
            # Left to right, comments skipped whole: an apostrophe in a comment
            # starts no literal.
            for token in re.findall(r"//[^\n]*|/\*.*?\*/|'(?:[^'\\\n]|\\.)+'", open(arg).read(),
                                    re.S):
                if token.startswith("'"):
                    words.add(token[1:-1].encode().decode("unicode_escape"))
    with open(out, "w") as dictionary:
        for word in sorted(words):
            escaped = "".join(c if c.isprintable() and c not in '"\\' else "\\x%02x" % ord(c)
                              for c in word)
            dictionary.write('"%s"\n' % escaped)


if __name__ == "__main__":
    main()
