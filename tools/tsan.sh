#!/usr/bin/env bash
# The unit suite under ThreadSanitizer: a clang build in build-tsan with -Db_sanitize=thread (no
# fuzzers: libFuzzer does not combine with TSan here), run with test/tsan.supp, which suppresses
# only reports that lie inside Debian's uninstrumented libraries. A report that has a frame of
# our own code is a bug to fix, not to suppress. halt_on_error: the first report fails the test.
# race_stress runs its default STRATA_STRESS_SECONDS (8): under TSan it is still served far
# past the counts it asserts.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-2}
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
if [ ! -f build-tsan/build.ninja ]; then
  CC=clang CXX=clang++ meson setup build-tsan --buildtype=debugoptimized \
    -Db_sanitize=thread -Db_lundef=false
fi
# Only what the unit suite runs (its test programs, with the libraries they link): the tools,
# integration helpers, fuzzers and the broker executable are not built here. No unit test runs
# another program of ours (they start the broker in-process), so each test's own program is all.
mapfile -t TARGETS < <(meson introspect build-tsan --tests | /usr/bin/python3 -c '
import json, os, sys
root = os.path.realpath("build-tsan")
out = set()
for t in json.load(sys.stdin):
    if not any(s == "unit" or s.endswith(":unit") for s in t["suite"]):
        continue
    exe = os.path.realpath(t["cmd"][0])
    if exe.startswith(root + "/"):
        out.add(os.path.relpath(exe, root))
print("\n".join(sorted(out)))')
ninja -C build-tsan -j"$JOBS" "${TARGETS[@]}"
# symbolize_inline_frames=0: with inlined frames, llvm-symbolizer's answers for the long Asio
# template names overflow the runtime's buffer and the frames of a report come out shifted.
TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:symbolize_inline_frames=0"
TSAN_OPTIONS="$TSAN_OPTIONS:suppressions=$PWD/test/tsan.supp" \
  meson test -C build-tsan --suite unit --no-rebuild --num-processes "$JOBS" --print-errorlogs
