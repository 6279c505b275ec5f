"""tools/bench.sh section `filtered`: column statistics (table.statistics.columns) on a typed table.

Two json PK tables get the same rows (10 columns, `seq` increasing with the write order, so
batches hold narrow ranges of it), one with table.statistics.columns=* and one without:
  - load: librdkafka produce time and broker CPU per table, in paired rounds (stats/no-stats
    ratio = what summarising each appended batch costs);
  - read: a 1 %-selective filtered changelog read (`seq` in a 1 % range) through the Python
    client, on both tables: wall time, broker CPU, batches and bytes skipped.
Prints one JSON object per measurement on stdout.

usage: bench_filtered.py BOOTSTRAP BROKER_PID ROWS PERF_BINARY DATA_DIR
"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from confluent_kafka import Producer  # noqa: E402  (Debian's python3-confluent-kafka)
from strata_client import Strata  # noqa: E402
from proc_cpu import cpu_seconds  # noqa: E402

bootstrap, broker_pid, rows, perf = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
data_dir = sys.argv[5]


def cpu_s():
    return cpu_seconds(broker_pid)


def create(topic, stats):
    cfg = ["--config", "table.type=primary-key", "--config", "table.value.format=json"]
    if stats:
        cfg += ["--config", "table.statistics.columns=*"]
    subprocess.run([perf, "create", "--bootstrap", bootstrap, "--topic", topic,
                    "--partitions", "1"] + cfg, check=True, stdout=subprocess.DEVNULL)


def load(topic, lo, hi):
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5,
                  "queue.buffering.max.messages": 1000000})
    values = [json.dumps({"seq": i, **{"c%d" % c: (i * 7 + c) % 1000 for c in range(9)}}).encode()
              for i in range(lo, hi)]
    c0, t0 = cpu_s(), time.monotonic()
    for i, v in zip(range(lo, hi), values):
        while True:
            try:
                p.produce(topic, key=b"k%09d" % i, value=v)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(120) == 0
    return time.monotonic() - t0, cpu_s() - c0


def emit(d):
    print(json.dumps(d), flush=True)


tables = {True: "bench-filter-stats", False: "bench-filter-plain"}
for stats, topic in tables.items():
    create(topic, stats)
rounds = 4
step = rows // rounds
for r in range(rounds):  # paired: each round loads both tables, alternating which goes first
    order = [True, False] if r % 2 == 0 else [False, True]
    for stats in order:
        wall, cpu = load(tables[stats], r * step, (r + 1) * step)
        emit({"phase": "load", "stats": stats, "round": r, "rows": step, "wall_s": wall,
              "broker_cpu_s": cpu})

client = Strata(bootstrap, timeout=60)
lo = rows // 2
hi = lo + max(1, rows // 100)
where = "seq >= %d AND seq < %d" % (lo, hi)
for rep in range(3):
    for stats in (True, False):
        t = client.table(tables[stats])
        st = {}
        c0, t0 = cpu_s(), time.monotonic()
        got = sum(1 for _ in t.changelog(0, follow=False, where=where, stats=st,
                                         max_records=10000))
        wall, cpu = time.monotonic() - t0, cpu_s() - c0
        pdir = os.path.join(data_dir, tables[stats] + "-0")
        size = sum(os.path.getsize(os.path.join(pdir, f)) for f in os.listdir(pdir)
                   if f.endswith(".log"))
        emit({"phase": "filtered_read", "stats": stats, "rep": rep, "where": where,
              "changes": got, "wall_s": wall, "broker_cpu_s": cpu, "log_bytes": size, **st})
client.close()
