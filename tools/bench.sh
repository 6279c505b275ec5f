#!/usr/bin/env bash
# Benchmarks, each against a reference measured in the same invocation (docs/benchmarks.md):
#   throughput  strata-perf produce/consume against librdkafka's in-memory mock cluster and
#               against a fresh strata-broker persisting to disk ( bar: >= 0.8x the mock)
#   lookup      PK table of 1M keys x 100 B: batch Lookups (16 keys/request) vs redis-benchmark
#               GET -P 16, and single-key Lookups vs GET -P 1, against a redis-server this script
#               starts with the same keys and value size ( bar: batch >= 0.5x Redis)
#   apply       strata-perf pk-apply: upserts through compute -> append -> apply vs raw RocksDB
#               puts of the same data ( bar: >= 0.5x)
#   projection  typed (json) PK table of 200k rows x 50 columns: Lookups of 3 columns vs whole
#               rows (keys/s, bytes per key, broker CPU), paired rounds
#   asof        history table of 200k keys x 5 versions: LookupAsOf at an older time vs Lookup of
#               the same keys through the Python client, paired rounds (broker CPU per key); a
#               training set of 1M (key, time) events through `strata table as-of --events`
#   filtered    typed (json) PK tables with and without table.statistics.columns=*: load cost
#               (paired rounds) and a 1 %-selective filtered changelog read (batches/bytes skipped)
#   upsert      PK upserts through the broker (librdkafka, acks=1, 1M x 100 B over 250k keys)
#               vs the same records to a log topic of as many partitions, paired rounds
#               ( goal: >= 0.6x records/s), broker CPU-s per 1M records
#   e2e         end-to-end latency (strata-perf e2e: produce -> consume in one process) at
#               20,000 records/s, mock cluster vs Strata, paired rounds ( goal: p99 <= 1.0x mock)
#   registry    the embedded Schema Registry's GET /schemas/ids/{id} (wrk, keep-alive) on a
#               broker with basic auth vs one without, alternating rounds: requests/s, p99,
#               broker CPU per request (the reference is the same registry without auth)
#   growth      tools/bench/bench_growth.py, its own brokers: produce over 1,000 partitions vs 6
#               (the same rounds against the mock cluster: the load generator's own ratio),
#               RSS of idle log and PK partitions, Lookup p99 at 20M keys vs 1M, restart holding
#               them, 10,000 idle connections (peak RSS, a producer's ratio) (GROWTH_ROUNDS, 3;
#               GROWTH_PARTITIONS_ONLY=1: only the idle log partitions and the 6 vs 1,000 rounds)
#   restart     broker restart (clean and kill -9) with the lookup table loaded, until a Lookup
#               answers; in-process pk-restart of a 10M-key partition (clean and crash)
#   cluster     (only when named in BENCH_SECTIONS; not in the default set, not run in CI)
#               tools/bench_cluster.sh: 3 brokers + 1 etcd on loopback; RF=3 acks=all vs RF=1
#               acks=1 produce in paired rounds ( goal: >= 0.35x) with broker CPU-s/GiB, and
#               failover time kill -9 of a leader -> first acks=all ack ( goal: <= TTL + 2 s)
#
# usage: tools/bench.sh
# environment:
#   BENCH_SCALE        multiplies every record/key count (default 1); 0.1 = quick
#   BENCH_SECTIONS     comma list of throughput,upsert,e2e,lookup,projection,filtered,asof,apply,
#                      registry,growth,restart (default) and cluster
#                      (tools/bench_cluster.sh's own knobs: CLUSTER_ROUNDS, CLUSTER_KILLS, ...)
#   BENCH_REPEAT       runs per (workload, phase, target) in throughput (default 5; medians)
#   PARTITIONS         partitions per throughput topic, same for both targets (default 256)
#   PK_PARTITIONS      partitions of the lookup table and of the upsert section's topics (default 4)
#   E2E_RATE           records/s of the e2e section (default 20000; 10 s of records at scale 1)
#   LOOKUP_CONCURRENCY connections of strata-perf lookup and redis-benchmark -c (default 4)
#   LOOKUP_SECONDS     duration of each Strata lookup run (default 10)
#   APPLY_ALLOCATOR    jemalloc (default: the broker's, by LD_PRELOAD) or glibc for the apply section
#   REGISTRY_SECONDS   duration of each registry round (default 5; 3 rounds per broker)
#   PK_ROW_CACHE_BYTES the broker's pk.row.cache.bytes (default 512 MiB: the lookup table's 1M rows
#                      fit, as Redis holds them all; the report states it with both servers' RSS)
#   BUILD_DIR          meson build dir (default build; set up if missing)
#   BENCH_JOBS         ninja -j for the build (default 1)
#   BROKER             strata-broker binary (default $BUILD_DIR/broker/strata-broker, built)
#   DATA_PARENT        where the temporary data dirs are made (default ${TMPDIR:-/tmp})
#   RESTART_KEYS       keys of the in-process pk-restart run (default 10M x BENCH_SCALE)
#   BENCH_RAW          if set, the raw results (JSON lines) and server logs are copied to this dir
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

scale=${BENCH_SCALE:-1}
sections=${BENCH_SECTIONS:-throughput,upsert,e2e,lookup,projection,filtered,asof,apply,registry,growth,restart}
repeat=${BENCH_REPEAT:-5}
partitions=${PARTITIONS:-256}
pk_partitions=${PK_PARTITIONS:-4}
concurrency=${LOOKUP_CONCURRENCY:-4}
lookup_seconds=${LOOKUP_SECONDS:-10}
pk_row_cache_bytes=${PK_ROW_CACHE_BYTES:-536870912}
build_dir=${BUILD_DIR:-build}
data_parent=${DATA_PARENT:-${TMPDIR:-/tmp}}
want() { [[ ",$sections," == *",$1,"* ]]; }

# --- build --------------------------------------------------------------------------------
if [[ ! -d $build_dir ]]; then
  meson setup "$build_dir"
fi
targets=(tools/perf/strata-perf tools/bench/mock-cluster tools/cli/strata)
if [[ -z ${BROKER:-} ]]; then
  targets+=(broker/strata-broker)
  BROKER=$build_dir/broker/strata-broker
fi
ninja -C "$build_dir" -j"${BENCH_JOBS:-1}" "${targets[@]}" >/dev/null
perf=$build_dir/tools/perf/strata-perf
mock=$build_dir/tools/bench/mock-cluster
for f in "$perf" "$mock" "$BROKER"; do
  [[ -x $f ]] || { echo "bench.sh: missing executable $f" >&2; exit 1; }
done
if want cluster; then  # its own cluster, before this script's single broker starts
  BUILD_DIR=$build_dir BROKER=$BROKER BENCH_SCALE=$scale bash tools/bench_cluster.sh
  sections=$(tr ',' '\n' <<<"$sections" | grep -vx cluster | paste -sd, || true)
  [[ -n $sections ]] || exit 0
fi
if want lookup; then
  for f in redis-server redis-cli redis-benchmark; do
    command -v $f >/dev/null || { echo "bench.sh: $f missing (tools/setup.sh installs it)" >&2; exit 1; }
  done
fi

scaled() { python3 -c "import sys; print(max(1, int(round(int(sys.argv[1]) * float(sys.argv[2])))))" "$1" "$scale"; }
now() { date +%s.%N; }

work=$(mktemp -d "$data_parent/strata-bench.XXXXXX")
mock_pid=""
broker_pid=""
redis_pid=""
cleanup() {
  set +e  # best effort: one failed kill/wait must not skip the rest (and leak the work dir)
  if [[ -n ${BENCH_RAW:-} ]]; then mkdir -p "$BENCH_RAW" && cp "$work"/*.jsonl "$work"/*.log "$BENCH_RAW/" 2>/dev/null || true; fi
  [[ -n $mock_pid ]] && kill "$mock_pid" 2>/dev/null && wait "$mock_pid" 2>/dev/null
  [[ -n $broker_pid ]] && kill "$broker_pid" 2>/dev/null && wait "$broker_pid" 2>/dev/null
  [[ -n $redis_pid ]] && kill "$redis_pid" 2>/dev/null && wait "$redis_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
results=$work/results.jsonl  # one {"section","name",...,"result":{strata-perf JSON}} per line
: >"$results"
record() {  # section name json [extra json object fields]
  local extra=${4:-'{}'}
  python3 - "$1" "$2" "$3" "$extra" >>"$results" <<'EOF'
import json, sys
d = {"section": sys.argv[1], "name": sys.argv[2], "result": json.loads(sys.argv[3])}
d.update(json.loads(sys.argv[4]))
print(json.dumps(d))
EOF
}

wait_for() {  # file, pattern, what[, timeout in 50 ms steps]
  for _ in $(seq "${4:-300}"); do
    if grep -q "$2" "$1" 2>/dev/null; then return 0; fi
    sleep 0.05
  done
  echo "bench.sh: $3 did not start; its output:" >&2
  cat "$1" >&2
  exit 1
}
mkdir -p "$work/data"
start_broker() {  # log file
  "$BROKER" --override listeners=PLAINTEXT://127.0.0.1:0 --override metrics.listener=127.0.0.1:0 --override schema.registry.listener=http://127.0.0.1:0 \
    --override "log.dirs=$work/data" --override "pk.row.cache.bytes=$pk_row_cache_bytes" >"$1" 2>&1 &
  broker_pid=$!
}
broker_port() {
  grep -o 'listening on PLAINTEXT://127.0.0.1:[0-9]*' "$1" | head -1 | grep -o '[0-9]*$'
}
start_broker "$work/broker.log"
wait_for "$work/broker.log" 'listening on PLAINTEXT://' "strata-broker"
strata_bootstrap=127.0.0.1:$(broker_port "$work/broker.log")

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
# Runs a load command (stdout: one JSON line) and records it with the CPU the server `pid` spent
# meanwhile: measured pid section name extra_fields command... (extra_fields: JSON object members,
# e.g. '"rep":1', or empty). The JSON is left in $last_json.
measured() {
  local pid=$1 section=$2 name=$3 extra=$4 before after
  shift 4
  before=$(cpu_ticks "$pid")
  last_json=$("$@" 2>/dev/null)
  after=$(cpu_ticks "$pid")
  record "$section" "$name" "$last_json" \
    "{${extra:+$extra,}\"server_cpu_s\":$(python3 -c "print(($after-$before)/$clk_tck)")}"
  echo "  $section $name${extra:+ ($extra)}: $last_json" >&2
}
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# --- throughput: mock cluster vs Strata -----------------------------------------------------
if want throughput; then
  # name count size batching: `rotate` = ~1 MB round-robin batches; `sticky0` = librdkafka's
  # sticky.partitioning.linger.ms=0 (about 110-record batches spread over every partition), read
  # back by a consumer with default settings: the many-partitions small-batch layout.
  workloads=("100B 2000000 100 rotate" "1KiB 500000 1024 rotate" "100B-sticky0 2000000 100 sticky0")
  topics=()
  for w in "${workloads[@]}"; do
    read -r name _ _ _ <<<"$w"
    for ((r = 1; r <= repeat; r++)); do topics+=("bench-$name-r$r"); done
  done
  mock_args=()
  for t in "${topics[@]}"; do mock_args+=("$t:$partitions"); done
  "$mock" "${mock_args[@]}" >"$work/mock.out" 2>"$work/mock.err" &
  mock_pid=$!
  wait_for "$work/mock.out" ':' "mock-cluster"
  mock_bootstrap=$(head -1 "$work/mock.out")
  for t in "${topics[@]}"; do
    "$perf" create --bootstrap "$strata_bootstrap" --topic "$t" --partitions "$partitions" >/dev/null
  done
  run_one() {  # target phase workload rep count size topic batching
    local target=$1 phase=$2 wname=$3 rep=$4 count=$5 size=$6 topic=$7 batching=$8 bs pid
    local spread=(--rotate-bytes 1000000)
    [[ $batching == sticky0 ]] && spread=(--producer-prop sticky.partitioning.linger.ms=0)
    if [[ $target == mock ]]; then bs=$mock_bootstrap pid=$mock_pid; else bs=$strata_bootstrap pid=$broker_pid; fi
    local extra="\"phase\":\"$phase\",\"target\":\"$target\",\"rep\":$rep"
    if [[ $phase == produce ]]; then
      measured "$pid" throughput "$wname" "$extra" "$perf" produce --bootstrap "$bs" --topic "$topic" \
        --num-records "$count" --record-size "$size" "${spread[@]}" --producer-prop acks=1
    else
      measured "$pid" throughput "$wname" "$extra" "$perf" consume --bootstrap "$bs" --topic "$topic" \
        --num-records "$count"
    fi
  }
  for w in "${workloads[@]}"; do
    read -r name count size batching <<<"$w"
    count=$(scaled "$count")
    for phase in produce consume; do
      for ((r = 1; r <= repeat; r++)); do
        for target in mock strata; do
          run_one "$target" "$phase" "$count x $name" "$r" "$count" "$size" "bench-$name-r$r" "$batching"
        done
      done
    done
  done
  kill "$mock_pid" && wait "$mock_pid" 2>/dev/null || true
  mock_pid=""
fi

# --- upsert: PK upserts through the broker vs the same records to a log topic ---------------
if want upsert; then
  upsert_records=$(scaled 1000000)
  upsert_keys=$(scaled 250000)  # every key written 4 times: mostly updates, as a table's feed is
  echo "bench.sh: upserts, $upsert_records x 100 B over $upsert_keys keys: PK table vs log topic" >&2
  for rep in 1 2 3; do
    for kind in log pk; do
      cfg=()
      [[ $kind == pk ]] && cfg=(--config table.type=primary-key)
      "$perf" create --bootstrap "$strata_bootstrap" --topic "bench-upsert-$kind-r$rep" \
        --partitions "$pk_partitions" "${cfg[@]}" >/dev/null
      measured "$broker_pid" upsert "$kind" "\"rep\":$rep" "$perf" produce \
        --bootstrap "$strata_bootstrap" --topic "bench-upsert-$kind-r$rep" \
        --num-records "$upsert_records" --record-size 100 --key-space "$upsert_keys" \
        --producer-prop partitioner=murmur2 --producer-prop acks=1
    done
  done
fi

# --- e2e: produce -> consume latency at a fixed rate, mock cluster vs Strata ---------------
if want e2e; then
  e2e_rate=${E2E_RATE:-20000}
  e2e_records=$(scaled $((e2e_rate * 10)))
  e2e_topics=()
  for rep in 1 2 3; do e2e_topics+=("bench-e2e-r$rep:$pk_partitions"); done
  "$mock" "${e2e_topics[@]}" >"$work/mock-e2e.out" 2>"$work/mock-e2e.err" &
  mock_pid=$!
  wait_for "$work/mock-e2e.out" ':' "mock-cluster"
  mock_bootstrap=$(head -1 "$work/mock-e2e.out")
  echo "bench.sh: e2e latency, $e2e_records x 100 B at $e2e_rate records/s" >&2
  for rep in 1 2 3; do
    "$perf" create --bootstrap "$strata_bootstrap" --topic "bench-e2e-r$rep" \
      --partitions "$pk_partitions" >/dev/null
    for target in mock strata; do
      if [[ $target == mock ]]; then bs=$mock_bootstrap pid=$mock_pid; else bs=$strata_bootstrap pid=$broker_pid; fi
      measured "$pid" e2e "$target" "\"target\":\"$target\",\"rep\":$rep" "$perf" e2e \
        --bootstrap "$bs" --topic "bench-e2e-r$rep" --num-records "$e2e_records" \
        --throughput "$e2e_rate" --record-size 100
    done
  done
  kill "$mock_pid" && wait "$mock_pid" 2>/dev/null || true
  mock_pid=""
fi

# --- lookup: Strata PK table vs redis-server ------------------------------------------------
lookup_keys=$(scaled 1000000)
if want lookup || want restart; then
  echo "bench.sh: loading $lookup_keys keys x 100 B into PK table bench-pk ($pk_partitions partitions)" >&2
  "$perf" create --bootstrap "$strata_bootstrap" --topic bench-pk --partitions "$pk_partitions" \
    --config table.type=primary-key >/dev/null
  json=$("$perf" produce --bootstrap "$strata_bootstrap" --topic bench-pk --num-records "$lookup_keys" \
    --record-size 100 --key-space "$lookup_keys" --producer-prop partitioner=murmur2 2>/dev/null)
  record load "pk-load" "$json"
  echo "  load: $json" >&2
fi
if want lookup; then
  redis_port=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])")
  redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no \
    --dir "$work" --logfile "$work/redis.log" &
  redis_pid=$!
  for _ in $(seq 100); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break; sleep 0.05; done
  # Same keys (redis-benchmark's key:%012d) and 100-byte values.
  python3 - "$lookup_keys" <<'EOF' | redis-cli -p "$redis_port" --pipe >/dev/null
import sys
n = int(sys.argv[1])
v = b"v" * 100
out = sys.stdout.buffer
for i in range(n):
    k = b"key:%012d" % i
    out.write(b"*3\r\n$3\r\nSET\r\n$16\r\n" + k + b"\r\n$100\r\n" + v + b"\r\n")
EOF
  dbsize=$(redis-cli -p "$redis_port" dbsize)
  [[ $dbsize == "$lookup_keys" ]] || { echo "bench.sh: redis has $dbsize keys, want $lookup_keys" >&2; exit 1; }
  redis_bench() {  # pipeline requests
    redis-benchmark -p "$redis_port" -t get -P "$1" -c "$concurrency" -n "$2" -r "$lookup_keys" \
      -d 100 --csv 2>/dev/null | python3 -c '
import csv, json, sys
rows = list(csv.DictReader(sys.stdin))
r = rows[-1]
print(json.dumps({"keys_per_s": float(r["rps"]), "p50_us": 1000 * float(r["p50_latency_ms"]),
                  "p99_us": 1000 * float(r["p99_latency_ms"]), "max_us": 1000 * float(r["max_latency_ms"]),
                  "avg_us": 1000 * float(r["avg_latency_ms"])}))'
  }
  # The row cache fills on lookups (Redis is measured after its load): one unrecorded round first.
  "$perf" lookup --bootstrap "$strata_bootstrap" --table bench-pk --keys "$lookup_keys" \
    --batch-size 16 --concurrency "$concurrency" --duration "$lookup_seconds" --expect-found >/dev/null 2>&1
  for batch in 16 1; do
    for rep in 1 2 3; do
      measured "$broker_pid" lookup "batch $batch" "\"target\":\"strata\",\"rep\":$rep" "$perf" lookup \
        --bootstrap "$strata_bootstrap" --table bench-pk --keys "$lookup_keys" --batch-size "$batch" \
        --concurrency "$concurrency" --duration "$lookup_seconds" --expect-found
      keys_done=$(python3 -c "import json,sys; print(json.loads(sys.argv[1])['keys'])" "$last_json")
      measured "$redis_pid" lookup "batch $batch" "\"target\":\"redis\",\"rep\":$rep" \
        redis_bench "$batch" "$keys_done"
    done
  done
  rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
  record lookup_memory "rss" "{\"broker_rss_kib\":$(rss_kib "$broker_pid"),\"redis_rss_kib\":$(rss_kib "$redis_pid"),\"row_cache_bytes\":$pk_row_cache_bytes,\"keys\":$lookup_keys}"
  kill "$redis_pid" && wait "$redis_pid" 2>/dev/null || true
  redis_pid=""
fi

# --- projection: 3 of 50 columns vs whole rows of a typed table -----------------------------
if want projection; then
  proj_keys=$(scaled 200000)
  echo "bench.sh: loading $proj_keys rows x 50 columns into json table bench-typed" >&2
  "$perf" create --bootstrap "$strata_bootstrap" --topic bench-typed --partitions "$pk_partitions" \
    --config table.type=primary-key --config table.value.format=json >/dev/null
  /usr/bin/python3 - "$strata_bootstrap" "$proj_keys" <<'EOF'  # Debian's confluent-kafka
import json, sys
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "partitioner": "murmur2_random", "linger.ms": 20,
              "queue.buffering.max.messages": 1000000})
for i in range(int(sys.argv[2])):
    row = {"c%02d" % c: i * 100 + c for c in range(50)}
    while True:
        try:
            p.produce("bench-typed", key=b"key:%012d" % i, value=json.dumps(row).encode())
            break
        except BufferError:
            p.poll(0.1)
assert p.flush(120) == 0
EOF
  for rep in 1 2 3; do
    for cols in all c07,c21,c42; do
      # shellcheck disable=SC2046
      measured "$broker_pid" projection "$cols" "\"rep\":$rep" "$perf" lookup \
        --bootstrap "$strata_bootstrap" --table bench-typed --keys "$proj_keys" --batch-size 16 \
        --concurrency "$concurrency" --duration "$lookup_seconds" --expect-found \
        $([[ $cols == all ]] || echo "--columns $cols")
    done
  done
fi

# --- filtered: column statistics on a typed table (tools/bench/bench_filtered.py) -----------
if want filtered; then
  filter_rows=$(scaled 400000)
  echo "bench.sh: filtered reads over $filter_rows rows, with and without table.statistics.columns" >&2
  /usr/bin/python3 "$(dirname "$0")/bench/bench_filtered.py" "$strata_bootstrap" "$broker_pid" \
    "$filter_rows" "$perf" "$work/data" | while read -r line; do
    record filtered "$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(d["phase"]+("-stats" if d["stats"] else "-plain"))' "$line")" "$line"
    echo "  filtered: $line" >&2
  done
fi

# --- asof: LookupAsOf vs current-state Lookup on a history table (tools/bench/bench_asof.py) -
if want asof; then
  asof_keys=$(scaled 200000)
  echo "bench.sh: as-of reads over $asof_keys keys x 5 versions (table.history.enabled)" >&2
  /usr/bin/python3 "$(dirname "$0")/bench/bench_asof.py" "$strata_bootstrap" "$broker_pid" \
    "$asof_keys" 5 "$perf" "$build_dir/tools/cli/strata" "$(scaled 1000000)" "$work" | while read -r line; do
    record asof "$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["phase"])' "$line")" "$line"
    echo "  asof: $line" >&2
  done
fi

# --- apply: PK upserts vs raw RocksDB puts --------------------------------------------------
if want apply; then
  apply_records=$(scaled 1000000)
  # In process, under the broker's allocator (jemalloc, broker/meson.build), so that the PK write
  # path is timed as the broker runs it; the raw RocksDB reference shares the process and so the
  # allocator. APPLY_ALLOCATOR=glibc keeps glibc's malloc.
  apply_preload="" apply_alloc=glibc
  jemalloc_so=$(pkg-config --variable=libdir jemalloc 2>/dev/null)/libjemalloc.so.2
  if [[ ${APPLY_ALLOCATOR:-jemalloc} == jemalloc && -f $jemalloc_so ]]; then
    apply_preload=$jemalloc_so apply_alloc=jemalloc
  fi
  for rep in 1 2 3; do
    json=$(LD_PRELOAD=$apply_preload "$perf" pk-apply --records "$apply_records" --batch 1000 --value-size 100 \
      --read-variants --typed --dir "$work" 2>/dev/null)
    record apply "pk-apply" "$json" "{\"rep\":$rep,\"allocator\":\"$apply_alloc\"}"
    echo "  pk-apply r$rep ($apply_alloc): $json" >&2
  done
fi

# --- registry: GET /schemas/ids/{id} with basic auth vs without (tools/bench/bench_registry.py) -
if want registry; then
  command -v wrk >/dev/null || { echo "bench.sh: wrk missing (tools/setup.sh installs it)" >&2; exit 1; }
  echo "bench.sh: schema registry reads, basic auth vs none, $concurrency connections" >&2
  python3 "$(dirname "$0")/bench/bench_registry.py" "$BROKER" "$build_dir/tools/cli/strata" \
    "$work" 3 "${REGISTRY_SECONDS:-5}" "$concurrency" | while read -r line; do
    record registry "$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["phase"])' "$line")" "$line"
    echo "  registry: $line" >&2
  done
fi

# --- growth: partitions, keys, connections (tools/bench/bench_growth.py, its own brokers) ---
if want growth; then
  echo "bench.sh: growth (own brokers): 1,000 vs 6 partitions, idle partitions, Lookups at 20M vs 1M keys, restart, idle connections" >&2
  mkdir -p "$work/growth"
  /usr/bin/python3 "$(dirname "$0")/bench/bench_growth.py" "$BROKER" "$perf" "$work/growth" \
    "$scale" "${GROWTH_ROUNDS:-3}" "$lookup_seconds" "$mock" | while read -r line; do
    record growth "$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["phase"])' "$line")" "$line"
  done
  rm -rf "$work/growth"
fi

# --- restart --------------------------------------------------------------------------------
if want restart; then
  for how in TERM KILL; do
    kill -"$how" "$broker_pid"
    wait "$broker_pid" 2>/dev/null || true
    t0=$(now)
    start_broker "$work/broker-$how.log"
    wait_for "$work/broker-$how.log" 'listening on PLAINTEXT://' "strata-broker (restart)" 6000
    bs=127.0.0.1:$(broker_port "$work/broker-$how.log")
    deadline=$(( $(date +%s) + 600 ))
    until "$perf" lookup --bootstrap "$bs" --table bench-pk --keys "$lookup_keys" --batch-size 1 \
        --concurrency 1 --num-requests 1 --expect-found >/dev/null 2>&1; do
      sleep 0.01
      if ! kill -0 "$broker_pid" 2>/dev/null; then echo "bench.sh: broker died" >&2; exit 1; fi
      if (( $(date +%s) > deadline )); then
        echo "bench.sh: no Lookup answer within 600 s after restart (SIG$how); broker log tail:" >&2
        tail -n 40 "$work/broker-$how.log" >&2
        exit 1
      fi
    done
    t1=$(now)
    secs=$(python3 -c "print(round($t1 - $t0, 3))")
    record restart "broker $how" "{\"keys\":$lookup_keys,\"ready_s\":$secs}"
    echo "  broker restart after SIG$how with $lookup_keys keys: first Lookup answered after ${secs}s" >&2
    strata_bootstrap=$bs
  done
  restart_keys=${RESTART_KEYS:-$(scaled 10000000)}
  json=$("$perf" pk-restart --keys "$restart_keys" --batch 1000 --crash --dir "$work" 2>/dev/null)
  record restart "pk-restart" "$json"
  echo "  pk-restart: $json" >&2
fi

load_after=$(cut -d' ' -f1-3 /proc/loadavg)
sync

# --- report ---------------------------------------------------------------------------------
python3 tools/perf/bench_report.py "$results" "$partitions" "$repeat" "$scale" \
  "$load_before" "$load_after" "$concurrency" "$pk_partitions"
