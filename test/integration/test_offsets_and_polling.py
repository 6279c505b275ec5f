"""ListOffsets (earliest, latest, by timestamp with the search inside batches) through
confluent-kafka and kafka-python, and Fetch long-polling: a fetch waiting on an empty partition
(max wait 10 s) is answered promptly when a record is appended."""
import threading
import time
import unittest

import itutil

T0 = 1_700_000_000_000  # explicit CreateTime timestamps, 1 s apart
COUNT = 30
BATCHES = 3


class Offsets(itutil.BrokerTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        b = cls.broker.bootstrap
        cls.topic = itutil.unique_topic("ts")
        itutil.ck_create_topic(b, cls.topic, 2)
        prod = itutil.ck_producer(b, **{"linger.ms": 50})
        # partition 0: 3 batches of 10, timestamps T0 + 1000*i
        per = COUNT // BATCHES
        for n in range(BATCHES):
            itutil.ck_produce_all(prod, [dict(topic=cls.topic, partition=0, value=b"v%d" % i,
                                              timestamp=T0 + 1000 * i)
                                         for i in range(n * per, (n + 1) * per)])
        # partition 1: one batch with non-monotonic timestamps
        cls.p1_ts = [T0 + 100, T0 + 300, T0 + 200, T0 + 400, T0 + 50]
        itutil.ck_produce_all(prod, [dict(topic=cls.topic, partition=1, value=b"w%d" % i, timestamp=ts)
                                     for i, ts in enumerate(cls.p1_ts)])

    def _ck_offset_for(self, consumer, partition, ts):
        from confluent_kafka import TopicPartition
        res = consumer.offsets_for_times([TopicPartition(self.topic, partition, ts)], timeout=20)
        self.assertIsNone(res[0].error)
        return res[0].offset

    def test_confluent_offsets_for_times(self):
        c = itutil.ck_consumer(self.broker.bootstrap)
        try:
            cases = [(T0 - 5000, 0), (T0, 0), (T0 + 1, 1), (T0 + 9999, 10), (T0 + 10000, 10),
                     (T0 + 14500, 15), (T0 + 20000, 20), (T0 + 29000, 29), (T0 + 29001, -1),
                     (T0 + 10 ** 9, -1)]
            for ts, want in cases:
                self.assertEqual(self._ck_offset_for(c, 0, ts), want, "partition 0, timestamp T0%+d" % (ts - T0))
            # inside one batch with out-of-order timestamps: first offset whose ts >= target
            for ts, want in [(T0, 0), (T0 + 100, 0), (T0 + 101, 1), (T0 + 250, 1), (T0 + 300, 1),
                             (T0 + 301, 3), (T0 + 400, 3), (T0 + 401, -1)]:
                self.assertEqual(self._ck_offset_for(c, 1, ts), want, "partition 1, timestamp T0%+d" % (ts - T0))
        finally:
            c.close()

    def test_confluent_watermarks(self):
        from confluent_kafka import TopicPartition
        c = itutil.ck_consumer(self.broker.bootstrap)
        try:
            self.assertEqual(c.get_watermark_offsets(TopicPartition(self.topic, 0), timeout=20, cached=False),
                             (0, COUNT))
            self.assertEqual(c.get_watermark_offsets(TopicPartition(self.topic, 1), timeout=20, cached=False),
                             (0, len(self.p1_ts)))
        finally:
            c.close()

    def test_kafka_python_offsets(self):
        from kafka import KafkaConsumer, TopicPartition
        c = KafkaConsumer(bootstrap_servers=self.broker.bootstrap, group_id=None, enable_auto_commit=False)
        try:
            tp0, tp1 = TopicPartition(self.topic, 0), TopicPartition(self.topic, 1)
            self.assertEqual(c.beginning_offsets([tp0, tp1]), {tp0: 0, tp1: 0})
            self.assertEqual(c.end_offsets([tp0, tp1]), {tp0: COUNT, tp1: len(self.p1_ts)})
            res = c.offsets_for_times({tp0: T0 + 14500, tp1: T0 + 250})
            self.assertEqual((res[tp0].offset, res[tp0].timestamp), (15, T0 + 15000))
            self.assertEqual((res[tp1].offset, res[tp1].timestamp), (1, T0 + 300))
            res = c.offsets_for_times({tp0: T0 + 29001, tp1: T0 - 1})
            self.assertIsNone(res[tp0], "no record at or after the target → none found")
            self.assertEqual((res[tp1].offset, res[tp1].timestamp), (0, T0 + 100))
        finally:
            c.close()

    def test_timestamps_read_back(self):
        msgs = itutil.ck_consume(self.broker.bootstrap, self.topic, [0, 1], COUNT + len(self.p1_ts))
        ts0 = [m.timestamp()[1] for m in msgs if m.partition() == 0]
        ts1 = [m.timestamp()[1] for m in msgs if m.partition() == 1]
        self.assertEqual(ts0, [T0 + 1000 * i for i in range(COUNT)])
        self.assertEqual(ts1, self.p1_ts)


class LongPoll(itutil.BrokerTestCase):
    def _produce_later(self, topic, delay, out):
        def run():
            prod = itutil.ck_producer(self.broker.bootstrap, **{"linger.ms": 0, "acks": 1})
            time.sleep(delay)  # "a message produced 1 s later"
            out["sent"] = time.monotonic()
            itutil.ck_produce_all(prod, [dict(topic=topic, partition=0, value=b"wake-up")])
            out["acked"] = time.monotonic()
        t = threading.Thread(target=run, daemon=True)
        t.start()
        return t

    def test_confluent_consumer_woken_by_append(self):
        from confluent_kafka import TopicPartition, KafkaError
        topic = itutil.unique_topic("lp-ck")
        itutil.ck_create_topic(self.broker.bootstrap, topic, 1)
        c = itutil.ck_consumer(self.broker.bootstrap, **{"fetch.wait.max.ms": 10000})
        try:
            c.assign([TopicPartition(topic, 0, 0)])
            # the partition-EOF event means a first fetch came back empty; the next one is parked
            deadline = time.time() + 20
            while True:
                self.assertLess(time.time(), deadline, "no partition EOF from the empty partition")
                m = c.poll(0.5)
                if m is not None:
                    self.assertIsNotNone(m.error(), "unexpected message on an empty partition")
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        break
                    self.fail("consumer error %s" % m.error())
            times = {}
            t = self._produce_later(topic, 1.0, times)
            got = None
            deadline = time.time() + 15
            while got is None and time.time() < deadline:
                m = c.poll(0.1)
                if m is not None and not m.error():
                    got = m
                    received = time.monotonic()
            t.join(20)
            self.assertIsNotNone(got, "message never received")
            self.assertEqual(got.value(), b"wake-up")
            self.assertIn("sent", times)
            self.assertLess(received - times["sent"], 2.0,
                            "fetch with fetch.wait.max.ms=10000 answered %.2fs after the produce"
                            % (received - times["sent"]))
        finally:
            c.close()

    def test_kafka_python_consumer_woken_by_append(self):
        from kafka import KafkaConsumer, TopicPartition
        topic = itutil.unique_topic("lp-kp")
        itutil.ck_create_topic(self.broker.bootstrap, topic, 1)
        c = KafkaConsumer(bootstrap_servers=self.broker.bootstrap, group_id=None, enable_auto_commit=False,
                          fetch_max_wait_ms=10000, request_timeout_ms=30000)
        try:
            tp = TopicPartition(topic, 0)
            c.assign([tp])
            c.seek(tp, 0)
            self.assertEqual(c.poll(timeout_ms=1000), {})  # issues the first (parked) fetch
            times = {}
            t = self._produce_later(topic, 1.0, times)
            got = []
            deadline = time.time() + 15
            while not got and time.time() < deadline:
                for recs in c.poll(timeout_ms=100).values():
                    got.extend(recs)
            received = time.monotonic()
            t.join(20)
            self.assertEqual([r.value for r in got], [b"wake-up"])
            self.assertLess(received - times["sent"], 2.0,
                            "fetch_max_wait_ms=10000 fetch answered %.2fs after the produce"
                            % (received - times["sent"]))
        finally:
            c.close()

    def test_raw_fetch_is_held_then_woken(self):
        topic = itutil.unique_topic("lp-raw")
        itutil.ck_create_topic(self.broker.bootstrap, topic, 1)
        with itutil.RawConn(self.broker.port, timeout=30) as conn:
            # nothing arrives: the broker holds the fetch for max_wait_ms
            start = time.monotonic()
            r = itutil.fetch_v4(conn, topic, 0, 0, max_wait_ms=1500)
            held = time.monotonic() - start
            self.assertEqual((r["error"], r["high_watermark"], r["records"]), (0, 0, b""))
            self.assertGreater(held, 1.2, "empty fetch returned after %.2fs, max_wait_ms=1500" % held)
            self.assertLess(held, 6.0)

            # a record appended 1 s into a 10 s wait answers the fetch right away
            times = {}
            t = self._produce_later(topic, 1.0, times)
            start = time.monotonic()
            r = itutil.fetch_v4(conn, topic, 0, 0, max_wait_ms=10000)
            done = time.monotonic()
            t.join(20)
            self.assertEqual(r["error"], 0)
            self.assertEqual(r["high_watermark"], 1)
            self.assertEqual(r["last_stable_offset"], 1)
            batches = list(itutil.iter_batches(r["records"]))
            self.assertEqual([(b[0], b[2]) for b in batches], [(0, 1)])
            self.assertLess(done - times["sent"], 2.0, "fetch answered %.2fs after the produce"
                            % (done - times["sent"]))
            self.assertLess(done - start, 4.0)

            # beyond the log end → OFFSET_OUT_OF_RANGE (1)
            r = itutil.fetch_v4(conn, topic, 0, 1000, max_wait_ms=100)
            self.assertEqual(r["error"], 1, "fetch at offset 1000 of a 1-record log")


    def test_raw_fetch_returns_whole_batch_beyond_max_bytes(self):
        topic = itutil.unique_topic("maxb")
        itutil.ck_create_topic(self.broker.bootstrap, topic, 1)
        prod = itutil.ck_producer(self.broker.bootstrap, **{"linger.ms": 50})
        for n in range(3):  # three batches of 20 records, ~2 KB each
            itutil.ck_produce_all(prod, [dict(topic=topic, partition=0, value=b"%03d" % i * 30)
                                         for i in range(n * 20, n * 20 + 20)])
        with itutil.RawConn(self.broker.port) as conn:
            r = itutil.fetch_v4(conn, topic, 0, 0, max_wait_ms=0, max_bytes=10)
            self.assertEqual(r["error"], 0)
            batches = list(itutil.iter_batches(r["records"]))
            self.assertGreaterEqual(len(batches), 1, "at least one whole batch even above max_bytes")
            self.assertEqual(batches[0][0], 0)
            # a fetch from inside a batch returns the batch that contains the offset
            r = itutil.fetch_v4(conn, topic, 0, 25, max_wait_ms=0, max_bytes=10)
            batches = list(itutil.iter_batches(r["records"]))
            self.assertGreaterEqual(len(batches), 1)
            base, _, count, _ = batches[0]
            self.assertTrue(base <= 25 < base + count, "batch [%d, %d) must contain offset 25"
                            % (base, base + count))
            # a large max_bytes returns everything
            r = itutil.fetch_v4(conn, topic, 0, 0, max_wait_ms=0, max_bytes=1 << 20)
            batches = list(itutil.iter_batches(r["records"]))
            self.assertEqual(sum(b[2] for b in batches), 60)
            self.assertEqual(r["high_watermark"], 60)

if __name__ == "__main__":
    unittest.main(verbosity=2)
