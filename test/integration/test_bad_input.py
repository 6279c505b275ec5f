"""Malformed input over raw sockets: bad frame sizes, truncated bodies, unknown api keys and
versions get a closed connection; malformed Produce batches get their specific error code; bad
CreateTopics requests (through confluent-kafka's AdminClient) get theirs. After each case an
independent connection still gets valid ApiVersions and Metadata answers and the process is alive."""
import os
import struct
import unittest

import itutil
from itutil import RawConn, build_batch, produce

MAX_MESSAGE = 200000


class BadInput(itutil.BrokerTestCase):
    overrides = {"message.max.bytes": str(MAX_MESSAGE)}

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.topic = itutil.unique_topic("bad")
        itutil.ck_create_topic(cls.broker.bootstrap, cls.topic, 2)

    # ------------------------------------------------------------ helpers

    def assertStillServing(self):
        self.assertBrokerAlive()
        with RawConn(self.broker.port) as conn:
            err, keys = itutil.api_versions(conn, 3)
            self.assertEqual(err, 0)
            self.assertIn(18, keys)
            self.assertIn(0, keys)
            err, keys = itutil.api_versions(conn, 0)
            self.assertEqual(err, 0)
            md = itutil.metadata_v1(conn, [self.topic])
            self.assertEqual(md[self.topic], (0, [0, 1]))
        self.assertBrokerAlive()

    def assertClosed(self, conn, what):
        self.assertTrue(conn.wait_closed(10), "%s: connection not closed within 10 s" % what)

    def high_watermark(self, partition=0):
        with RawConn(self.broker.port) as conn:
            r = itutil.fetch_v4(conn, self.topic, partition, 0, max_wait_ms=0)
            self.assertEqual(r["error"], 0)
            return r["high_watermark"]

    def produce_one(self, records, version=3, acks=1, topic=None, partition=0):
        topic = topic or self.topic
        with RawConn(self.broker.port) as conn:
            res = produce(conn, version, {topic: {partition: records}}, acks=acks)
        self.assertEqual(list(res), [(topic, partition)])
        return res[(topic, partition)]

    def good_batch(self, n=3, **kw):
        return build_batch([(b"key-%d" % i, b"value-%d" % i, [("h", b"x")]) for i in range(n)], **kw)

    # ------------------------------------------------------------ frame level

    def test_negative_size(self):
        for size in (-1, -2147483648):
            with RawConn(self.broker.port) as conn:
                conn.send_raw(struct.pack(">i", size))
                self.assertClosed(conn, "size %d" % size)
            self.assertStillServing()

    def test_huge_size(self):
        for size in (104857600 + 1, 200000000, 2147483647):  # default socket.request.max.bytes = 100 MiB
            with RawConn(self.broker.port) as conn:
                conn.send_raw(struct.pack(">i", size) + b"\x00\x12\x00\x00")
                self.assertClosed(conn, "size %d" % size)
            self.assertStillServing()

    def test_too_short_for_a_header(self):
        for body in (b"", b"\x00\x12\x00"):
            with RawConn(self.broker.port) as conn:
                conn.send_raw(struct.pack(">i", len(body)) + body)
                self.assertClosed(conn, "frame of %d bytes" % len(body))
            self.assertStillServing()

    def test_truncated_body(self):
        stuck = RawConn(self.broker.port)
        try:
            stuck.send_raw(struct.pack(">i", 100) + b"\x00\x12\x00\x03\x00\x00\x00\x01" + b"\x00" * 12)
            # while that connection waits for its missing 80 bytes, others are served
            self.assertStillServing()
        finally:
            stuck.close()
        self.assertStillServing()

    def test_unknown_api_key(self):
        for key in (1000, 32767, -1):
            with RawConn(self.broker.port) as conn:
                conn.send_raw(itutil.request_frame(key, 0, 1, b"\x00" * 8))
                self.assertClosed(conn, "api key %d" % key)
            self.assertStillServing()

    def test_unsupported_versions_close(self):
        cases = [(itutil.API_METADATA, 50), (itutil.API_METADATA, 13), (itutil.API_PRODUCE, 2),
                 (itutil.API_PRODUCE, 0), (itutil.API_FETCH, 3), (itutil.API_FETCH, 13),
                 (itutil.API_LIST_OFFSETS, 0), (itutil.API_CREATE_TOPICS, 1)]
        for key, version in cases:
            with RawConn(self.broker.port) as conn:
                conn.send_raw(itutil.request_frame(key, version, 7, struct.pack(">i", -1) + b"\x00" * 16))
                self.assertClosed(conn, "api %d version %d" % (key, version))
            self.assertStillServing()

    def test_api_versions_unsupported_version(self):
        with RawConn(self.broker.port) as conn:
            conn.send_raw(itutil.request_frame(itutil.API_API_VERSIONS, 99, 42, b"\x00" * 8, flexible=True))
            r = itutil.Reader(conn.recv_frame())
            self.assertEqual(r.i32(), 42)  # response header v0: no tagged fields follow
            self.assertEqual(r.i16(), 35, "UNSUPPORTED_VERSION")
            keys = r.array(lambda: (r.i16(), r.i16(), r.i16()))  # v0 body
            self.assertEqual(r.remaining(), 0, "v0 body has only error_code and api_keys")
            self.assertEqual(len(keys), 1)
            self.assertEqual(keys[0][0], 18)
            self.assertEqual(keys[0][1], 0)
            self.assertGreaterEqual(keys[0][2], 3)
            # the client retries with a supported version on the same connection
            err, keys = itutil.api_versions(conn, 3)
            self.assertEqual(err, 0)
            self.assertEqual(keys[18], (0, 4))
        self.assertStillServing()

    # ------------------------------------------------------------ produce validation

    def test_produce_good_batch_baseline(self):
        hw = self.high_watermark(1)
        err, base = self.produce_one(self.good_batch(3), partition=1)
        self.assertEqual((err, base), (0, hw))
        self.assertEqual(self.high_watermark(1), hw + 3)
        msgs = itutil.ck_consume(self.broker.bootstrap, self.topic, [1], hw + 3)
        self.assertEqual([(m.key(), m.value(), m.headers()) for m in msgs[hw:]],
                         [(b"key-%d" % i, b"value-%d" % i, [("h", b"x")]) for i in range(3)])

    def _expect_error(self, records, code, what, version=3, acks=1, topic=None):
        hw = self.high_watermark(0)
        err, base = self.produce_one(records, version=version, acks=acks, topic=topic)
        self.assertEqual(err, code, "%s: expected error %d, got %d" % (what, code, err))
        self.assertEqual(base, -1, "%s: base offset of a rejected batch" % what)
        self.assertEqual(self.high_watermark(0), hw, "%s: nothing may be appended" % what)
        self.assertStillServing()

    def test_crc_mismatch(self):
        self._expect_error(self.good_batch(bad_crc=True), 2, "CRC mismatch")

    def test_wrong_magic(self):
        for magic in (0, 1, 3):
            self._expect_error(self.good_batch(magic=magic), 87, "magic %d" % magic)

    def test_two_batches_in_one_partition(self):
        self._expect_error(self.good_batch(2) + self.good_batch(2), 87, "two batches")

    def test_invalid_acks(self):
        for acks in (5, 2, -2):
            self._expect_error(self.good_batch(), 21, "acks=%d" % acks, acks=acks)

    def test_unknown_topic(self):
        err, base = self.produce_one(self.good_batch(), topic="no-such-topic-" + self.topic)
        self.assertEqual(err, 3, "UNKNOWN_TOPIC_OR_PARTITION")
        with RawConn(self.broker.port) as conn:
            err2 = itutil.produce(conn, 3, {self.topic: {7: self.good_batch()}})[(self.topic, 7)][0]
        self.assertEqual(err2, 3, "partition 7 of a 2-partition topic")
        self.assertStillServing()

    def test_bad_varints_in_records(self):
        # A CRC-valid batch whose records do not parse: Java's parser throws
        # InvalidRecordException ("Found invalid record structure") -> 87 INVALID_RECORD.
        # record length varint that never terminates (10 continuation bytes), CRC valid
        blob = b"\xff" * 10 + b"\x01"
        self._expect_error(build_batch([(b"k", b"v", [])], records_blob=blob), 87, "overlong length varint")
        # a well-formed record length, but the key length inside is an overlong varint
        inner = b"\x00" + itutil.varint(0) + itutil.varint(0) + b"\xff" * 10 + b"\x01"
        blob = itutil.varint(len(inner)) + inner
        self._expect_error(build_batch([(b"k", b"v", [])], records_blob=blob), 87, "overlong key varint")
        # key length larger than the record
        inner = b"\x00" + itutil.varint(0) + itutil.varint(0) + itutil.varint(5000) + b"abc"
        blob = itutil.varint(len(inner)) + inner
        self._expect_error(build_batch([(b"k", b"v", [])], records_blob=blob), 87, "key length past the end")

    def test_record_count_mismatch_rejected(self):
        hw = self.high_watermark(0)
        for n in (5, 0):
            err, _ = self.produce_one(self.good_batch(2, record_count=n))
            self.assertNotEqual(err, 0, "batch claiming %d records but holding 2 was accepted" % n)
            self.assertEqual(self.high_watermark(0), hw)
            self.assertStillServing()

    def test_batch_length_past_records_bytes(self):
        batch = bytearray(self.good_batch(2))
        struct.pack_into(">i", batch, 8, struct.unpack_from(">i", batch, 8)[0] + 50)
        hw = self.high_watermark(0)
        err, _ = self.produce_one(bytes(batch))
        self.assertNotEqual(err, 0)
        self.assertEqual(self.high_watermark(0), hw)
        self.assertStillServing()

    def test_zstd_needs_produce_v7(self):
        zbatch = build_batch([(b"k%d" % i, b"zstd value %d" % i * 10, []) for i in range(5)],
                             compression="zstd")
        self._expect_error(zbatch, 76, "zstd with Produce v6", version=6)
        hw = self.high_watermark(0)
        err, base = self.produce_one(zbatch, version=7)
        self.assertEqual((err, base), (0, hw), "zstd with Produce v7")

    def test_message_too_large(self):
        big = build_batch([(b"k", b"x" * (MAX_MESSAGE + 1000), [])])
        self._expect_error(big, 10, "batch above message.max.bytes")

    # ------------------------------------------------------------ ordering

    def test_pipelined_requests_answered_in_order_acks0_silent(self):
        hw = self.high_watermark(1)
        with RawConn(self.broker.port) as conn:
            frames = []
            expect = []
            for i in range(60):
                corr = 1000 + i
                kind = i % 4
                if kind == 0:
                    frames.append(itutil.request_frame(itutil.API_METADATA, 1, corr, struct.pack(">i", -1)))
                elif kind == 1:
                    frames.append(itutil.request_frame(itutil.API_API_VERSIONS, 0, corr, b""))
                elif kind == 2:
                    body = itutil.produce_body({self.topic: {1: self.good_batch(2)}}, acks=1)
                    frames.append(itutil.request_frame(itutil.API_PRODUCE, 3, corr, body))
                else:  # acks=0: appended, never answered
                    body = itutil.produce_body({self.topic: {1: self.good_batch(1)}}, acks=0)
                    frames.append(itutil.request_frame(itutil.API_PRODUCE, 3, corr, body))
                    continue
                expect.append(corr)
            conn.send_raw(b"".join(frames))
            got = [struct.unpack(">i", conn.recv_frame()[:4])[0] for _ in expect]
            self.assertEqual(got, expect, "responses must follow request order; acks=0 gets none")
            # nothing more is pending: a final request gets the next response
            err, _ = itutil.api_versions(conn, 0)
            self.assertEqual(err, 0)
        self.assertEqual(self.high_watermark(1), hw + 15 * 2 + 15 * 1)

    def test_pipelined_requests_arriving_in_random_pieces(self):
        """The broker reads ahead (a size read takes up to 1 KiB): frames small and large (past
        the read-ahead), pipelined, arriving in pieces cut anywhere — inside a size prefix, across
        two frames — are each answered once, in order, and every record is appended."""
        import random
        import time
        rnd = random.Random(7)
        hw = self.high_watermark(1)
        records = 0
        with RawConn(self.broker.port) as conn:
            frames, expect = [], []
            for i in range(80):
                corr = 5000 + i
                if i % 3 == 0:
                    frames.append(itutil.request_frame(itutil.API_API_VERSIONS, 0, corr, b""))
                else:
                    n = rnd.choice([1, 2, 40, 120])  # 120 records: a frame of several KiB
                    records += n
                    body = itutil.produce_body({self.topic: {1: self.good_batch(n)}}, acks=1)
                    frames.append(itutil.request_frame(itutil.API_PRODUCE, 3, corr, body))
                expect.append(corr)
            data = b"".join(frames)
            pos = 0
            while pos < len(data):
                step = rnd.choice([1, 2, 3, 5, 700, 1024, 1500, 5000])
                conn.send_raw(data[pos:pos + step])
                pos += step
                if rnd.random() < 0.3:
                    time.sleep(0.002)  # lets the broker read what came so far on its own
            got = [struct.unpack(">i", conn.recv_frame()[:4])[0] for _ in expect]
            self.assertEqual(got, expect)
            err, _ = itutil.api_versions(conn, 0)
            self.assertEqual(err, 0)
        self.assertEqual(self.high_watermark(1), hw + records)

    # ------------------------------------------------------------ create topics

    def _create_error(self, name, partitions=1, rf=1, **kw):
        from confluent_kafka.admin import NewTopic
        admin = itutil.ck_admin(self.broker.bootstrap)
        fs = admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=rf)],
                                 request_timeout=20, **kw)
        exc = fs[name].exception(30)
        return None if exc is None else exc.args[0].code()

    def test_create_topics_errors(self):
        for name in ("bad/name!", "has space", "a" * 250, "ünïcode"):
            self.assertEqual(self._create_error(name), 17, "INVALID_TOPIC_EXCEPTION for %r" % name)
        self.assertIsNone(self._create_error("a" * 249))
        self.assertEqual(self._create_error(itutil.unique_topic("rf3"), rf=3), 38,
                         "INVALID_REPLICATION_FACTOR")
        self.assertEqual(self._create_error(self.topic, partitions=2), 36, "TOPIC_ALREADY_EXISTS")
        self.assertStillServing()

    def test_create_topics_validate_only(self):
        name = itutil.unique_topic("vonly")
        self.assertIsNone(self._create_error(name, partitions=4, validate_only=True))
        with RawConn(self.broker.port) as conn:
            md = itutil.metadata_v10(conn, [name], allow_auto_create=False)
        self.assertEqual(md[name]["error"], 3, "validate_only must not create the topic")


    # ------------------------------------------------------------ out of file descriptors

    def test_zz_accept_out_of_descriptors_backs_off_and_recovers(self):
        """accept(2) failing with EMFILE must not spin (it logged in a hot loop before): at most a
        line a second, connections already open keep working, and new ones are served once
        descriptors are free again."""
        import resource
        import socket
        import time
        pid = self.broker.proc.pid
        old = resource.prlimit(pid, resource.RLIMIT_NOFILE)
        keep = RawConn(self.broker.port)  # open before the limit: must keep working
        used = len(os.listdir("/proc/%d/fd" % pid))
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (used + 3, old[1]))
        extra = []
        try:
            before = len(self.broker.log_lines)
            for _ in range(20):  # more than the 3 free descriptors: the rest wait in the backlog
                s = socket.create_connection(("127.0.0.1", self.broker.port), timeout=5)
                extra.append(s)
            time.sleep(2.5)
            failures = [l for l in self.broker.log_lines[before:] if "accept failed" in l]
            self.assertGreaterEqual(len(failures), 1, "EMFILE was never hit")
            self.assertLessEqual(len(failures), 6, "accept failures logged in a loop")
            self.assertEqual(itutil.api_versions(keep, 0)[0], 0)
        finally:
            for s in extra:
                s.close()
            resource.prlimit(pid, resource.RLIMIT_NOFILE, old)
        time.sleep(1.5)  # the back-off is at most 1 s
        with RawConn(self.broker.port) as conn:
            self.assertEqual(itutil.api_versions(conn, 0)[0], 0)
        keep.close()
        self.assertStillServing()


if __name__ == "__main__":
    unittest.main(verbosity=2)
