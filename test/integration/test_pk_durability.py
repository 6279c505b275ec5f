"""Durability of primary-key tables (issue 5, engineer H2), against one broker started with
--enable-test-faults (the only fault used: test.fault.pk.compact.before.checkpoint=1, a full RocksDB
compaction before each checkpoint so the TTL filter runs on demand):

- kill -9 of the broker while librdkafka streams upserts/deletes: after the restart every
  acknowledged write is in the log, and Lookup of every key equals a replay of the log read by a
  plain consumer (value = row, null = deleted);
- TTL of 3 s: a row is present at t+2 s and absent from t+3 s on, the on-disk key count drops after
  the (forced) compaction, expiry writes no changelog record, writing the key again is an insert;
- checkpoints appear under <partition>/kv-checkpoints/<20 digits>/ (at most pk.checkpoint.retained),
  table.kv.snapshot.interval.ms is alterable without restart, and retention (tiny segments,
  retention.bytes) and DeleteRecords never move the log start past the newest checkpoint + 1, while
  the table stays correct across a restart.
"""
import os
import re
import struct
import sys
import threading
import time
import unittest

import itutil
import test_pk_tables as pkt
from itutil import BrokerTestCase, RawConn, array32, str16, unique_topic

API_DELETE_RECORDS = 21
API_INCREMENTAL_ALTER_CONFIGS = 44
TOPIC_RESOURCE = 2


def describe_partitions(conn, topic):
    """-> {partition: dict(applied, rows, checkpoint, gap_below, hw, error)}."""
    err, tables = pkt.describe_table(conn, [topic])
    assert err == 0, err
    out = {}
    for p in tables[0].get(12, []):
        p = pkt.pb_parse(p)
        out[pkt.one(p, 1)] = dict(error=pkt.one(p, 2), applied=pkt.one(p, 3), rows=pkt.one(p, 4),
                                  checkpoint=pkt.one(p, 5), gap_below=pkt.one(p, 6),
                                  hw=pkt.one(p, 7))
    return out


def lookup_all(conn, topic, nparts, keys):
    by_part = {}
    for k in keys:
        by_part.setdefault(pkt.murmur2_partition(k, nparts), []).append(k)
    top, res = pkt.lookup(conn, topic, by_part)
    assert top == 0, top
    got = {}
    for p, ks in by_part.items():
        assert res[p][0] == 0, res[p]
        for k, row in zip(ks, res[p][2]):
            got[k] = row[0] if row else None
    return got


def consume_log(bootstrap, topic, nparts, conn):
    """Reads each partition from its log start to its high watermark with a plain consumer ->
    ({(partition, offset): (key, value)}, replay model {key: value})."""
    desc = describe_partitions(conn, topic)
    expected = sum(desc[p]["hw"] - desc[p]["gap_below"] for p in range(nparts))
    msgs = itutil.ck_consume(bootstrap, topic, list(range(nparts)), expected, timeout=90)
    records, model = {}, {}
    for m in sorted(msgs, key=lambda m: (m.partition(), m.offset())):
        records[(m.partition(), m.offset())] = (m.key(), m.value())
        if m.value() is None:
            model.pop(m.key(), None)
        else:
            model[m.key()] = m.value()
    return records, model


def delete_records(conn, topic, partition, offset):
    body = array32([str16(topic) + array32([struct.pack(">iq", partition, offset)])]) + \
        struct.pack(">i", 5000)
    r = conn.request(API_DELETE_RECORDS, 0, body)
    r.i32()
    (t,) = r.array(lambda: (r.str16(), r.array(lambda: (r.i32(), r.i64(), r.i16()))))
    return t[1][0]  # (partition, low watermark, error)


def alter_topic(conn, topic, key, value):
    body = array32([struct.pack(">b", TOPIC_RESOURCE) + str16(topic) + array32(
        [str16(key) + struct.pack(">b", 0) + str16(value)])]) + struct.pack(">?", False)
    r = conn.request(API_INCREMENTAL_ALTER_CONFIGS, 0, body)
    r.i32()
    return r.array(lambda: (r.i16(), r.str16(), r.i8(), r.str16()))


class PkDurabilityTest(BrokerTestCase):
    overrides = {"test.fault.pk.compact.before.checkpoint": "1",
                 "log.segment.bytes.min": "1024",  # tiny segments: checkpoints bound retention
                 "log.retention.check.interval.ms": "300",
                 "pk.checkpoint.retained": "2"}

    @classmethod
    def setUpClass(cls):
        cls.broker = pkt.FaultBroker(overrides=cls.overrides)
        cls.broker.start()

    def conn(self):
        c = RawConn(self.broker.port)
        self.addCleanup(c.close)
        return c

    def part_dir(self, topic, p):
        return os.path.join(self.broker.data_dir, "logs", "%s-%d" % (topic, p))

    def checkpoints_on_disk(self, topic, p):
        d = os.path.join(self.part_dir(topic, p), "kv-checkpoints")
        if not os.path.isdir(d):
            return []
        return sorted(int(n) for n in os.listdir(d) if re.fullmatch(r"\d{20}", n))

    def test_kill_during_a_heavy_upsert_stream(self):
        P, nkeys = 2, 300
        topic = unique_topic("pkd")
        itutil.ck_create_topic(self.broker.bootstrap, topic, P,
                               {"table.type": "primary-key", "table.kv.snapshot.interval.ms": "500"})
        from confluent_kafka import Producer
        prod = Producer({"bootstrap.servers": self.broker.bootstrap, "partitioner": "murmur2_random",
                         "acks": "all", "linger.ms": 2, "message.timeout.ms": 8000,
                         "retries": 0, "log_level": 0})
        acked = []
        stop = threading.Event()

        def on_delivery(err, msg):
            if err is None:
                acked.append((msg.partition(), msg.offset(), msg.key(), msg.value()))

        def stream():
            i = 0
            while not stop.is_set():
                k = b"key-%d" % (i % nkeys)
                v = None if i % 11 == 0 else b"value-%d" % i
                try:
                    prod.produce(topic, key=k, value=v, on_delivery=on_delivery)
                except BufferError:
                    prod.poll(0.01)
                    continue
                prod.poll(0)
                i += 1

        t = threading.Thread(target=stream)
        t.start()
        try:
            started = time.time()
            # >= 2.5 s so checkpoints (every 0.5 s) are taken while the stream runs.
            itutil.harness.wait_until(lambda: len(acked) > 4000 and time.time() - started > 2.5,
                                      timeout=60, what="4000 acks")
            self.broker.kill()  # during the stream
        finally:
            stop.set()
            t.join()
        prod.purge()
        prod.flush(2)
        self.assertGreater(len(acked), 4000)
        sys.stderr.write("[measure] %d acknowledged writes before kill -9\n" % len(acked))
        self.broker.start()
        c = self.conn()
        records, model = consume_log(self.broker.bootstrap, topic, P, c)
        for p, off, k, v in acked:  # every acknowledged write survived, at its offset
            self.assertEqual(records.get((p, off)), (k, v), (p, off))
        keys = [b"key-%d" % i for i in range(nkeys)]
        got = lookup_all(c, topic, P, keys)
        for k in keys:
            self.assertEqual(got[k], model.get(k), k)
        desc = describe_partitions(c, topic)
        for p in range(P):
            self.assertEqual(desc[p]["applied"], desc[p]["hw"] - 1)
            self.assertLessEqual(desc[p]["checkpoint"], desc[p]["applied"])
        # Writes continue on the recovered state.
        itutil.ck_produce_all(itutil.ck_producer(self.broker.bootstrap,
                                                 partitioner="murmur2_random"),
                              [dict(topic=topic, key=b"key-1", value=b"after-kill")])
        self.assertEqual(lookup_all(c, topic, P, [b"key-1"])[b"key-1"], b"after-kill")
        self.assertBrokerAlive()

    def test_ttl_expires_rows_without_changelog_records(self):
        topic = unique_topic("pkttl")
        itutil.ck_create_topic(self.broker.bootstrap, topic, 1,
                               {"table.type": "primary-key", "table.kv.ttl.ms": "3000",
                                "table.kv.snapshot.interval.ms": "300"})
        keys = [b"t-%d" % i for i in range(200)]
        prod = itutil.ck_producer(self.broker.bootstrap)
        t0 = time.time()
        itutil.ck_produce_all(prod, [dict(topic=topic, partition=0, key=k, value=b"v") for k in keys])
        t1 = time.time()
        c = self.conn()
        hw = describe_partitions(c, topic)[0]["hw"]
        self.assertEqual(hw, len(keys))
        time.sleep(max(0, t0 + 2.0 - time.time()))
        if time.time() < t0 + 2.9:  # still inside t + ttl - 1 s (with margin for slow machines)
            got = lookup_all(c, topic, 1, keys)
            self.assertTrue(all(got[k] == b"v" for k in keys))
            err, rows, _ = pkt.prefix_lookup(c, topic, 0, b"t-", 1000)
            self.assertEqual((err, len(rows)), (0, len(keys)))
            self.assertGreaterEqual(describe_partitions(c, topic)[0]["rows"], len(keys) - 5)
        time.sleep(max(0, t1 + 3.0 - time.time()))
        got = lookup_all(c, topic, 1, keys)
        self.assertTrue(all(got[k] is None for k in keys), "rows still visible after the TTL")
        err, rows, _ = pkt.prefix_lookup(c, topic, 0, b"t-", 1000)
        self.assertEqual((err, rows), (0, []))
        # The forced compaction (before each checkpoint round) drops them from disk.
        itutil.harness.wait_until(lambda: describe_partitions(c, topic)[0]["rows"] < 5,
                                  timeout=20, what="row count to drop after compaction")
        self.assertEqual(describe_partitions(c, topic)[0]["hw"], hw)  # expiry logged nothing
        # Writing an expired key again is an insert.
        itutil.ck_produce_all(prod, [dict(topic=topic, partition=0, key=keys[0], value=b"again")])
        msgs = itutil.ck_consume(self.broker.bootstrap, topic, [0], hw + 1)
        last = msgs[-1]
        headers = dict(last.headers() or [])
        self.assertEqual(headers.get("strata.change"), b"insert")
        self.assertNotIn("strata.before", headers)
        self.assertEqual(len(headers.get("strata.append_time", b"")), 8)
        self.assertEqual(lookup_all(c, topic, 1, [keys[0]])[keys[0]], b"again")

    def test_zz_checkpoints_bound_retention_and_delete_records(self):
        topic = unique_topic("pkret")
        itutil.ck_create_topic(self.broker.bootstrap, topic, 1,
                               {"table.type": "primary-key", "segment.bytes": "2048",
                                "retention.bytes": "4096"})
        c = self.conn()
        prod = itutil.ck_producer(self.broker.bootstrap, linger_ms=0)
        model = {}
        observations = []

        def observe():
            d = describe_partitions(c, topic)[0]
            observations.append(d)
            # The log never starts past what the durable state (newest checkpoint) needs.
            self.assertLessEqual(d["gap_below"], max(0, d["checkpoint"] + 1), d)
            self.assertLessEqual(d["gap_below"], d["applied"] + 1, d)
            return d

        # Default interval (10 min): no checkpoint yet, so retention cannot delete anything...
        for i in range(150):
            k, v = b"r-%d" % (i % 40), b"x" * 60 + b"-%d" % i
            model[k] = v
            itutil.ck_produce_all(prod, [dict(topic=topic, partition=0, key=k, value=v)])
        time.sleep(1.0)
        d = observe()
        # ...except that retention asks for a checkpoint when the bound blocks it.
        itutil.harness.wait_until(lambda: observe()["checkpoint"] >= 0, timeout=20,
                                  what="a checkpoint requested by retention")
        itutil.harness.wait_until(lambda: observe()["gap_below"] > 0, timeout=20,
                                  what="retention to delete segments up to the bound")
        # The interval is alterable: checkpoints now follow new writes within ~0.5 s.
        self.assertEqual(alter_topic(c, topic, "table.kv.snapshot.interval.ms", "400")[0][0], 0)
        for round_ in range(3):
            for i in range(30):
                k, v = b"r-%d" % (i % 40), b"y" * 60 + b"-%d-%d" % (round_, i)
                model[k] = v
                itutil.ck_produce_all(prod, [dict(topic=topic, partition=0, key=k, value=v)])
            applied = observe()["applied"]
            itutil.harness.wait_until(lambda: observe()["checkpoint"] >= applied, timeout=20,
                                      what="a checkpoint at the new applied offset")
        on_disk = self.checkpoints_on_disk(topic, 0)
        self.assertTrue(1 <= len(on_disk) <= 2, on_disk)
        self.assertEqual(on_disk[-1], observe()["checkpoint"])
        # DeleteRecords up to the high watermark is clamped to the bound (newest checkpoint + 1).
        for i in range(5):
            model[b"r-0"] = b"z%d" % i
            itutil.ck_produce_all(prod, [dict(topic=topic, partition=0, key=b"r-0",
                                              value=b"z%d" % i)])
        d = observe()
        part, low, err = delete_records(c, topic, 0, d["hw"])
        self.assertEqual(err, 0)
        self.assertLessEqual(low, d["checkpoint"] + 1)
        self.assertLess(low, d["hw"])
        observe()
        keys = [b"r-%d" % i for i in range(40)]
        self.assertEqual(lookup_all(c, topic, 1, keys), {k: model.get(k) for k in keys})
        # Correct across a crash restart: the log still holds what the state needs.
        self.broker.kill()
        self.broker.start()
        c = self.conn()
        d = observe()
        self.assertEqual(d["error"], 0)
        self.assertEqual(lookup_all(c, topic, 1, keys), {k: model.get(k) for k in keys})
        self.assertBrokerAlive()

    def test_zzz_partition_offline_when_the_log_starts_past_the_state(self):
        topic = unique_topic("pkoff")
        itutil.ck_create_topic(self.broker.bootstrap, topic, 1, {"table.type": "primary-key"})
        prod = itutil.ck_producer(self.broker.bootstrap)
        itutil.ck_produce_all(prod, [dict(topic=topic, partition=0, key=b"o-%d" % i, value=b"v")
                                     for i in range(20)])
        self.broker.stop()
        # The state is lost and the log no longer starts at 0, with no checkpoint to rebuild from.
        d = self.part_dir(topic, 0)
        import shutil
        shutil.rmtree(os.path.join(d, "kv"))
        shutil.rmtree(os.path.join(d, "kv-checkpoints"), ignore_errors=True)
        with open(os.path.join(d, "log-start-offset"), "w") as f:
            f.write("10\n")
        self.broker.start()
        c = self.conn()
        err, _, _, _ = pkt.produce_v8(c, topic, 0, [(b"o-1", b"w", [])])
        self.assertEqual(err, 56)  # KAFKA_STORAGE_ERROR
        top, res = pkt.lookup(c, topic, {0: [b"o-1"]})
        self.assertEqual((top, res[0][0]), (0, 56))
        self.assertEqual(describe_partitions(c, topic)[0]["error"], 56)
        self.assertBrokerAlive()


if __name__ == "__main__":
    unittest.main(verbosity=2)
