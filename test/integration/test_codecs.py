"""Every codec (none/gzip/snappy/lz4/zstd) across clients: confluent-kafka produces and
kafka-python reads back identical data, and the other way round. Also topic-level
compression.type=gzip (broker recompression) and message.timestamp.type=LogAppendTime."""
import time
import unittest

import itutil

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
N = 600
PARTITIONS = 2


def payload(codec, i):
    key = ("%s-key-%05d" % (codec, i)).encode()
    value = None if i % 50 == 49 else (("%s value %05d " % (codec, i)) * (1 + i % 20)).encode()
    headers = [("idx", str(i).encode()), ("codec", codec.encode())]
    return key, value, headers


def stored_codecs(data_dir, topic, partition):
    """Compression codec ids of the batches stored in the partition's segment files."""
    return {codec for codec, _ in stored_batches(data_dir, topic, partition)}


def stored_batches(data_dir, topic, partition):
    """[(codec id, record count)] of the batches stored in the partition's segment files."""
    out = []
    for path in itutil.segment_files(data_dir, topic, partition):
        with open(path, "rb") as f:
            for _, attrs, count, _ in itutil.iter_batches(f.read()):
                out.append((attrs & 7, count))
    return out


class Codecs(itutil.BrokerTestCase):
    def _check(self, got, codec, partitions_of):
        """got: list of (partition, offset, key, value, headers as list of (str, bytes))."""
        self.assertEqual(len(got), N)
        seen = {}
        for part, off, key, value, headers in got:
            i = int(key.decode().rsplit("-", 1)[1])
            self.assertNotIn(i, seen, "duplicate message %d" % i)
            seen[i] = (part, off)
            k, v, h = payload(codec, i)
            self.assertEqual(key, k)
            self.assertEqual(value, v, "value of message %d" % i)
            self.assertEqual(headers, h, "headers of message %d" % i)
            if partitions_of is not None:
                self.assertEqual((part, off), partitions_of[i], "partition/offset of message %d" % i)
        # order per partition follows send order
        for p in range(PARTITIONS):
            idx = [i for i in sorted(seen, key=lambda i: seen[i][1]) if seen[i][0] == p]
            self.assertEqual(idx, sorted(idx), "partition %d out of order" % p)

    def assertStoredAsProduced(self, topic, codec):
        """With topic compression.type=producer the broker keeps the producer's batches. Both
        clients send a batch uncompressed when compressing would grow it (small batches at
        start-up), so: only `codec` or none, and nearly all records in `codec` batches."""
        cid = itutil.COMPRESSION[codec]
        for p in range(PARTITIONS):
            batches = stored_batches(self.broker.data_dir, topic, p)
            self.assertLessEqual({c for c, _ in batches}, {0, cid}, "stored codecs, partition %d" % p)
            in_codec = sum(n for c, n in batches if c == cid)
            self.assertGreaterEqual(in_codec, 0.9 * sum(n for _, n in batches),
                                    "partition %d: records stored in %s batches: %r" % (p, codec, batches))

    def test_confluent_produces_kafka_python_reads(self):
        b = self.broker.bootstrap
        for codec in CODECS:
            with self.subTest(codec=codec):
                topic = itutil.unique_topic("ck-" + codec)
                itutil.ck_create_topic(b, topic, PARTITIONS)
                prod = itutil.ck_producer(b, **{"compression.type": codec, "linger.ms": 1000})
                items = []
                for i in range(N):
                    k, v, h = payload(codec, i)
                    items.append(dict(topic=topic, partition=i % PARTITIONS, key=k, value=v,
                                      headers=h))
                delivered = itutil.ck_produce_all(prod, items)
                where = {i: (m.partition(), m.offset()) for i, m in enumerate(delivered)}
                recs = itutil.kp_consume(b, topic, range(PARTITIONS), N)
                got = [(r.partition, r.offset, r.key, r.value, list(r.headers)) for r in recs]
                self._check(got, codec, where)
                # topic compression.type defaults to "producer": batches stay as produced
                self.assertStoredAsProduced(topic, codec)

    def test_kafka_python_produces_confluent_reads(self):
        b = self.broker.bootstrap
        for codec in CODECS:
            with self.subTest(codec=codec):
                topic = itutil.unique_topic("kp-" + codec)
                itutil.ck_create_topic(b, topic, PARTITIONS)
                # a long linger: all records are sent in full batches at flush(), so every batch is
                # compressible (both clients send a batch uncompressed when compression would grow it)
                prod = itutil.kp_producer(b, compression_type=None if codec == "none" else codec,
                                          linger_ms=1000)
                futures = []
                for i in range(N):
                    k, v, h = payload(codec, i)
                    futures.append(prod.send(topic, key=k, value=v, headers=h, partition=i % PARTITIONS))
                prod.flush(60)
                where = {}
                for i, f in enumerate(futures):
                    md = f.get(timeout=30)
                    where[i] = (md.partition, md.offset)
                prod.close(10)
                msgs = itutil.ck_consume(b, topic, range(PARTITIONS), N)
                got = [(m.partition(), m.offset(), m.key(), m.value(), list(m.headers() or []))
                       for m in msgs]
                self._check(got, codec, where)
                self.assertStoredAsProduced(topic, codec)

    def test_topic_compression_gzip_recompresses(self):
        b = self.broker.bootstrap
        topic = itutil.unique_topic("recompress")
        itutil.ck_create_topic(b, topic, PARTITIONS, config={"compression.type": "gzip"})
        codec = "lz4"  # producer uses lz4, broker must store gzip
        prod = itutil.ck_producer(b, **{"compression.type": codec, "linger.ms": 1000})
        items = []
        for i in range(N):
            k, v, h = payload(codec, i)
            items.append(dict(topic=topic, partition=i % PARTITIONS, key=k, value=v, headers=h))
        delivered = itutil.ck_produce_all(prod, items)
        where = {i: (m.partition(), m.offset()) for i, m in enumerate(delivered)}
        # also an uncompressed producer
        prod2 = itutil.kp_producer(b)
        for i in range(5):
            prod2.send(topic, key=b"plain-%d" % i, value=b"plain value %d" % i, partition=0).get(30)
        prod2.close(10)

        for p in range(PARTITIONS):
            self.assertEqual(stored_codecs(self.broker.data_dir, topic, p), {itutil.COMPRESSION["gzip"]},
                             "partition %d: batches must be stored gzip-compressed" % p)
        msgs = itutil.ck_consume(b, topic, range(PARTITIONS), N + 5)
        got = [(m.partition(), m.offset(), m.key(), m.value(), list(m.headers() or []))
               for m in msgs if not m.key().startswith(b"plain-")]
        self._check(got, codec, where)
        plain = [(m.offset(), m.key(), m.value()) for m in msgs if m.key().startswith(b"plain-")]
        end0 = max(off for (p, off) in where.values() if p == 0)
        self.assertEqual(plain, [(end0 + 1 + i, b"plain-%d" % i, b"plain value %d" % i) for i in range(5)])
        recs = itutil.kp_consume(b, topic, range(PARTITIONS), N + 5)
        got = [(r.partition, r.offset, r.key, r.value, list(r.headers)) for r in recs
               if not r.key.startswith(b"plain-")]
        self._check(got, codec, where)

    def test_log_append_time(self):
        from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME
        b = self.broker.bootstrap
        topic = itutil.unique_topic("lat")
        itutil.ck_create_topic(b, topic, 1, config={"message.timestamp.type": "LogAppendTime"})
        old_ts = 1_000_000_000_000  # 2001: must be replaced by the broker's clock
        before = int(time.time() * 1000)
        prod = itutil.ck_producer(b, **{"compression.type": "gzip"})
        items = [dict(topic=topic, partition=0, key=b"k%d" % i, value=b"v%d" % i, timestamp=old_ts + i)
                 for i in range(50)]
        delivered = itutil.ck_produce_all(prod, items)
        after = int(time.time() * 1000)
        for m in delivered:
            ts_type, ts = m.timestamp()
            self.assertEqual(ts_type, TIMESTAMP_LOG_APPEND_TIME, "delivery report timestamp type")
            self.assertTrue(before - 1000 <= ts <= after + 1000, "delivery report ts %d" % ts)

        msgs = itutil.ck_consume(b, topic, [0], 50)
        for i, m in enumerate(msgs):
            ts_type, ts = m.timestamp()
            self.assertEqual(ts_type, TIMESTAMP_LOG_APPEND_TIME)
            self.assertTrue(before - 1000 <= ts <= after + 1000, "consumed ts %d not in [%d, %d]" %
                            (ts, before, after))
            self.assertEqual(m.value(), b"v%d" % i)
        recs = itutil.kp_consume(b, topic, [0], 50)
        for i, r in enumerate(recs):
            self.assertEqual(r.timestamp_type, 1, "kafka-python timestamp_type (1 = LogAppendTime)")
            self.assertTrue(before - 1000 <= r.timestamp <= after + 1000)
            self.assertEqual(r.value, b"v%d" % i)


if __name__ == "__main__":
    unittest.main(verbosity=2)
