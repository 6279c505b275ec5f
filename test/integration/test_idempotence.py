"""Idempotent producer (issue 3):
- raw frames: InitProducerId hands out fresh ids with epoch 0 (unique across a restart), a
  transactional id gets an id too (transactions: test_transactions.py); a retried batch is answered with its original offset
  and not written twice; sequence gaps get OUT_OF_ORDER_SEQUENCE_NUMBER, a new epoch must start at
  sequence 0, a stale epoch gets INVALID_PRODUCER_EPOCH, a producer id without a sequence gets
  INVALID_RECORD;
- test.* fault keys are refused without --enable-test-faults;
- librdkafka with enable.idempotence=true produces 1M messages while the broker drops every Nth
  produce response (test.fault.drop.produce.response.every.n) and is killed and restarted in the
  middle: every message is in the topic exactly once, in order."""
import os
import struct
import subprocess
import threading
import time
import unittest

import harness
import itutil

API_INIT_PRODUCER_ID = 22
E_OUT_OF_ORDER, E_INVALID_EPOCH, E_UNSUPPORTED_VERSION, E_INVALID_RECORD = 45, 47, 35, 87


def init_producer_id(conn, transactional_id=None, version=1):
    body = itutil.str16(transactional_id) + struct.pack(">i", 60000)
    r = conn.request(API_INIT_PRODUCER_ID, version, body)
    r.i32()  # throttle
    return r.i16(), r.i64(), r.i16()  # error, producer id, epoch


def idem_batch(pid, epoch, seq, n, tag=b"x"):
    """A v2 batch of n records carrying producer id/epoch/base sequence."""
    ts = int(time.time() * 1000)
    raw = b"".join(itutil.encode_record(i, None, tag + b"-%d" % (seq + i), ()) for i in range(n))
    after_crc = struct.pack(">hiqqqhii", 0, n - 1, ts, ts, pid, epoch, seq, n) + raw
    after_len = struct.pack(">ibI", -1, 2, itutil.crc32c(after_crc)) + after_crc
    return struct.pack(">qi", 0, len(after_len)) + after_len


class FaultBroker(harness.BrokerProcess):
    """A broker started with --enable-test-faults (harness.BrokerProcess builds the argv itself, so
    the flag is appended by wrapping Popen for the duration of start())."""

    def start(self, timeout=30):
        real = subprocess.Popen

        def popen(args, *a, **kw):
            return real(list(args) + ["--enable-test-faults"], *a, **kw)

        harness.subprocess.Popen = popen
        try:
            return super().start(timeout)
        finally:
            harness.subprocess.Popen = real


class IdempotenceRawAndClients(itutil.BrokerTestCase):
    overrides = {"log.segment.bytes.min": "1000"}  # segment.bytes=1000: dedupe across segments

    def test_init_producer_id_fresh_ids_epoch_zero_and_unique_across_restart(self):
        with itutil.RawConn(self.broker.port) as conn:
            a = init_producer_id(conn)
            b = init_producer_id(conn)
            txn = init_producer_id(conn, "my-txn")
            empty = init_producer_id(conn, "")
        self.assertEqual(a[0], 0)
        self.assertEqual(a[2], 0)
        self.assertEqual(b[0], 0)
        self.assertGreater(b[1], a[1])
        self.assertEqual(txn[0], 0)
        self.assertEqual(txn[2], 0)
        self.assertEqual(empty[0], 42)  # INVALID_REQUEST, as Kafka
        # ApiVersions advertises InitProducerId 0-5 and the client versions of the transaction
        # APIs (24, 25, 26, 28: 0-3).
        with itutil.RawConn(self.broker.port) as conn:
            _, apis = itutil.api_versions(conn)
        self.assertEqual(apis.get(API_INIT_PRODUCER_ID), (0, 5))
        for k in (24, 25, 26, 28):
            self.assertEqual(apis.get(k), (0, 3))

        self.broker.restart(clean=False)  # even a crash never reuses an id
        with itutil.RawConn(self.broker.port) as conn:
            c = init_producer_id(conn)
        self.assertEqual(c[0], 0)
        self.assertGreater(c[1], b[1])

    def test_dedupe_and_sequence_errors_raw(self):
        topic = itutil.unique_topic("idem-raw")
        itutil.ck_create_topic(self.broker.bootstrap, topic, 1)
        with itutil.RawConn(self.broker.port) as conn:
            err, pid, epoch = init_producer_id(conn)
            self.assertEqual((err, epoch), (0, 0))

            def send(batch):
                return itutil.produce(conn, 7, {topic: {0: batch}}, acks=-1)[(topic, 0)]

            self.assertEqual(send(idem_batch(pid, 0, 0, 3)), (0, 0))
            self.assertEqual(send(idem_batch(pid, 0, 3, 2)), (0, 3))
            # Retries of either batch: original offsets, nothing written.
            self.assertEqual(send(idem_batch(pid, 0, 0, 3)), (0, 0))
            self.assertEqual(send(idem_batch(pid, 0, 3, 2)), (0, 3))
            # Gap and overlap.
            self.assertEqual(send(idem_batch(pid, 0, 7, 1))[0], E_OUT_OF_ORDER)
            self.assertEqual(send(idem_batch(pid, 0, 4, 2))[0], E_OUT_OF_ORDER)
            # New epoch: only at sequence 0.
            self.assertEqual(send(idem_batch(pid, 1, 5, 1))[0], E_OUT_OF_ORDER)
            self.assertEqual(send(idem_batch(pid, 1, 0, 1)), (0, 5))
            # The old epoch is now stale.
            self.assertEqual(send(idem_batch(pid, 0, 5, 1))[0], E_INVALID_EPOCH)
            # Unknown producer id with a non-zero sequence: accepted (Kafka 2.5+, KIP-360).
            self.assertEqual(send(idem_batch(pid + 100000, 0, 17, 1)), (0, 6))
            # A producer id without a sequence is not a valid batch.
            self.assertEqual(send(idem_batch(pid, 1, -1, 1))[0], E_INVALID_RECORD)
            fetched = itutil.fetch_v4(conn, topic, 0, 0, 100)
        self.assertEqual(fetched["high_watermark"], 7)
        counts = [c for _, _, c, _ in itutil.iter_batches(fetched["records"])]
        self.assertEqual(counts, [3, 2, 1, 1])

    def test_dedupe_survives_a_crash_restart(self):
        topic = itutil.unique_topic("idem-crash")
        itutil.ck_create_topic(self.broker.bootstrap, topic, 1, {"segment.bytes": "1000"})
        with itutil.RawConn(self.broker.port) as conn:
            _, pid, _ = init_producer_id(conn)
            for i in range(30):
                res = itutil.produce(conn, 7, {topic: {0: idem_batch(pid, 0, i * 4, 4)}}, acks=-1)
                self.assertEqual(res[(topic, 0)], (0, i * 4))
        self.broker.restart(clean=False)
        with itutil.RawConn(self.broker.port) as conn:
            for i in (25, 29):  # inside the window of the last 5 batches
                res = itutil.produce(conn, 7, {topic: {0: idem_batch(pid, 0, i * 4, 4)}}, acks=-1)
                self.assertEqual(res[(topic, 0)], (0, i * 4))
            res = itutil.produce(conn, 7, {topic: {0: idem_batch(pid, 0, 121, 1)}}, acks=-1)
            self.assertEqual(res[(topic, 0)][0], E_OUT_OF_ORDER)
            res = itutil.produce(conn, 7, {topic: {0: idem_batch(pid, 0, 120, 1)}}, acks=-1)
            self.assertEqual(res[(topic, 0)], (0, 120))

    def test_test_fault_keys_need_the_flag(self):
        d = self.broker.data_dir
        proc = subprocess.run(
            [harness.BROKER, "--override", "listeners=PLAINTEXT://127.0.0.1:0",
             "--override", "log.dirs=" + os.path.join(d, "other"),
             "--override", "test.fault.drop.produce.response.every.n=3"],
            capture_output=True, text=True, timeout=30)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("--enable-test-faults", proc.stderr)


class IdempotenceUnderFaults(itutil.BrokerTestCase):
    N = 1000000
    PARTITIONS = 2
    overrides = {"test.fault.drop.produce.response.every.n": "7",
                 "log.segment.bytes": str(8 << 20),
                 "log.level": "debug"}  # the broker logs each duplicate it recognises at debug

    @classmethod
    def setUpClass(cls):
        cls.broker = FaultBroker(overrides=cls.overrides)
        cls.broker.start()
        # Restarts must come back on the same port: the producer keeps its bootstrap address.
        cls.broker.overrides["listeners"] = "PLAINTEXT://127.0.0.1:%d" % cls.broker.port

    def test_one_million_exactly_once_in_order_with_dropped_responses_and_a_crash(self):
        from confluent_kafka import Producer
        topic = itutil.unique_topic("idem-1m")
        itutil.ck_create_topic(self.broker.bootstrap, topic, self.PARTITIONS)
        errors = []
        p = Producer({"bootstrap.servers": self.broker.bootstrap, "enable.idempotence": True,
                      "acks": "all", "linger.ms": 20, "batch.num.messages": 10000,
                      "compression.codec": "lz4", "message.timeout.ms": 120000,
                      "queue.buffering.max.messages": 400000, "retry.backoff.ms": 50,
                      "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 500,
                      "delivery.report.only.error": True, "log_level": 3})
        pad = b"p" * 90
        enqueued = [0]
        result = {}

        def produce_all():
            produce = p.produce
            for i in range(self.N):
                value = b"%08d" % i + pad
                while True:
                    try:
                        produce(topic, value, partition=i % self.PARTITIONS,
                                on_delivery=lambda err, msg: errors.append(err) if err else None)
                        break
                    except BufferError:
                        p.poll(0.05)
                enqueued[0] = i + 1
            result["remaining"] = p.flush(120)

        t0 = time.time()
        # The producer runs in a thread: the broker must be restarted from the main thread (the
        # harness sets PR_SET_PDEATHSIG, which fires when the thread that started the broker exits).
        producer = threading.Thread(target=produce_all)
        producer.start()
        itutil.harness.wait_until(lambda: enqueued[0] >= self.N * 2 // 5, timeout=60,
                                  what="40% of the messages enqueued")
        self.broker.restart(clean=False)  # a crash in the middle; same port
        producer.join(180)
        self.assertFalse(producer.is_alive(), "producer did not finish")
        produced_in = time.time() - t0
        remaining = result.get("remaining")
        self.assertEqual(remaining, 0, "undelivered after flush")
        self.assertEqual(errors, [])
        dropped = sum(1 for l in self.broker.log_lines if "test fault: dropping" in l)
        self.assertGreater(dropped, 3, "the fault setting did not force retries")
        dups = sum(1 for l in self.broker.log_lines if "not appended" in l and topic in l)
        self.assertGreater(dups, 0, "no retried batch was recognised as a duplicate")

        from confluent_kafka import TopicPartition, OFFSET_BEGINNING
        c = itutil.ck_consumer(self.broker.bootstrap, **{"fetch.max.bytes": 50 << 20})
        per_part = self.N // self.PARTITIONS
        try:
            for part in range(self.PARTITIONS):
                lo, hi = c.get_watermark_offsets(TopicPartition(topic, part), timeout=10)
                self.assertEqual((lo, hi), (0, per_part), "partition %d holds duplicates or gaps" % part)
            c.assign([TopicPartition(topic, q, OFFSET_BEGINNING) for q in range(self.PARTITIONS)])
            expect = list(range(self.PARTITIONS))  # next expected sequence per partition
            got = 0
            deadline = time.time() + 90
            while got < self.N and time.time() < deadline:
                for m in c.consume(num_messages=20000, timeout=1.0):
                    if m.error():
                        continue
                    part = m.partition()
                    seq = int(m.value()[:8])
                    if seq != expect[part]:
                        self.fail("partition %d: offset %d holds %d, expected %d" %
                                  (part, m.offset(), seq, expect[part]))
                    expect[part] += self.PARTITIONS
                    got += 1
            self.assertEqual(got, self.N)
        finally:
            c.close()
        print("\n1M idempotent messages produced in %.1fs with %d dropped responses, %d duplicate "
              "batches recognised and a crash restart" % (produced_in, dropped, dups))


if __name__ == "__main__":
    unittest.main(verbosity=2)
