#!/usr/bin/env python3
"""Strata protocol code generator (python3 stdlib only).

Reads schema files (format: docs/protocol-schemas.md) and writes, into --out:
  <api_snake>.h / <api_snake>.cc for each schema, messages.h, api_table.h, api_table.cc
or, with --test FILE, the generated round-trip gtest source.

Usage: generate.py --out DIR SCHEMA...      |   generate.py --test FILE SCHEMA...
"""

import argparse
import os
import sys

sys.dont_write_bytecode = True  # keep the source tree free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cpp_emitter  # noqa: E402
import schema_parser  # noqa: E402
import test_emitter  # noqa: E402


def write_file(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", help="output directory for message code")
    ap.add_argument("--test", help="output file for the round-trip test")
    ap.add_argument("schemas", nargs="+")
    args = ap.parse_args()
    try:
        apis = [schema_parser.parse_file(p) for p in args.schemas]
        keys = {}
        for a in apis:
            if a.key in keys:
                raise schema_parser.SchemaError("api key %d defined in %s and %s"
                                                % (a.key, keys[a.key], a.path))
            keys[a.key] = a.path
            expected = os.path.splitext(os.path.basename(a.path))[0]
            if expected != a.snake:
                raise schema_parser.SchemaError("%s: file must be named %s.schema"
                                                % (a.path, a.snake))
        if args.out:
            os.makedirs(args.out, exist_ok=True)
            for a in apis:
                write_file(os.path.join(args.out, a.snake + ".h"), cpp_emitter.emit_header(a))
                write_file(os.path.join(args.out, a.snake + ".cc"), cpp_emitter.emit_source(a))
            write_file(os.path.join(args.out, "messages.h"),
                             cpp_emitter.emit_messages_header(apis))
            h, c = cpp_emitter.emit_api_table(apis)
            write_file(os.path.join(args.out, "api_table.h"), h)
            write_file(os.path.join(args.out, "api_table.cc"), c)
        if args.test:
            write_file(args.test, test_emitter.emit_test(apis))
    except (schema_parser.SchemaError, ValueError) as e:
        print("generate.py: error: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
