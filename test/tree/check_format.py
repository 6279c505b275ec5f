#!/usr/bin/env python3
"""Fails when a C++ source file differs from what clang-format 14 (Debian's clang-format-14, the
version tools/setup.sh installs) makes of it with the committed .clang-format.
Usage: check_format.py SOURCE_ROOT [CLANG_FORMAT]"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from check_tree import source_files  # noqa: E402


def main():
    root = os.path.abspath(sys.argv[1])
    tool = sys.argv[2] if len(sys.argv) > 2 else "clang-format-14"
    files = [path for _, path in source_files(root)]
    bad = []
    for path in files:
        # --assume-filename keeps the include-category rules of the file's own name.
        with open(path, "rb") as fh:
            text = fh.read()
        r = subprocess.run([tool, "--style=file", "--assume-filename=" + path], input=text,
                           capture_output=True, cwd=root)
        if r.returncode != 0 or r.stdout != text:
            bad.append(os.path.relpath(path, root))
    bad = sorted(set(bad))
    for f in bad:
        print(f"{f}: not clang-formatted (run: clang-format-14 -i {f})")
    print(f"format check: {len(files)} files, {len(bad)} not formatted")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
