#!/usr/bin/env bash
# Long fault soaks, outside CI: the kill -9 cycle test with many cycles (default 100) against a
# release build. Usage: tools/soak.sh [CYCLES] (BUILD_DIR=build by default).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
CYCLES=${1:-100}
ninja -C "$BUILD_DIR" -j2 broker/strata-broker
STRATA_KILL_CYCLES="$CYCLES" STRATA_BROKER="$PWD/$BUILD_DIR/broker/strata-broker" \
  /usr/bin/python3 test/integration/test_kill_cycles.py
