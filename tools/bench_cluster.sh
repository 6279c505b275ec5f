#!/usr/bin/env bash
# Cluster benchmark (docs/benchmarks.md "Cluster"): one etcd member and three strata-broker
# processes on free loopback ports, started here (through test/integration/cluster_harness.py)
# and removed at the end. Not run in CI. Measures, on the same cluster in one invocation:
#   - produce throughput of an RF=3 topic with acks=all vs an RF=1 topic with acks=1, paired
#     rounds (alternating which goes first), 1 KiB and 100 B records, medians, spread, and broker
#     CPU-s per GiB (utime+stime of the three brokers from /proc) ( goal: ratio >= 0.35x);
#   - single-record latency at a low fixed rate, acks=all vs acks=1 (a fixed wait shows here);
#   - failover: kill -9 of a partition's leader -> first acknowledged acks=all write on the new
#     leader, CLUSTER_KILLS times per lease TTL ( goal: <= TTL + 2 s).
#
# usage: tools/bench_cluster.sh          (also: BENCH_SECTIONS=cluster tools/bench.sh)
# environment:
#   BENCH_SCALE         multiplies the record counts (300k x 1 KiB, 2M x 100 B; default 1)
#   CLUSTER_ROUNDS      paired rounds per record size (default 5)
#   CLUSTER_PARTITIONS  partitions of each throughput topic (default 6: 2 leaders per broker)
#   CLUSTER_KILLS       leader kills per lease TTL (default 20; 0 = no failover runs)
#   CLUSTER_TTLS        comma list of coordination.lease.ttl.seconds to measure (default 6,2)
#   CLUSTER_PK_KEYS     keys of the PK failover table (default 1000000; time to the first correct Lookup)
#   CLUSTER_PK_KILLS    PK leader kills per lease TTL (default 3; 0 = skip)
#   BUILD_DIR           meson build dir (default build; set up if missing); BENCH_JOBS ninja -j
#   BROKER              strata-broker binary (default $BUILD_DIR/broker/strata-broker, built)
#   CLUSTER_BROKER_PROPS space-separated k=v broker overrides (e.g. replica.fetch.max.bytes=...)
#   BENCH_RAW           if set, the results (JSON lines) and the brokers' logs are kept there
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
build_dir=${BUILD_DIR:-build}
if [[ ! -d $build_dir ]]; then
  meson setup "$build_dir" --buildtype=release
fi
targets=(tools/perf/strata-perf tools/cli/strata)
if [[ -z ${BROKER:-} ]]; then
  targets+=(broker/strata-broker)
  BROKER=$build_dir/broker/strata-broker
fi
ninja -C "$build_dir" -j"${BENCH_JOBS:-1}" "${targets[@]}" >/dev/null
perf=$build_dir/tools/perf/strata-perf
for f in "$perf" "$BROKER"; do
  [[ -x $f ]] || { echo "bench_cluster.sh: missing executable $f" >&2; exit 1; }
done
command -v "${STRATA_ETCD:-/usr/bin/etcd}" >/dev/null || {
  echo "bench_cluster.sh: etcd missing (tools/setup.sh installs it)" >&2; exit 1; }
/usr/bin/python3 -c 'import confluent_kafka' 2>/dev/null || {
  echo "bench_cluster.sh: python3-confluent-kafka missing (tools/setup.sh installs it)" >&2; exit 1; }

out=${BENCH_RAW:-$(mktemp -d "${TMPDIR:-/tmp}/strata-bench-cluster.XXXXXX")}
mkdir -p "$out"
results=$out/cluster.jsonl
: >"$results"
echo "bench_cluster.sh: results in $results" >&2
props=()
for kv in ${CLUSTER_BROKER_PROPS:-}; do props+=(--broker-prop "$kv"); done
STRATA_BROKER=$(realpath "$BROKER") /usr/bin/python3 tools/perf/bench_cluster.py \
  --perf "$(realpath "$perf")" --results "$results" --logs "$out" \
  --scale "${BENCH_SCALE:-1}" --rounds "${CLUSTER_ROUNDS:-5}" \
  --partitions "${CLUSTER_PARTITIONS:-6}" --kills "${CLUSTER_KILLS:-20}" \
  --ttls "${CLUSTER_TTLS:-6,2}" --pk-keys "${CLUSTER_PK_KEYS:-1000000}" \
  --pk-kills "${CLUSTER_PK_KILLS:-3}" ${props[@]+"${props[@]}"}
if [[ -z ${BENCH_RAW:-} ]]; then rm -rf "$out"; fi
