"""Produce-latency probe for tools/bench_compaction.sh.

Fills a compacted topic `big` (cleaning held back by min.compaction.lag.ms), then measures the
produce latency (send -> delivery report, acks=all, one message in flight at a fixed rate) on a
separate topic twice: without compaction, and while the cleaner compacts `big` (lag lifted through
AlterConfigs). Prints one TSV line per phase: phase, n, p50_ms, p99_ms, max_ms, cleaner_busy.

usage: compaction_latency.py <bootstrap> <partition dir of big-0> <updates> <keys> <probe msgs>
"""
import os
import sys
import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic


def create(admin, name, configs):
    fs = admin.create_topics([NewTopic(name, num_partitions=1, replication_factor=1, config=configs)])
    fs[name].result(30)


def log_bytes(d):
    return sum(os.path.getsize(os.path.join(d, n)) for n in os.listdir(d) if n.endswith(".log"))


def probe(bootstrap, topic, n, rate=500):
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0,
                  "enable.idempotence": False})
    lat = []
    interval = 1.0 / rate
    payload = b"x" * 100
    for i in range(n):
        t0 = time.perf_counter()
        done = []
        p.produce(topic, payload, key=b"k%d" % (i % 100),
                  on_delivery=lambda err, msg, t0=t0: done.append((err, time.perf_counter() - t0)))
        while not done:
            p.poll(0.0005)
        if done[0][0] is not None:
            raise SystemExit("delivery failed: %s" % done[0][0])
        lat.append(done[0][1] * 1000)
        sleep = interval - (time.perf_counter() - t0)
        if sleep > 0:
            time.sleep(sleep)
    lat.sort()
    return lat


def pct(lat, q):
    return lat[min(len(lat) - 1, int(q * len(lat)))]


def main():
    bootstrap, big_dir, updates, keys, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    admin = AdminClient({"bootstrap.servers": bootstrap})
    big_cfg = {"cleanup.policy": "compact", "segment.bytes": str(16 << 20),
               "min.cleanable.dirty.ratio": "0.01"}
    create(admin, "big", dict(big_cfg, **{"min.compaction.lag.ms": "3600000"}))
    create(admin, "probe", {})
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 2000,
                  "queue.buffering.max.messages": 500000, "enable.idempotence": False})
    value = b"v" * 100
    for i in range(updates):
        while True:
            try:
                p.produce("big", value, key=b"key-%07d" % (i % keys))
                break
            except BufferError:
                p.poll(0.05)
        if i % 10000 == 0:
            p.poll(0)
    p.produce("big", b"roll", key=b"roll")
    p.flush(120)
    time.sleep(1.0)
    p.produce("big", b"roll", key=b"roll")  # segment.ms is small: rolls the active segment
    p.flush(30)
    before = log_bytes(big_dir)

    base = probe(bootstrap, "probe", n)
    print("without_compaction\t%d\t%.2f\t%.2f\t%.2f\t-" % (n, pct(base, .5), pct(base, .99), base[-1]))

    res = ConfigResource(ConfigResource.Type.TOPIC, "big", set_config=big_cfg)
    for f in admin.alter_configs([res]).values():
        f.result(30)
    t0 = time.time()
    during = probe(bootstrap, "probe", n)
    t1 = time.time()
    after = log_bytes(big_dir)
    print("during_compaction\t%d\t%.2f\t%.2f\t%.2f\tbig: %d -> %d bytes; probe %s-%s" % (
        n, pct(during, .5), pct(during, .99), during[-1], before, after,
        time.strftime("%H:%M:%S", time.localtime(t0)), time.strftime("%H:%M:%S", time.localtime(t1))))


if __name__ == "__main__":
    main()
