#!/usr/bin/env bash
# Long soaks against a release build, outside CI (docs/benchmarks.md, "Soak: abusive clients").
#
#   tools/soak.sh cycles [N]    the kill -9 cycle test (test/integration/test_kill_cycles.py) with
#   tools/soak.sh [N]           N cycles (default 100): a producer, a PK table and a consumer group
#                               through N random kill -9 + restarts, every acknowledged record checked
#   tools/soak.sh load [ARGS]   the abusive-clients soak (tools/perf/soak_load.py): a well-behaved
#                               producer/consumer measured unloaded, then while 10,000 idle
#                               connections, 1,000 slowloris connections, clients that never read,
#                               decompression bombs and amplifying Lookups are held against the
#                               same broker; checks peak RSS (<= 1 GiB), throughput (>= 0.9x the
#                               unloaded run) and that nothing crashed. ARGS go to soak_load.py
#                               (--help; e.g. --idle 500 --slowloris 50 --duration 10 for a quick run)
#
# BUILD_DIR=build by default; the broker is built there first (ninja) unless STRATA_BROKER names a
# binary to use as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
mode=cycles
case "${1:-}" in
  cycles) mode=cycles; shift ;;
  load) mode=load; shift ;;
  ''|[0-9]*) ;;
  *) echo "usage: tools/soak.sh [cycles] [N] | tools/soak.sh load [soak_load.py args]" >&2; exit 2 ;;
esac
if [[ -z "${STRATA_BROKER:-}" ]]; then
  ninja -C "$BUILD_DIR" -j2 broker/strata-broker
  export STRATA_BROKER="$PWD/$BUILD_DIR/broker/strata-broker"
fi
if [[ $mode == load ]]; then
  exec /usr/bin/python3 tools/perf/soak_load.py "$@"
fi
CYCLES=${1:-100}
STRATA_KILL_CYCLES="$CYCLES" /usr/bin/python3 test/integration/test_kill_cycles.py
