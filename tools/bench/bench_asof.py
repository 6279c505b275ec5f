"""tools/bench.sh section `asof`: point-in-time reads (LookupAsOf, 16007) against current-state
Lookups (16000) on the same table, through the Python client.

A raw PK table with table.history.enabled=true gets KEYS keys x UPDATES versions (100-byte
values, record timestamps 1 s apart per version). Then, in paired rounds, the same keys are read
once with get_many (current rows) and once with as_of at a time between two versions (each
key's answer is an older change, so the history is really walked), batches of 10,000 keys.
Both go through the same Python client, whose own cost dominates the wall time on 2 cores, so
the comparable number is the broker's CPU per key (from /proc), reported next to keys/s.
Prints one JSON object per measurement on stdout.

Then a training set: EVENTS (key, time) events at random keys and times, answered by one
`strata table as-of --events FILE` (the CLI pages it, 100,000 keys per request): events/s and
broker CPU per event.

usage: bench_asof.py BOOTSTRAP BROKER_PID KEYS UPDATES PERF_BINARY CLI_BINARY EVENTS WORK_DIR
"""
import json
import os
import random
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from confluent_kafka import Producer  # noqa: E402  (Debian's python3-confluent-kafka)
from strata_client import Strata  # noqa: E402
from proc_cpu import cpu_seconds  # noqa: E402

bootstrap, broker_pid = sys.argv[1], int(sys.argv[2])
keys_n, updates, perf = int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
cli, events_n, work = sys.argv[6], int(sys.argv[7]), sys.argv[8]
BASE = 1_700_000_000_000
TOPIC = "bench-asof"
BATCH = 10_000


def cpu_s():
    return cpu_seconds(broker_pid)


subprocess.run([perf, "create", "--bootstrap", bootstrap, "--topic", TOPIC, "--partitions", "4",
                "--config", "table.type=primary-key", "--config", "table.history.enabled=true"],
               check=True, stdout=subprocess.DEVNULL)
# batch.size: an update's changelog record carries its before-image too (full image mode), and
# the changelog batch must stay under max.message.bytes (1 MiB): librdkafka's default 1 MB
# batches of updates would be refused with MESSAGE_TOO_LARGE (docs/pk-tables.md, write path 3).
p = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random", "linger.ms": 20,
              "batch.size": 262144, "queue.buffering.max.messages": 1000000})
keys = [b"key:%09d" % i for i in range(keys_n)]
errors = []


def delivered(err, msg):
    if err is not None:
        errors.append(err)


for v in range(updates):
    value = (b"v%d-" % v).ljust(100, b"x")
    for k in keys:
        while True:
            try:
                p.produce(TOPIC, key=k, value=value, timestamp=BASE + v * 1000,
                          on_delivery=delivered)
                break
            except BufferError:
                p.poll(0.05)
assert p.flush(300) == 0
assert not errors, "%d records not written, first: %s" % (len(errors), errors[0])

client = Strata(bootstrap, timeout=120)
t = client.table(TOPIC)
point = BASE + (updates // 2) * 1000 + 500  # between two versions: an older change answers
expect = (b"v%d-" % (updates // 2)).ljust(100, b"x")
for rnd in range(3):
    for kind in ("lookup", "as_of") if rnd % 2 == 0 else ("as_of", "lookup"):
        c0, t0 = cpu_s(), time.monotonic()
        found = 0
        for i in range(0, keys_n, BATCH):
            chunk = keys[i:i + BATCH]
            if kind == "lookup":
                rows = t.get_many(chunk)
            else:
                rows = t.as_of([(k, point) for k in chunk], by="timestamp")
                assert all(r and r["value"] == expect for r in rows), "wrong as-of answer"
            found += sum(1 for r in rows if r)
        wall, cpu = time.monotonic() - t0, cpu_s() - c0
        print(json.dumps({"phase": kind, "round": rnd, "keys": keys_n, "updates": updates,
                          "found": found, "wall_s": wall, "keys_per_s": keys_n / wall,
                          "broker_cpu_s": cpu}), flush=True)
client.close()

rng = random.Random(3)
path = os.path.join(work, "asof-events.tsv")
with open(path, "w") as f:
    for _ in range(events_n):
        f.write("%s\t%d\n" % (keys[rng.randrange(keys_n)].decode(),
                               BASE + rng.randrange(updates * 1000)))
c0, t0 = cpu_s(), time.monotonic()
out = subprocess.run([cli, "-b", bootstrap, "-o", "json", "table", "as-of", TOPIC, "--events", path],
                     check=True, capture_output=True)
wall, cpu = time.monotonic() - t0, cpu_s() - c0
answered = out.stdout.count(b"\n")
assert answered == events_n, (answered, events_n)
print(json.dumps({"phase": "training_set", "events": events_n, "wall_s": wall,
                  "events_per_s": events_n / wall, "broker_cpu_s": cpu}), flush=True)
