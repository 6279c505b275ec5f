"""Offset-commit throughput and the latency it causes to others, on one single-node broker:
N connections each commit one offset of its own simple group (generation -1) in a loop, waiting for
each answer (every commit is an fsynced append to __consumer_offsets on a single node), while one
more connection times OffsetFetch round trips of another group every 2 ms. Prints commits/s, the
broker's CPU per 1,000 commits (/proc) and OffsetFetch p50/p99/max. The broker binary is
$STRATA_BROKER (else build/broker/strata-broker): run two binaries one after the other to compare.
Run from the repository root:
  /usr/bin/python3 tools/perf/bench_commits.py [--connections N] [--seconds S]
Results in docs/benchmarks.md ("Offset commits: group commit in the journal")."""
import argparse, os, sys, threading, time
sys.path.insert(0, "test/integration")
import harness, itutil
from itutil import RawConn
from test_groups_raw import commit_v7, fetch_v5

ap = argparse.ArgumentParser()
ap.add_argument("--connections", type=int, default=8)
ap.add_argument("--seconds", type=float, default=8)
args = ap.parse_args()


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


b = harness.BrokerProcess({"offsets.topic.num.partitions": 4, "metrics.listener": "",
                           "schema.registry.listener": ""})
b.start()
try:
    topic = itutil.unique_topic("commits")
    with RawConn(b.port) as c:
        itutil.metadata_v10(c, [topic], allow_auto_create=True)
        for i in range(args.connections + 1):  # creates __consumer_offsets and the groups
            for _ in range(50):
                if commit_v7(c, "g%d" % i, -1, "", [(topic, 0, 1, "")])[(topic, 0)] == 0:
                    break
                time.sleep(0.1)
    counts = [0] * args.connections
    latencies = []
    errors = []
    start = time.time()
    stop = start + args.seconds

    def committer(i):
        with RawConn(b.port) as c:
            o = 1
            while time.time() < stop:
                o += 1
                e = commit_v7(c, "g%d" % i, -1, "", [(topic, 0, o, "")])[(topic, 0)]
                if e:
                    errors.append(e)
                counts[i] += 1

    def fetcher():
        with RawConn(b.port) as c:
            while time.time() < stop:
                t0 = time.perf_counter()
                fetch_v5(c, "g%d" % args.connections, topic, [0])
                latencies.append((time.perf_counter() - t0) * 1000)
                time.sleep(0.002)

    cpu0 = cpu_seconds(b.proc.pid)
    threads = [threading.Thread(target=committer, args=(i,)) for i in range(args.connections)]
    threads.append(threading.Thread(target=fetcher))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.time() - start
    cpu = cpu_seconds(b.proc.pid) - cpu0
    latencies.sort()
    total = sum(counts)
    print("connections %d: %.0f commits/s, broker %.3f CPU-s per 1k commits, OffsetFetch p50 "
          "%.2f ms p99 %.2f ms max %.2f ms (%d fetches), %d errors" % (
              args.connections, total / elapsed, cpu * 1000 / max(total, 1),
              latencies[len(latencies) // 2], latencies[int(len(latencies) * 0.99)],
              latencies[-1], len(latencies), len(errors)))
    sys.exit(1 if errors else 0)
finally:
    b.stop()
