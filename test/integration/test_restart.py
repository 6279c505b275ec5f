"""Restarts of the real broker process on the same data directory:
- clean (SIGTERM) restart: all data, topic metadata (partitions, topic id) survive, offsets continue,
  the leader epoch is bumped;
- kill -9 while an acks=all producer is running: every acknowledged record is readable after the
  restart (log.flush.interval.messages=1), and with the default flush policy the log is readable and
  whatever survived is what was acknowledged."""
import threading
import time
import unittest

import harness
import itutil


def produce_topic(bootstrap, topic, start, count, partitions):
    prod = itutil.ck_producer(bootstrap)
    items = [dict(topic=topic, partition=i % partitions, key=b"key-%d" % i, value=b"value-%d" % i * 3,
                  headers=[("n", b"%d" % i)]) for i in range(start, start + count)]
    return itutil.ck_produce_all(prod, items)


class CleanRestart(unittest.TestCase):
    def setUp(self):
        self.broker = harness.BrokerProcess()
        self.broker.start()

    def tearDown(self):
        self.broker.cleanup()

    def test_clean_restart_keeps_data_and_offsets_continue(self):
        topic = itutil.unique_topic("restart")
        parts = 3
        itutil.ck_create_topic(self.broker.bootstrap, topic, parts)
        first = produce_topic(self.broker.bootstrap, topic, 0, 3000, parts)
        with itutil.RawConn(self.broker.port) as conn:
            md_before = itutil.metadata_v10(conn, [topic])[topic]
        self.assertEqual(md_before["error"], 0)

        rc = self.broker.stop()
        self.assertEqual(rc, 0, "clean shutdown exit code; log:\n" + "\n".join(self.broker.log_lines[-20:]))
        self.broker.start()
        b = self.broker.bootstrap

        with itutil.RawConn(self.broker.port) as conn:
            md_after = itutil.metadata_v10(conn, [topic])[topic]
        self.assertEqual(md_after["error"], 0)
        self.assertEqual(md_after["topic_id"], md_before["topic_id"], "topic id must survive a restart")
        self.assertEqual(sorted(md_after["partitions"]), list(range(parts)))
        for p in range(parts):
            self.assertGreater(md_after["partitions"][p], md_before["partitions"][p],
                               "leader epoch of partition %d must be bumped on start" % p)

        msgs = itutil.ck_consume(b, topic, range(parts), 3000)
        got = sorted((m.partition(), m.offset(), m.key(), m.value(), m.headers()) for m in msgs)
        # (delivery reports carry no headers: rebuild them from the key)
        want = sorted((m.partition(), m.offset(), m.key(), m.value(), [("n", m.key()[4:])]) for m in first)
        itutil.assert_same_list(self, got, want, "records after restart")

        second = produce_topic(b, topic, 3000, 300, parts)
        ends = {p: max(m.offset() for m in first if m.partition() == p) for p in range(parts)}
        for p in range(parts):
            offs = [m.offset() for m in second if m.partition() == p]
            self.assertEqual(offs, list(range(ends[p] + 1, ends[p] + 1 + len(offs))),
                             "offsets after restart must continue, partition %d" % p)
        msgs = itutil.ck_consume(b, topic, range(parts), 3300)
        self.assertEqual(len(msgs), 3300)
        from confluent_kafka import TopicPartition
        c = itutil.ck_consumer(b)
        try:
            for p in range(parts):
                lo, hi = c.get_watermark_offsets(TopicPartition(topic, p), timeout=20, cached=False)
                self.assertEqual((lo, hi), (0, ends[p] + 1 + 100))
        finally:
            c.close()


class KillNine(unittest.TestCase):
    ACKED_BEFORE_KILL = 20000

    def _run(self, overrides):
        broker = harness.BrokerProcess(overrides=overrides)
        broker.start()
        try:
            topic = itutil.unique_topic("kill9")
            parts = 2
            itutil.ck_create_topic(broker.bootstrap, topic, parts)
            acked = {}  # (partition, offset) -> (key, value)
            lock = threading.Lock()
            stop = threading.Event()
            prod = itutil.ck_producer(broker.bootstrap, **{"acks": "all", "linger.ms": 2,
                                                           "message.timeout.ms": 5000,
                                                           "retries": 0})

            def on_delivery(err, msg):
                if err is None:
                    with lock:
                        acked[(msg.partition(), msg.offset())] = (msg.key(), msg.value())

            def run():
                i = 0
                while not stop.is_set():
                    try:
                        prod.produce(topic, key=b"k%d" % i, value=b"value %d " % i * 5,
                                     partition=i % parts, on_delivery=on_delivery)
                        i += 1
                    except BufferError:
                        prod.poll(0.01)
                    prod.poll(0)
                prod.flush(10)

            t = threading.Thread(target=run, daemon=True)
            t.start()
            harness.wait_until(lambda: len(acked) >= self.ACKED_BEFORE_KILL, timeout=60,
                               what="%d acknowledged records" % self.ACKED_BEFORE_KILL)
            broker.kill()  # SIGKILL while the producer keeps sending
            stop.set()
            t.join(30)
            with lock:
                acked = dict(acked)
            self.assertGreaterEqual(len(acked), self.ACKED_BEFORE_KILL)

            broker.start()
            self.assertTrue(broker.alive())
            from confluent_kafka import TopicPartition
            c = itutil.ck_consumer(broker.bootstrap)
            try:
                ends = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=20, cached=False)
                        for p in range(parts)}
            finally:
                c.close()
            total = sum(hi - lo for lo, hi in ends.values())
            msgs = itutil.ck_consume(broker.bootstrap, topic, range(parts), total)
            stored = {}
            for m in msgs:
                stored[(m.partition(), m.offset())] = (m.key(), m.value())
            for p in range(parts):
                offs = sorted(o for (q, o) in stored if q == p)
                self.assertEqual(offs, list(range(len(offs))), "partition %d offsets not contiguous" % p)
            # whatever survived at an acknowledged offset is the acknowledged record
            for key, rec in acked.items():
                if key in stored:
                    self.assertEqual(stored[key], rec, "record at %r differs from the acknowledged one" % (key,))
            lost = [k for k in acked if k not in stored]

            # the recovered log takes new appends at its end
            after = produce_topic(broker.bootstrap, topic, 10 ** 6, 20, parts)
            for m in after:
                self.assertGreaterEqual(m.offset(), ends[m.partition()][1])
            msgs = itutil.ck_consume(broker.bootstrap, topic, range(parts), total + 20)
            self.assertEqual(len(msgs), total + 20)
            return acked, lost
        finally:
            broker.cleanup()

    def test_kill9_flush_every_message_loses_nothing_acknowledged(self):
        acked, lost = self._run({"log.flush.interval.messages": "1"})
        self.assertEqual(lost, [], "%d of %d acknowledged records lost after kill -9" % (len(lost), len(acked)))

    def test_kill9_default_flush_policy_log_readable(self):
        acked, lost = self._run({})
        # a process crash keeps the OS page cache: acknowledged records were written before the ack
        self.assertEqual(lost, [], "%d of %d acknowledged records lost after kill -9" % (len(lost), len(acked)))


if __name__ == "__main__":
    unittest.main(verbosity=2)
