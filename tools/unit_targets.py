#!/usr/bin/env python3
"""Prints the ninja targets a sanitizer build needs: the programs of the unit suite, and with
--fuzzers the libFuzzer targets under test/fuzz. The sanitizer builds in tools/test.sh and
tools/tsan.sh build only these (no tools, integration helpers or broker executable): no unit
test runs another program of ours, they start the broker in-process.
Usage: tools/unit_targets.py BUILD_DIR [--fuzzers]"""
import json
import os
import subprocess
import sys


def main():
    build = os.path.realpath(sys.argv[1])
    out = set()
    tests = json.loads(subprocess.check_output(["meson", "introspect", build, "--tests"]))
    for t in tests:
        if any(s == "unit" or s.endswith(":unit") for s in t["suite"]):
            exe = os.path.realpath(t["cmd"][0])
            if exe.startswith(build + "/"):
                out.add(os.path.relpath(exe, build))
    if "--fuzzers" in sys.argv[2:]:
        targets = json.loads(subprocess.check_output(["meson", "introspect", build, "--targets"]))
        for t in targets:
            if t["type"] == "executable" and t["subproject"] is None:
                for f in t["filename"]:
                    rel = os.path.relpath(os.path.realpath(f), build)
                    if rel.startswith("test/fuzz/"):
                        out.add(rel)
    print("\n".join(sorted(out)))


if __name__ == "__main__":
    main()
