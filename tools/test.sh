#!/usr/bin/env bash
# The whole test suite, as CI runs it: install what is missing; release build (gcc) with unit and
# integration tests; a clang build with AddressSanitizer+UndefinedBehaviorSanitizer that runs
# the unit tests and the libFuzzer targets (30 s each); a clang build with ThreadSanitizer that
# runs the unit tests (race_stress among them: produce/fetch/lookup/scan/changelog against topic
# deletion, growth, config changes, retention, compaction and checkpoints). The sanitizer builds
# compile only what they run (tools/unit_targets.py).
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-2}
# ccache (installed by setup.sh, picked up by meson) may reuse objects built in another checkout:
# paths are rewritten relative to the tree and the working directory is not hashed, so the -g of
# the sanitizer build does not make every clone miss.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
FUZZ_SECONDS=${FUZZ_SECONDS:-30}

bash tools/setup.sh

echo "== release build (gcc): unit + integration tests"
[ -f build/build.ninja ] || meson setup build --buildtype=release
ninja -C build -j"$JOBS"
meson test -C build --num-processes "$JOBS" --print-errorlogs

echo "== sanitizer build (clang, ASan+UBSan): unit tests + fuzzers"
if [ ! -f build-san/build.ninja ]; then
  CC=clang CXX=clang++ meson setup build-san --buildtype=debugoptimized \
    -Db_sanitize=address,undefined -Db_lundef=false -Dfuzzing=true
fi
mapfile -t SAN_TARGETS < <(/usr/bin/python3 tools/unit_targets.py build-san --fuzzers)
ninja -C build-san -j"$JOBS" "${SAN_TARGETS[@]}"
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
  meson test -C build-san --suite unit --no-rebuild --num-processes "$JOBS" --print-errorlogs \
  --timeout-multiplier 2
FUZZ_SECONDS="$FUZZ_SECONDS" bash test/fuzz/run.sh build-san

echo "== thread sanitizer build (clang, TSan): unit tests"
JOBS="$JOBS" bash tools/tsan.sh
echo "== all tests passed"
