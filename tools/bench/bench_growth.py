"""tools/bench.sh section `growth`: how the broker's cost grows with partitions, keys and
connections, each a ratio within one run (docs/benchmarks.md, "Growth").

1. One broker (defaults): 10 log topics x 100 partitions created and left idle (RSS and
   descriptors per idle log partition); then produce into a topic of 6 partitions and one of
   1,000, alternating, ROUNDS paired rounds each with librdkafka's default batching and with
   sticky.partitioning.linger.ms=0 (small batches over every partition): records/s and broker
   CPU-s. (strata-perf produce writes one topic, so the 1,000 partitions are one topic's.) The
   same rounds against librdkafka's in-memory mock cluster (MOCK, when given): the reference's
   own 1,000 / 6 ratio, i.e. what the load generator loses by itself on these two cores; and the
   load generator's CPU-s per run (getrusage of the finished child) for both targets.
2. The same broker: PK tables of 1M and 20M keys x 100 B (scaled; 4 partitions each, the
   broker's default caches: pk.block.cache.bytes 256 MiB, pk.row.cache.bytes 128 MiB, so the
   20M keys outgrow them), then single-key and 16-key Lookups over 4 connections, the two tables
   alternating, ROUNDS rounds: keys/s and p99.
3. The same broker restarted after kill -9 and then after SIGTERM, holding those tables and every log
   partition above: seconds from process start to the first Lookup answered on the largest table.
4. A fresh broker: IDLE_PK tables x 100 PK partitions, each written a few rows, then left alone
   for 2 s (before their idle flush, so an upper bound): RSS and descriptors per idle PK partition (the open-files limit of this machine, 20,000, holds
   about 240 PK partitions at 76 reserved descriptors each, not the 2,000 of the issue).
5. tools/perf/soak_load.py with only its idle connections (10,000 x scale): the broker's peak RSS
   and a producer's throughput with them held against the same producer alone.

Prints one JSON object per measurement on stdout (progress on stderr). GROWTH_PARTITIONS_ONLY=1
stops after step 1 (its idle log partitions and the 6 vs 1,000 partition rounds).

usage: bench_growth.py BROKER PERF WORK SCALE ROUNDS LOOKUP_SECONDS [MOCK]
"""
import atexit
import json
import os
import re
import resource
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proc_cpu import cpu_seconds  # noqa: E402

broker_bin, perf, work = sys.argv[1], sys.argv[2], sys.argv[3]
scale, rounds, lookup_s = float(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
mock_bin = sys.argv[7] if len(sys.argv) > 7 else ""
IDLE_PK = int(os.environ.get("IDLE_PK_TABLES", "2"))
PARTITIONS_ONLY = os.environ.get("GROWTH_PARTITIONS_ONLY") == "1"
SOAK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "perf", "soak_load.py")


def scaled(n):
    return max(1, int(round(n * scale)))


def emit(**d):
    print(json.dumps(d), flush=True)
    print("  growth: " + json.dumps(d), file=sys.stderr, flush=True)


def status_kib(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


started = []  # every broker process, killed at exit whatever ended the run


@atexit.register
def _kill_brokers():
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


class Broker:
    def __init__(self, data, name):
        self.data, self.name = data, name
        self.proc = None

    def start(self):
        self.log = os.path.join(work, "%s-%d.log" % (self.name, int(time.time() * 1000)))
        t0 = time.monotonic()
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen(
                [broker_bin, "--override", "listeners=PLAINTEXT://127.0.0.1:0",
                 "--override", "metrics.listener=127.0.0.1:0",
                 "--override", "schema.registry.listener=http://127.0.0.1:0",
                 "--override", "log.dirs=" + self.data], stdout=out, stderr=subprocess.STDOUT)
        started.append(self.proc)
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            m = re.search(r"listening on PLAINTEXT://127\.0\.0\.1:(\d+)", open(self.log).read())
            if m:
                self.bootstrap = "127.0.0.1:" + m.group(1)
                return t0
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        sys.exit("bench_growth: broker did not start:\n" + open(self.log).read()[-4000:])

    def stop(self, sig=signal.SIGTERM):
        self.proc.send_signal(sig)
        self.proc.wait(300)

    @property
    def pid(self):
        return self.proc.pid


def perf_json(*args):
    out = subprocess.run([perf, *args], check=True, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def create(b, topic, partitions, *configs):
    cmd = [perf, "create", "--bootstrap", b.bootstrap, "--topic", topic,
           "--partitions", str(partitions)]
    for c in configs:
        cmd += ["--config", c]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def children_cpu_s():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def measured(b, *args):
    c0 = cpu_seconds(b.pid)
    j = perf_json(*args)
    return j, cpu_seconds(b.pid) - c0


class Mock:
    """librdkafka's mock cluster (tools/bench/mock-cluster) holding the given topic:partitions."""

    def __init__(self, *topics):
        self.out = os.path.join(work, "growth-mock.out")
        with open(self.out, "w") as out:
            self.proc = subprocess.Popen([mock_bin, *topics], stdout=out,
                                         stderr=subprocess.DEVNULL)
        started.append(self.proc)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = open(self.out).readline().strip()
            if ":" in line:
                self.bootstrap = line
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        sys.exit("bench_growth: mock-cluster did not start")

    @property
    def pid(self):
        return self.proc.pid

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def first_lookup(b, table, keys, t0):
    deadline = time.monotonic() + 600
    while subprocess.run([perf, "lookup", "--bootstrap", b.bootstrap, "--table", table,
                          "--keys", str(keys), "--batch-size", "1", "--concurrency", "1",
                          "--num-requests", "1", "--expect-found"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode != 0:
        if b.proc.poll() is not None or time.monotonic() > deadline:
            sys.exit("bench_growth: no Lookup answer after restart:\n" + open(b.log).read()[-4000:])
        time.sleep(0.01)
    return time.monotonic() - t0


def main():
    # --- 1. idle log partitions, produce over 6 vs 1,000 partitions ---------------------------
    b = Broker(os.path.join(work, "growth-data"), "growth")
    b.start()
    time.sleep(1)
    rss0, fd0 = status_kib(b.pid, "VmRSS"), fds(b.pid)
    for t in range(10):
        create(b, "growth-idle-%d" % t, 100)
    time.sleep(2)
    rss1, fd1 = status_kib(b.pid, "VmRSS"), fds(b.pid)
    emit(phase="idle-log", partitions=1000, rss_kib_per_partition=(rss1 - rss0) / 1000,
         fds_per_partition=(fd1 - fd0) / 1000)
    create(b, "growth-p6", 6)
    create(b, "growth-p1000", 1000)
    targets = [("strata", b)]
    mock = None
    if mock_bin:
        mock = Mock("growth-p6:6", "growth-p1000:1000")
        targets.append(("mock", mock))
    records = scaled(2_000_000)
    for producer, props in (("default", []),
                            ("sticky0", ["--producer-prop", "sticky.partitioning.linger.ms=0"])):
        for rep in range(1, rounds + 1):
            for target, t in targets:  # back to back, so both see the same background load
                for parts in (6, 1000):
                    c0 = children_cpu_s()
                    j, cpu = measured(t, "produce", "--bootstrap", t.bootstrap,
                                      "--topic", "growth-p%d" % parts,
                                      "--num-records", str(records), "--record-size", "100",
                                      "--producer-prop", "acks=1", *props)
                    emit(phase="partitions", target=target, producer=producer, partitions=parts,
                         rep=rep, records_per_s=j["records_per_s"], server_cpu_s=cpu,
                         client_cpu_s=children_cpu_s() - c0)
    if mock:
        mock.stop()  # its records stay in memory otherwise
    if PARTITIONS_ONLY:
        b.stop()
        return

    # --- 2. Lookups at 1M vs 20M keys --------------------------------------------------------
    sizes = {"small": scaled(1_000_000), "large": scaled(20_000_000)}
    for name, keys in sizes.items():
        table = "growth-pk-" + name
        create(b, table, 4, "table.type=primary-key")
        t0 = time.monotonic()
        j, cpu = measured(b, "produce", "--bootstrap", b.bootstrap, "--topic", table,
                          "--num-records", str(keys), "--record-size", "100",
                          "--key-space", str(keys), "--producer-prop", "partitioner=murmur2")
        emit(phase="pk-load", table=name, keys=keys, records_per_s=j["records_per_s"],
             seconds=time.monotonic() - t0, server_cpu_s=cpu)
    for rep in range(0, rounds + 1):  # round 0 warms the caches, unrecorded
        for batch in (1, 16):
            order = list(sizes.items())
            if rep % 2 == 0:
                order.reverse()  # neither table always first (compactions after the load)
            for name, keys in order:
                j, cpu = measured(b, "lookup", "--bootstrap", b.bootstrap,
                                  "--table", "growth-pk-" + name, "--keys", str(keys),
                                  "--batch-size", str(batch), "--concurrency", "4",
                                  "--duration", str(lookup_s if rep else lookup_s / 2),
                                  "--expect-found")
                if rep:
                    emit(phase="lookup", table=name, keys=keys, batch=batch, rep=rep,
                         keys_per_s=j["keys_per_s"], p50_us=j["latency"]["p50_us"],
                         p99_us=j["latency"]["p99_us"],
                         server_cpu_s=cpu, broker_rss_kib=status_kib(b.pid, "VmRSS"))

    # --- 3. restart holding all of it (kill -9 first: the broker has just been written) -------
    log_partitions = 10 * 100 + 6 + 1000
    for sig, how in ((signal.SIGKILL, "kill -9"), (signal.SIGTERM, "clean")):
        b.stop(sig)
        t0 = b.start()
        secs = first_lookup(b, "growth-pk-large", sizes["large"], t0)
        emit(phase="restart", how=how, ready_s=secs, pk_keys=sum(sizes.values()),
             log_partitions=log_partitions)
    b.stop()

    # --- 4. idle PK partitions -----------------------------------------------------------------
    b = Broker(os.path.join(work, "growth-idle-pk"), "growth-idle-pk")
    b.start()
    time.sleep(1)
    rss0, fd0 = status_kib(b.pid, "VmRSS"), fds(b.pid)
    for t in range(IDLE_PK):
        create(b, "idle-pk-%d" % t, 100, "table.type=primary-key")
        perf_json("produce", "--bootstrap", b.bootstrap, "--topic", "idle-pk-%d" % t,
                  "--num-records", "2000", "--record-size", "100", "--key-space", "2000",
                  "--producer-prop", "partitioner=murmur2")
    time.sleep(2)  # before their idle flush (pk.memtable.idle.flush.ms): an upper bound
    n = max(1, IDLE_PK * 100)
    emit(phase="idle-pk", partitions=n,
         rss_kib_per_partition=(status_kib(b.pid, "VmRSS") - rss0) / n,
         fds_per_partition=(fds(b.pid) - fd0) / n)
    b.stop()

    # --- 5. idle connections -------------------------------------------------------------------
    conns = scaled(10000)
    out = os.path.join(work, "growth-conns.json")
    env = dict(os.environ, STRATA_BROKER=broker_bin)
    subprocess.run([sys.executable, SOAK, "--idle", str(conns), "--slowloris", "0",
                    "--never-read", "0", "--bomb-interval", "-1", "--amplifiers", "0",
                    "--amplifiers-never-read", "0", "--duration", str(max(5.0, 20 * scale)),
                    "--rounds", str(rounds), "--json", out], env=env,
                   stdout=subprocess.DEVNULL, stderr=open(out + ".log", "w"))
    if not os.path.exists(out):
        sys.exit("bench_growth: soak_load.py wrote no results:\n" + open(out + ".log").read()[-4000:])
    r = json.load(open(out))
    emit(phase="connections", idle=conns, rss_peak_mib=r.get("rss_peak_mib"),
         ratios=r.get("ratios", {}), failures=r.get("failures", []))


main()
