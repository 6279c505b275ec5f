#!/usr/bin/env bash
# Quick start: install what is missing, build, and run the broker on the default config
# (127.0.0.1:9092, data under ./data). Extra arguments go to strata-broker (e.g. --override k=v).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
[ -f build/build.ninja ] || meson setup build --buildtype=release
ninja -C build -j2 broker/strata-broker
exec ./build/broker/strata-broker --config config/server.properties "$@"
