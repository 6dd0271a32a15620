#!/usr/bin/env python3
"""Writes uca-9.0.0-primary.txt from Unicode's allkeys-9.0.0.txt (DUCET, UCA 9.0.0).

utf8mb4_0900_ai_ci compares at the primary level only, so only each entry's code points
and its non-zero primary weights are kept: `CODEPOINT[ CODEPOINT...];WEIGHT[ WEIGHT...]`
in hex, an empty weight list for characters ignorable at that level. Unicode's copyright
header is kept. The input comes with the `pyuca` package on PyPI:

    pip download pyuca --no-deps && unzip pyuca-*.whl
    python3 strip_allkeys.py pyuca/allkeys-9.0.0.txt > uca-9.0.0-primary.txt
"""
import re
import sys

ELEMENT = re.compile(r"\[[.*]([0-9A-F]{4})\.[0-9A-F]{4}\.[0-9A-F]{4}\]")


def main(path):
    with open(path, encoding="utf-8") as allkeys:
        lines = allkeys.read().splitlines()
    header = []
    for line in lines:
        if not line.startswith("#"):
            break
        header.append(line)
    print("# Primary weights of the DUCET, derived by strip_allkeys.py from:")
    for line in header[:4]:
        print(line)
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("@"):
            continue
        code_points, elements = line.split(";", 1)
        primaries = [w for w in ELEMENT.findall(elements) if w != "0000"]
        print(" ".join(code_points.split()) + ";" + " ".join(primaries))


if __name__ == "__main__":
    main(sys.argv[1])
