#!/usr/bin/env bash
# Throughput benchmark: librdkafka producer/consumer against librdkafka's in-memory mock cluster
# and against a fresh strata-broker persisting to disk, in one invocation.
# Results and the recorded run live in docs/benchmarks.md.
#
# usage: tools/bench.sh
# environment:
#   BENCH_SCALE   multiplies message counts (default 1: 2M x 100 B and 500k x 1 KiB); 0.1 = quick
#   BENCH_REPEAT  runs per (workload, phase, target); medians are reported (default 5)
#   PARTITIONS    partitions per topic, same for both targets (default 256)
#   BUILD_DIR     meson build dir for the bench tools (default build; set up if missing)
#   BROKER        strata-broker binary (default $BUILD_DIR/broker/strata-broker, built if default)
#   DATA_PARENT   where the broker's temporary log dir is made (default ${TMPDIR:-/tmp})
#   BENCH_RAW     if set, the raw per-run results (TSV) are copied there
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

scale=${BENCH_SCALE:-1}
repeat=${BENCH_REPEAT:-5}
partitions=${PARTITIONS:-256}
build_dir=${BUILD_DIR:-build}
data_parent=${DATA_PARENT:-${TMPDIR:-/tmp}}

# --- build --------------------------------------------------------------------------------
if [[ ! -d $build_dir ]]; then
  meson setup "$build_dir"
fi
targets=(tools/bench/strata-bench tools/bench/mock-cluster)
if [[ -z ${BROKER:-} ]]; then
  targets+=(broker/strata-broker)
  BROKER=$build_dir/broker/strata-broker
fi
ninja -C "$build_dir" -j2 "${targets[@]}" >/dev/null
bench=$build_dir/tools/bench/strata-bench
mock=$build_dir/tools/bench/mock-cluster
for f in "$bench" "$mock" "$BROKER"; do
  [[ -x $f ]] || { echo "bench.sh: missing executable $f" >&2; exit 1; }
done

# --- workloads ----------------------------------------------------------------------------
# name, message count at scale 1, message size
workloads=("100B 2000000 100" "1KiB 500000 1024")
scaled() { python3 -c "import sys; print(max(1, int(round(int(sys.argv[1]) * float(sys.argv[2])))))" "$1" "$scale"; }

topics=()
for w in "${workloads[@]}"; do
  read -r name _ _ <<<"$w"
  for ((r = 1; r <= repeat; r++)); do topics+=("bench-$name-r$r"); done
done

# --- targets ------------------------------------------------------------------------------
work=$(mktemp -d "$data_parent/strata-bench.XXXXXX")
mock_pid=""
broker_pid=""
cleanup() {
  [[ -n $mock_pid ]] && kill "$mock_pid" 2>/dev/null && wait "$mock_pid" 2>/dev/null
  [[ -n $broker_pid ]] && kill "$broker_pid" 2>/dev/null && wait "$broker_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

mock_args=()
for t in "${topics[@]}"; do mock_args+=("$t:$partitions"); done
"$mock" "${mock_args[@]}" >"$work/mock.out" 2>"$work/mock.err" &
mock_pid=$!

mkdir -p "$work/data"
"$BROKER" --override listeners=PLAINTEXT://127.0.0.1:0 --override "log.dirs=$work/data" \
  >"$work/broker.log" 2>&1 &
broker_pid=$!

wait_for() {  # file, pattern, what
  for _ in $(seq 100); do
    if grep -q "$2" "$1" 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "bench.sh: $3 did not start; its output:" >&2
  cat "$1" >&2
  exit 1
}
wait_for "$work/mock.out" ':' "mock-cluster"
wait_for "$work/broker.log" 'listening on PLAINTEXT://' "strata-broker"
mock_bootstrap=$(head -1 "$work/mock.out")
strata_port=$(grep -o 'listening on PLAINTEXT://127.0.0.1:[0-9]*' "$work/broker.log" | head -1 |
  grep -o '[0-9]*$')
strata_bootstrap=127.0.0.1:$strata_port

for t in "${topics[@]}"; do
  "$bench" create --bootstrap "$strata_bootstrap" --topic "$t" --partitions "$partitions"
done

# CPU time (utime+stime, in clock ticks) of a process from /proc/<pid>/stat.
clk_tck=$(getconf CLK_TCK)
cpu_ticks() {
  local s
  s=$(<"/proc/$1/stat")
  s=${s##*) }
  # shellcheck disable=SC2086
  set -- $s
  echo $((${12} + ${13}))
}

# --- runs ---------------------------------------------------------------------------------
# Targets alternate run by run so both see the same background load.
raw=$work/results.tsv
printf 'workload\tphase\ttarget\trep\tmsgs\tbytes\tseconds\tmsgs_per_s\tmb_per_s\tserver_cpu_s\n' >"$raw"
run_one() {  # target phase workload rep count size topic
  local target=$1 phase=$2 wname=$3 rep=$4 count=$5 size=$6 topic=$7 bs pid before after json
  if [[ $target == mock ]]; then bs=$mock_bootstrap pid=$mock_pid; else bs=$strata_bootstrap pid=$broker_pid; fi
  before=$(cpu_ticks "$pid")
  if [[ $phase == produce ]]; then
    json=$("$bench" produce --bootstrap "$bs" --topic "$topic" --num "$count" --size "$size" --acks 1)
  else
    json=$("$bench" consume --bootstrap "$bs" --topic "$topic" --num "$count" --partitions "$partitions")
  fi
  after=$(cpu_ticks "$pid")
  python3 - "$json" "$wname" "$phase" "$target" "$rep" "$(((after - before)))" "$clk_tck" >>"$raw" <<'EOF'
import json, sys
j = json.loads(sys.argv[1])
cpu = int(sys.argv[6]) / int(sys.argv[7])
print("\t".join(map(str, [sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], j["msgs"], j["bytes"],
                          j["seconds"], j["msgs_per_s"], j["mb_per_s"], f"{cpu:.2f}"])))
EOF
  echo "  $wname $phase $target r$rep: $json" >&2
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for w in "${workloads[@]}"; do
  read -r name count size <<<"$w"
  count=$(scaled "$count")
  for phase in produce consume; do
    for ((r = 1; r <= repeat; r++)); do
      for target in mock strata; do
        run_one "$target" "$phase" "$count x $name" "$r" "$count" "$size" "bench-$name-r$r"
      done
    done
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
sync
disk_bytes=$(du -sb "$work/data" | cut -f1)
[[ -n ${BENCH_RAW:-} ]] && cp "$raw" "$BENCH_RAW"

# --- report -------------------------------------------------------------------------------
python3 - "$raw" "$partitions" "$repeat" "$disk_bytes" "$(stat -f -c %T "$work/data")" \
  "$load_before" "$load_after" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
parts, repeat, disk, fs = sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
load_before, load_after = sys.argv[6], sys.argv[7]
groups = {}
for r in rows:
    groups.setdefault((r["workload"], r["phase"]), {}).setdefault(r["target"], []).append(r)
def med(rs, k):
    return statistics.median(float(r[k]) for r in rs)
def cpu_per_gib(rs):
    cpu = sum(float(r["server_cpu_s"]) for r in rs)
    gib = sum(int(r["bytes"]) for r in rs) / 2**30
    return cpu / gib if gib else 0.0
print(f"\n{parts} partitions per topic, acks=1, median of {repeat} run(s); MB = 2^20 payload bytes;")
print("server CPU = utime+stime of the target process during the phase, per GiB of payload.\n")
print("| workload | phase | target | msgs/s | MB/s | server CPU-s/GiB |")
print("|---|---|---|---:|---:|---:|")
for (w, ph), t in groups.items():
    for target in ("mock", "strata"):
        rs = t.get(target, [])
        if rs:
            print(f"| {w} | {ph} | {target} | {med(rs, 'msgs_per_s'):,.0f} | {med(rs, 'mb_per_s'):.1f} "
                  f"| {cpu_per_gib(rs):.2f} |")
print("\nStrata/mock: ratio of the medians, and the median of the per-repetition ratios (each")
print("repetition runs mock then Strata back to back, so the paired ratio cancels slow load drift).\n")
print("| workload | phase | Strata/mock (medians) | Strata/mock (paired) |")
print("|---|---|---:|---:|")
for (w, ph), t in groups.items():
    if "mock" in t and "strata" in t:
        by_rep = {r["rep"]: float(r["msgs_per_s"]) for r in t["mock"]}
        paired = [float(r["msgs_per_s"]) / by_rep[r["rep"]] for r in t["strata"] if r["rep"] in by_rep]
        print(f"| {w} | {ph} | {med(t['strata'], 'msgs_per_s') / med(t['mock'], 'msgs_per_s'):.2f} "
              f"| {statistics.median(paired):.2f} |")
print(f"\nStrata log dir after the run: {disk / 2**20:.0f} MiB on {fs}; "
      f"load average before/after: {load_before} / {load_after}")
EOF
