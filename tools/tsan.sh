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
# Only what the unit suite runs (tools/unit_targets.py says why that is enough).
mapfile -t TARGETS < <(/usr/bin/python3 tools/unit_targets.py build-tsan)
ninja -C build-tsan -j"$JOBS" "${TARGETS[@]}"
# symbolize_inline_frames=0: with inlined frames, llvm-symbolizer's answers for the long Asio
# template names overflow the runtime's buffer and the frames of a report come out shifted.
# --timeout-multiplier: test timeouts are sized for the release build; TSan runs the pkindex suite
# ~4x slower (110 s alone, over 120 s beside another suite on 2 cores).
TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:symbolize_inline_frames=0"
TSAN_OPTIONS="$TSAN_OPTIONS:suppressions=$PWD/test/tsan.supp" \
  meson test -C build-tsan --suite unit --no-rebuild --num-processes "$JOBS" --print-errorlogs \
    --timeout-multiplier 3
