#!/usr/bin/env bash
# Runs every libFuzzer target of a build dir for $FUZZ_SECONDS (default 30) each, from the seed
# corpus in test/fuzz/corpus/<target>/ (a scratch copy: findings never dirty the tree).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build-san}
SECONDS_EACH=${FUZZ_SECONDS:-30}
for target in request_decode_fuzzer ext_decode_fuzzer dump_scan_fuzzer produce_path_fuzzer \
  segment_recovery_fuzzer state_files_fuzzer connection_framing_fuzzer \
  sasl_fuzzer schema_registry_fuzzer; do
  work=$(mktemp -d)
  [ -d "test/fuzz/corpus/$target" ] && cp -r "test/fuzz/corpus/$target/." "$work/"
  # Real client frames (test/unit/messages/golden) are the best seeds for request decoding.
  if [ "$target" = request_decode_fuzzer ] && ls test/unit/messages/golden/*.bin >/dev/null 2>&1; then
    cp test/unit/messages/golden/*.bin "$work/"
  fi
  echo "fuzzing $target for ${SECONDS_EACH}s"
  "$BUILD/test/fuzz/$target" -max_total_time="$SECONDS_EACH" -max_len=65536 -rss_limit_mb=2048 \
    -print_final_stats=1 "$work" 2>&1 | tail -n 15
  rm -rf "$work"
done
