"""Retention and log compaction against a real broker (issue 4), with fast settings:
- lowering retention.ms (AlterConfigs) deletes old segments within the check interval, and a
  consumer from earliest starts at the new log start offset;
- a compacted topic with 100k updates over 1k keys plus deletes: after cleaning, a consumer from the
  beginning sees exactly the latest value of every live key, in offset order; tombstones disappear
  after delete.retention.ms; the partition's files shrink;
- keyless records on a compacted topic are refused with INVALID_RECORD.
"""
import os
import random
import time
import unittest

import itutil
from itutil import BrokerTestCase, unique_topic, ck_create_topic, ck_producer, ck_produce_all
import harness


def partition_dir(broker, topic, p=0):
    return os.path.join(broker.data_dir, "logs", "%s-%d" % (topic, p))


def log_bytes(broker, topic):
    d = partition_dir(broker, topic)
    return sum(os.path.getsize(os.path.join(d, n)) for n in os.listdir(d) if n.endswith(".log"))


consume_to_end = itutil.ck_consume_to_end


def watermarks(bootstrap, topic):
    from confluent_kafka import TopicPartition
    c = itutil.ck_consumer(bootstrap)
    try:
        return c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    finally:
        c.close()


class RetentionCompactionTest(BrokerTestCase):
    overrides = {
        "log.retention.check.interval.ms": "300",
        "log.cleaner.backoff.ms": "200",
        "log.segment.bytes.min": "1024",  # small segments, so retention and the cleaner act
    }

    def test_lowering_retention_ms_moves_log_start(self):
        from confluent_kafka.admin import ConfigResource
        topic = unique_topic("retention")
        seg = {"segment.bytes": "20000"}
        ck_create_topic(self.broker.bootstrap, topic, 1, seg)
        p = ck_producer(self.broker.bootstrap)
        now_ms = int(time.time() * 1000)
        old = [dict(topic=topic, partition=0, value=b"old-%05d" % i + b"x" * 100,
                    timestamp=now_ms - 2 * 3600 * 1000) for i in range(1000)]
        new = [dict(topic=topic, partition=0, value=b"new-%05d" % i + b"x" * 100,
                    timestamp=now_ms) for i in range(300)]
        ck_produce_all(p, old)
        ck_produce_all(p, new)
        self.assertEqual(watermarks(self.broker.bootstrap, topic), (0, 1300))

        admin = itutil.ck_admin(self.broker.bootstrap)
        res = ConfigResource(ConfigResource.Type.TOPIC, topic,
                             set_config=dict(seg, **{"retention.ms": "3600000"}))
        for f in admin.alter_configs([res]).values():
            f.result(30)
        start = time.time()
        harness.wait_until(lambda: watermarks(self.broker.bootstrap, topic)[0] > 0, timeout=15,
                           what="log start offset to move")
        elapsed = time.time() - start
        low, high = watermarks(self.broker.bootstrap, topic)
        self.assertEqual(high, 1300)
        self.assertLessEqual(low, 1000)  # the segment holding the first new record stays
        self.assertLess(elapsed, 10)
        msgs = consume_to_end(self.broker.bootstrap, topic)
        self.assertEqual(msgs[0].offset(), low)
        self.assertEqual([m.offset() for m in msgs], list(range(low, 1300)))
        self.assertEqual(sum(1 for m in msgs if m.value().startswith(b"new-")), 300)
        # The deleted segments' files are gone.
        first_file = min(n for n in os.listdir(partition_dir(self.broker, topic)) if n.endswith(".log"))
        self.assertEqual(int(first_file[:20]), low)

    def test_compaction_keeps_latest_value_per_key_and_drops_tombstones(self):
        from confluent_kafka.admin import ConfigResource
        topic = unique_topic("compacted")
        configs = {
            "cleanup.policy": "compact",
            "segment.bytes": "262144",
            "min.cleanable.dirty.ratio": "0.01",
            "delete.retention.ms": "3000",
            "segment.ms": "1500",
        }
        # No cleaning while the data is written (min.compaction.lag.ms), so the size before is real.
        ck_create_topic(self.broker.bootstrap, topic, 1, dict(configs, **{"min.compaction.lag.ms": "3600000"}))
        p = ck_producer(self.broker.bootstrap, linger_ms=20, batch_num_messages=500)
        rng = random.Random(4)
        latest = {}
        items = []
        for i in range(100000):
            k = b"key-%04d" % rng.randrange(1000)
            v = b"value-%06d" % i
            latest[k] = v
            items.append(dict(topic=topic, partition=0, key=k, value=v))
        deleted = [b"key-%04d" % k for k in range(0, 1000, 10)]  # 100 keys
        for k in deleted:
            latest[k] = None
            items.append(dict(topic=topic, partition=0, key=k, value=None))
        ck_produce_all(p, items)
        size_before = log_bytes(self.broker, topic)
        # Roll the active segment (segment.ms) so every update is in the cleanable part.
        time.sleep(1.7)
        ck_produce_all(p, [dict(topic=topic, partition=0, key=b"marker", value=b"m")])
        end = 100000 + len(deleted) + 1
        self.assertGreater(size_before, 2000000)
        admin = itutil.ck_admin(self.broker.bootstrap)
        res = ConfigResource(ConfigResource.Type.TOPIC, topic, set_config=configs)  # lag back to 0
        for f in admin.alter_configs([res]).values():
            f.result(30)

        harness.wait_until(lambda: log_bytes(self.broker, topic) < size_before / 10, timeout=30,
                           what="the cleaner to shrink the log")
        # Tombstones survive the first pass; after delete.retention.ms a later pass removes them.
        harness.wait_until(lambda: len(consume_to_end(self.broker.bootstrap, topic)) == 1000 - 100 + 1,
                           timeout=30, interval=0.5, what="tombstones to be removed")
        msgs = consume_to_end(self.broker.bootstrap, topic)
        offsets = [m.offset() for m in msgs]
        self.assertEqual(offsets, sorted(offsets))
        self.assertEqual(len(set(offsets)), len(offsets))
        self.assertEqual(msgs[-1].key(), b"marker")
        self.assertEqual(msgs[-1].offset(), end - 1)
        seen = {}
        for m in msgs[:-1]:
            self.assertNotIn(m.key(), seen, "key seen twice")
            self.assertIsNotNone(m.value())
            seen[m.key()] = m.value()
        live = {k: v for k, v in latest.items() if v is not None}
        self.assertEqual(seen, live)
        self.assertEqual(watermarks(self.broker.bootstrap, topic), (0, end))
        self.assertLess(log_bytes(self.broker, topic), size_before / 10)
        self.assertFalse([n for n in os.listdir(partition_dir(self.broker, topic))
                          if n.endswith(".cleaned") or n.endswith(".swap")])
        # New writes after compaction continue at the log end.
        got = ck_produce_all(p, [dict(topic=topic, partition=0, key=b"key-0001", value=b"after")])
        self.assertEqual(got[0].offset(), end)

    def test_keyless_record_on_compacted_topic_is_invalid_record(self):
        topic = unique_topic("compacted-keyless")
        ck_create_topic(self.broker.bootstrap, topic, 1, {"cleanup.policy": "compact,delete"})
        p = ck_producer(self.broker.bootstrap, message_timeout_ms=10000)
        with self.assertRaises(AssertionError) as ctx:
            ck_produce_all(p, [dict(topic=topic, partition=0, value=b"no key")])
        self.assertIn("INVALID_RECORD", str(ctx.exception))  # KafkaError{code=INVALID_RECORD,...}
        # With a key it is accepted.
        got = ck_produce_all(p, [dict(topic=topic, partition=0, key=b"k", value=b"v")])
        self.assertEqual(got[0].offset(), 0)


if __name__ == "__main__":
    unittest.main()
