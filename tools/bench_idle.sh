#!/usr/bin/env bash
# What idle primary-key partitions cost the broker (docs/benchmarks.md, "Idle primary-key
# partitions"): for each round, a fresh broker without and then with IDLE_TABLES x 100 idle PK
# partitions (each written a few rows, then left alone); reports the RSS and descriptors per idle
# partition, and the load of a busy 4-partition table beside them (records/s, broker CPU, flushes
# of its memtables) as a ratio to the run without idle partitions.
#
# usage: tools/bench_idle.sh
# environment:
#   BUILD_DIR     meson build dir (default build; must be built: strata-broker, strata-perf)
#   IDLE_TABLES   idle PK tables of 100 partitions (default 2; each PK partition reserves 76
#                 descriptors of the broker's budget, so ~240 fit under a 20,000 open-files limit)
#   BUSY_RECORDS  records loaded into the busy table (default 1000000, 100 B, distinct keys)
#   ROUNDS        paired rounds (default 2)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
build_dir=${BUILD_DIR:-build}
idle_tables=${IDLE_TABLES:-2}
busy_records=${BUSY_RECORDS:-1000000}
rounds=${ROUNDS:-2}
broker=$build_dir/broker/strata-broker
perf=$build_dir/tools/perf/strata-perf
for f in "$broker" "$perf"; do
  [[ -x $f ]] || { echo "bench_idle.sh: missing $f (build first)" >&2; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/strata-bench-idle.XXXXXX")
pid=
cleanup() {
  [[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

rss_kib() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
fds() { ls "/proc/$1/fd" | wc -l; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# run IDLE -> "rss_before rss_idle fds_before fds_idle records_per_s cpu_ticks flushes"
run() {
  local idle=$1 d=$work/run-$1
  rm -rf "$d" && mkdir -p "$d/data"
  "$broker" --override listeners=PLAINTEXT://127.0.0.1:0 --override metrics.listener=127.0.0.1:0 \
    --override schema.registry.listener=http://127.0.0.1:0 --override "log.dirs=$d/data" \
    >"$d/broker.log" 2>&1 &
  pid=$!
  local port=
  for _ in $(seq 100); do
    port=$(grep -o 'listening on PLAINTEXT://127.0.0.1:[0-9]*' "$d/broker.log" | grep -o '[0-9]*$' || true)
    [[ -n $port ]] && break
    sleep 0.1
  done
  [[ -n $port ]] || { cat "$d/broker.log" >&2; exit 1; }
  local bs=127.0.0.1:$port r0 f0 r1 f1 c0 c1 rate
  r0=$(rss_kib "$pid") f0=$(fds "$pid")
  for ((t = 1; t <= idle; t++)); do
    "$perf" create --bootstrap "$bs" --topic "idle$t" --partitions 100 \
      --config table.type=primary-key >/dev/null
    "$perf" produce --bootstrap "$bs" --topic "idle$t" --num-records 2000 --record-size 100 \
      --key-space 2000 --producer-prop partitioner=murmur2 >/dev/null 2>&1
  done
  sleep 1
  r1=$(rss_kib "$pid") f1=$(fds "$pid")
  "$perf" create --bootstrap "$bs" --topic busy --partitions 4 --config table.type=primary-key >/dev/null
  c0=$(cpu_ticks "$pid")
  rate=$("$perf" produce --bootstrap "$bs" --topic busy --num-records "$busy_records" \
    --record-size 100 --key-space "$busy_records" --producer-prop partitioner=murmur2 2>/dev/null |
    python3 -c 'import json,sys; print(int(json.load(sys.stdin)["records_per_s"]))')
  c1=$(cpu_ticks "$pid")
  kill "$pid" && wait "$pid" 2>/dev/null || true
  pid=
  local flushes
  flushes=$(cat "$d"/data/busy-*/kv/LOG* 2>/dev/null | grep -c '"event": "flush_started"' || true)
  echo "$r0 $r1 $f0 $f1 $rate $((c1 - c0)) $flushes"
}

echo "idle PK partitions: $((idle_tables * 100)); busy table: $busy_records records x 100 B, 4 partitions"
printf '%-6s %-10s %8s %8s %12s %10s %8s\n' round idle KiB/part fds/part records/s cpu_ticks flushes
for ((r = 1; r <= rounds; r++)); do
  read -r _ _ _ _ base_rate base_cpu base_fl <<<"$(run 0)"
  read -r r0 r1 f0 f1 rate cpu fl <<<"$(run "$idle_tables")"
  n=$((idle_tables * 100))
  printf '%-6s %-10s %8s %8s %12s %10s %8s\n' "$r" none - - "$base_rate" "$base_cpu" "$base_fl"
  printf '%-6s %-10s %8s %8s %12s %10s %8s\n' "$r" "$n" $(((r1 - r0) / n)) \
    "$(python3 -c "print(round(($f1 - $f0) / $n, 1))")" "$rate" "$cpu" "$fl"
  python3 -c "print('round $r: busy load with idle partitions / without: %.2fx records/s, %.2fx broker CPU' % ($rate / $base_rate, $cpu / max($base_cpu, 1)))"
done
