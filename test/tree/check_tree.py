#!/usr/bin/env python3
"""Structural checks of the source tree, run by the test suite (suite 'tree').

Fails (exit 1, one line per finding) when:
  - an #include runs against the layering: broker -> pkindex -> storage -> protocol, and
    tools/cli -> tools/client -> protocol (tools/perf and tools/dump may use pkindex and storage as
    libraries; nothing below broker/ includes broker/);
  - PkState's write mutex leaks out of pkindex (the write sequence is pkindex's own);
  - an extension API key (16000-16099) is written as a literal in product code outside its table,
    protocol/ext/api_keys.h (tests keep their own literals as an independent check);
  - a comment in product code carries a ticket tag ("issue 5", "engineer H1", "(H2)");
  - a file in broker/ other than broker.cc and main.cc includes broker/broker.h (handlers and
    services get what they use through broker/services.h, never the broker's lifecycle);
  - a source file is longer than 800 lines.
Usage: check_tree.py SOURCE_ROOT
"""
import os
import re
import sys

MAX_LINES = 800
SOURCE_EXT = (".cc", ".h")
PRODUCT_DIRS = ("broker", "pkindex", "storage", "protocol", "tools")
SKIP_DIRS = {"node_modules", ".git", "golden", "corpus"}

# Which top-level areas each area may include (besides itself and system headers).
ALLOWED = {
    "protocol": {"protocol"},
    "storage": {"storage", "protocol"},
    "pkindex": {"pkindex", "storage", "protocol"},
    "broker": {"broker", "pkindex", "storage", "protocol"},
    "tools/client": {"tools/client", "protocol"},
    "tools/cli": {"tools/cli", "tools/client", "protocol"},
    "tools/perf": {"tools/perf", "tools/client", "pkindex", "storage", "protocol"},
    "tools/dump": {"tools/dump", "pkindex", "storage", "protocol"},
}

# The only product files that see the Broker itself (its lifecycle); the rest use Services.
BROKER_H_USERS = {"broker/broker.cc", "broker/main.cc"}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
EXT_KEY = re.compile(r"\b160\d\d\b")
TICKET = re.compile(r"\bissues? \d+\b|\bengineer H\d\b|\(H\d\)|\bH\d\b", re.IGNORECASE)


def area_of(rel):
    parts = rel.split("/")
    if parts[0] == "tools" and len(parts) > 2:
        return "tools/" + parts[1]
    return parts[0]


def code_and_comment(line):
    """Splits a line into its code part and its // comment part (string literals kept in code)."""
    in_str = False
    i = 0
    while i < len(line):
        c = line[i]
        if c == "\\" and in_str:
            i += 2
            continue
        if c == '"':
            in_str = not in_str
        elif not in_str and line.startswith("//", i):
            return line[:i], line[i:]
        i += 1
    return line, ""


def source_files(root):
    for top in PRODUCT_DIRS + ("test",):
        base = os.path.join(root, top)
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
            for f in filenames:
                if f.endswith(SOURCE_EXT):
                    path = os.path.join(dirpath, f)
                    yield os.path.relpath(path, root).replace(os.sep, "/"), path


def check(root):
    findings = []
    for rel, path in source_files(root):
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().split("\n")
        if len(lines) - 1 > MAX_LINES:
            findings.append(f"{rel}: {len(lines) - 1} lines (limit {MAX_LINES})")
        product = rel.split("/")[0] in PRODUCT_DIRS
        area = area_of(rel)
        in_block_comment = False
        for n, line in enumerate(lines, 1):
            m = INCLUDE.match(line)
            if m and area in ALLOWED:
                target = m.group(1)
                if "/" in target and not target.endswith(".pb.h") or target.startswith("protocol/"):
                    t_area = area_of(target)
                    if t_area in ALLOWED or t_area in ("test",):
                        if t_area not in ALLOWED[area]:
                            findings.append(f"{rel}:{n}: {area} must not include {target}")
                if target == "broker/broker.h" and area == "broker" and rel not in BROKER_H_USERS:
                    findings.append(f"{rel}:{n}: includes broker/broker.h (use broker/services.h)")
            if not product:
                continue
            code, comment = code_and_comment(line)
            stripped = code.strip()
            if in_block_comment:
                comment, code = line, ""
                if "*/" in line:
                    in_block_comment = False
            elif "/*" in code:
                before, _, after = code.partition("/*")
                code, comment = before, "/*" + after + comment
                in_block_comment = "*/" not in after
            if "lock_writes" in code and not rel.startswith("pkindex/"):
                findings.append(f"{rel}:{n}: PkState's write lock used outside pkindex")
            if EXT_KEY.search(code) and rel != "protocol/ext/api_keys.h":
                findings.append(f"{rel}:{n}: literal extension API key (use protocol/ext/api_keys.h)")
            if TICKET.search(comment):
                findings.append(f"{rel}:{n}: ticket tag in a comment: {comment.strip()[:80]}")
            del stripped
    return findings


def self_test():
    """The checks find what they are for: a tree with one violation of each kind."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        def put(rel, text):
            os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
            with open(os.path.join(d, rel), "w") as fh:
                fh.write(text)
        put("storage/a.h", '#include "pkindex/pk_state.h"\n')
        put("tools/client/b.cc", '#include "pkindex/table_config.h"\n#include "protocol/x.h"\n')
        put("broker/handlers/g.cc", '#include "broker/broker.h"\n')
        put("broker/c.cc", "auto l = s.lock_writes();\nint k = 16003;  // fine: 16004 in a comment\n")
        put("pkindex/d.cc", "// Owned by pkindex (issue 5).\nint x;  // H2\n")
        put("protocol/e.cc", "\n" * (MAX_LINES + 1))
        put("test/unit/f.cc", "int k = 16000;  // issue 5\n")  # tests may
        got = check(d)
    want = ["storage/a.h:1: storage must not include", "tools/client/b.cc:1: tools/client must",
            "broker/c.cc:1: PkState's write lock", "broker/c.cc:2: literal extension API key",
            "pkindex/d.cc:1: ticket tag", "pkindex/d.cc:2: ticket tag", "protocol/e.cc: 801 lines",
            "broker/handlers/g.cc:1: includes broker/broker.h"]
    ok = len(got) == len(want) and all(any(g.startswith(w) for g in got) for w in want)
    if not ok:
        print("self-test failed; findings were:\n  " + "\n  ".join(got))
    return ok


def main():
    if not self_test():
        return 1
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    findings = check(os.path.abspath(root))
    for f in findings:
        print(f)
    print(f"tree checks: {len(findings)} finding(s)")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
