"""kill -9 cycles: while a librdkafka idempotent acks=all producer writes a log topic and a
primary-key table (broker with log.flush.interval.messages=1) and a consumer group reads and commits,
the broker is killed at a random point, restarted, and checked — STRATA_KILL_CYCLES times (10 in
CI; tools/soak.sh runs more):

- every acknowledged record is in the log at its acknowledged offset, and exactly once (values are
  unique per cycle: no duplicate from a retried batch);
- the group's committed offsets are <= the log end offset;
- every PK key's Lookup equals a replay of the table's log read by a plain consumer.
"""
import os
import random
import sys
import threading
import time
import unittest

import itutil
import test_pk_durability as pkd
from itutil import RawConn, unique_topic

CYCLES = int(os.environ.get("STRATA_KILL_CYCLES", "10"))
P = 2
NKEYS = 200


class KillCycles(itutil.BrokerTestCase):
    overrides = {"log.flush.interval.messages": "1"}

    def test_kill_restart_cycles(self):
        from confluent_kafka import Consumer, Producer, TopicPartition
        rng = random.Random(int(os.environ.get("STRATA_KILL_SEED", "20261201")))
        log_topic = unique_topic("kc-log")
        table = unique_topic("kc-pk")
        group = unique_topic("kc-g")
        itutil.ck_create_topic(self.broker.bootstrap, log_topic, P)
        itutil.ck_create_topic(self.broker.bootstrap, table, P, {"table.type": "primary-key"})
        acked_log = []  # (partition, offset, value)
        total_acked = 0
        for cycle in range(CYCLES):
            acked_log.clear()
            acked_pk = []
            prod = Producer({"bootstrap.servers": self.broker.bootstrap,
                             "partitioner": "murmur2_random", "enable.idempotence": True,
                             "acks": "all", "linger.ms": 1, "message.timeout.ms": 5000,
                             "log_level": 0})
            cons = Consumer({"bootstrap.servers": self.broker.bootstrap, "group.id": group,
                             "auto.offset.reset": "earliest", "enable.auto.commit": True,
                             "auto.commit.interval.ms": 100, "log_level": 0,
                             "session.timeout.ms": 6000})
            cons.subscribe([log_topic])
            stop = threading.Event()

            def on_log(err, msg):
                if err is None:
                    acked_log.append((msg.partition(), msg.offset(), msg.value()))

            def on_pk(err, msg):
                if err is None:
                    acked_pk.append(msg)

            def produce(cycle=cycle):
                i = 0
                while not stop.is_set():
                    if i >= 40000:  # bounds what each check re-reads
                        prod.poll(0.01)
                        continue
                    if i % 50 == 0:  # ~25k/s: the kill lands while the stream is in flight
                        prod.poll(0.002)
                    try:
                        prod.produce(log_topic, key=b"k%d" % (i % 50),
                                     value=b"c%d-%d" % (cycle, i), on_delivery=on_log)
                        k = b"key-%d" % rng.randrange(NKEYS)
                        v = None if i % 13 == 0 else b"c%d-v%d" % (cycle, i)
                        prod.produce(table, key=k, value=v, on_delivery=on_pk)
                    except BufferError:
                        prod.poll(0.01)
                        continue
                    prod.poll(0)
                    i += 1

            def consume():
                while not stop.is_set():
                    cons.poll(0.1)

            threads = [threading.Thread(target=produce), threading.Thread(target=consume)]
            for t in threads:
                t.start()
            try:
                itutil.harness.wait_until(lambda: len(acked_log) > 200, timeout=30,
                                          what="acks in cycle %d" % cycle)
                time.sleep(rng.uniform(0.05, 1.0))  # a random point of the stream
                self.broker.kill()
            finally:
                stop.set()
                for t in threads:
                    t.join()
            prod.purge()
            prod.flush(1)
            cons.close()
            total_acked += len(acked_log) + len(acked_pk)
            self.broker.start()
            self.check(log_topic, table, group, list(acked_log), cycle, TopicPartition)
        sys.stderr.write("[measure] %d kill -9 cycles, %d acknowledged writes\n" %
                         (CYCLES, total_acked))
        self.assertBrokerAlive()

    def check(self, log_topic, table, group, acked, cycle, TopicPartition):
        from confluent_kafka import Consumer
        with RawConn(self.broker.port) as c:
            ends = {}
            for p in range(P):
                r = itutil.fetch_v4(c, log_topic, p, 0, max_wait_ms=0, max_bytes=1)
                self.assertEqual(r["error"], 0)
                ends[p] = r["high_watermark"]
            msgs = itutil.ck_consume(self.broker.bootstrap, log_topic, list(range(P)),
                                     sum(ends.values()), timeout=90)
            at = {(m.partition(), m.offset()): m.value() for m in msgs}
            for p, off, v in acked:
                self.assertEqual(at.get((p, off)), v, "cycle %d: acked %d@%d lost" % (cycle, p, off))
            this_cycle = [m.value() for m in msgs if m.value().startswith(b"c%d-" % cycle)]
            self.assertEqual(len(this_cycle), len(set(this_cycle)),
                             "cycle %d: a record is in the log twice" % cycle)
            probe = Consumer({"bootstrap.servers": self.broker.bootstrap, "group.id": group,
                              "log_level": 0})
            try:
                committed = probe.committed([TopicPartition(log_topic, p) for p in range(P)],
                                            timeout=20)
            finally:
                probe.close()
            for tp in committed:
                self.assertLessEqual(tp.offset, ends[tp.partition],
                                     "cycle %d: committed past the log end" % cycle)
            _, model = pkd.consume_log(self.broker.bootstrap, table, P, c)
            keys = [b"key-%d" % i for i in range(NKEYS)]
            got = pkd.lookup_all(c, table, P, keys)
            for k in keys:
                self.assertEqual(got[k], model.get(k), "cycle %d: %r" % (cycle, k))


if __name__ == "__main__":
    unittest.main(verbosity=2)
