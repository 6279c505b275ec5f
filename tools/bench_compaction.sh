#!/usr/bin/env bash
# Produce p99 latency with and without a concurrent compaction of a large topic.
# Starts a fresh strata-broker on a temporary log dir, fills a compacted topic with UPDATES records
# over KEYS keys (cleaning held back), measures acks=all produce latency on another topic without
# compaction, then again while the cleaner compacts the big topic. Record results in
# docs/benchmarks.md ("Produce latency during compaction").
#
# usage: tools/bench_compaction.sh
# environment:
#   BUILD_DIR   meson build dir (default build); BROKER overrides the broker binary
#   UPDATES     records written to the compacted topic (default 2000000, 100-byte values)
#   KEYS        distinct keys (default 10000)
#   PROBES      latency samples per phase (default 3000, at 500/s)
#   CLEANER_RATE  log.cleaner.io.max.bytes.per.second (default: unthrottled, Kafka's default)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
build_dir=${BUILD_DIR:-build}
broker=${BROKER:-$build_dir/broker/strata-broker}
if [[ -z ${BROKER:-} ]]; then
  [[ -d $build_dir ]] || meson setup "$build_dir"
  ninja -C "$build_dir" -j1 broker/strata-broker >/dev/null
fi
data=$(mktemp -d "${TMPDIR:-/tmp}/strata-bench-compaction-XXXXXX")
log=$data/broker.log
overrides=(--override listeners=PLAINTEXT://127.0.0.1:0 --override "log.dirs=$data/logs"
           --override metrics.listener=127.0.0.1:0 --override schema.registry.listener=http://127.0.0.1:0
           --override log.cleaner.backoff.ms=200 --override log.roll.ms=500)
if [[ -n ${CLEANER_RATE:-} ]]; then
  overrides+=(--override "log.cleaner.io.max.bytes.per.second=$CLEANER_RATE")
fi
"$broker" "${overrides[@]}" >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$data"' EXIT
port=""
for _ in $(seq 1 100); do
  port=$(grep -oE 'listening on PLAINTEXT://127.0.0.1:[0-9]+' "$log" | grep -oE '[0-9]+$' || true)
  [[ -n $port ]] && break
  sleep 0.1
done
[[ -n $port ]] || { echo "broker did not start" >&2; cat "$log" >&2; exit 1; }

echo -e "phase\tprobes\tp50_ms\tp99_ms\tmax_ms\tcompaction"
/usr/bin/python3 tools/bench/compaction_latency.py "127.0.0.1:$port" "$data/logs/big-0" \
  "${UPDATES:-2000000}" "${KEYS:-10000}" "${PROBES:-3000}"
echo "--- cleaner log lines:"
grep -E 'cleaned big-0' "$log" || true
