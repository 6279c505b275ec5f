"""Primary-key tables (issue 5): a 4-partition PK table written by kafka-python (murmur2, its
default partitioner) with upserts and deletes; a plain consumer sees after-images and change-kind
headers; Lookup (extension key 16000, hand-encoded Protobuf) returns the latest rows, including
right after each acks=1 produce (read-your-writes); misrouted keys, keyless records and spoofed
`strata.` headers are rejected with INVALID_RECORD; DescribeTable (16004) reports the table; the
state survives a clean restart and a kill -9 (recovery by log replay); table.* keys are fixed."""
import random
import struct
import sys
import unittest

import itutil
from itutil import BrokerTestCase, RawConn, build_batch, unique_topic

API_LOOKUP = 16000
API_PREFIX_LOOKUP = 16001
API_DESCRIBE_TABLE = 16004
INVALID_RECORD = 87
INVALID_REQUEST = 42
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_CONFIG = 40

# ------------------------------------------------------------ minimal Protobuf (proto3) codec
# (Debian's python3 has no protobuf module; these few fields are encoded by hand.)


def pb_varint(n):
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def pb_len(field, payload):
    return pb_varint(field << 3 | 2) + pb_varint(len(payload)) + payload


def pb_int(field, n):
    return pb_varint(field << 3) + pb_varint(n)


def pb_parse(data):
    """-> {field: [values]}; varints as ints (int64 two's complement), LEN fields as bytes."""
    out = {}
    pos = 0

    def varint():
        nonlocal pos
        shift = result = 0
        while True:
            b = data[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7

    while pos < len(data):
        key = varint()
        field, wt = key >> 3, key & 7
        if wt == 0:
            v = varint()
            if v >= 1 << 63:
                v -= 1 << 64
        elif wt == 2:
            n = varint()
            v = bytes(data[pos:pos + n])
            pos += n
        else:
            raise AssertionError("unexpected wire type %d" % wt)
        out.setdefault(field, []).append(v)
    return out


def one(msg, field, default=0):
    return msg.get(field, [default])[0]


def murmur2_partition(key, n):
    from kafka.partitioner.default import murmur2
    return (murmur2(key) & 0x7FFFFFFF) % n


def lookup(conn, topic, parts):
    """parts: {partition: [keys]} -> (top_error, {partition: (error, msg, [row or None])}) where a
    row is (value, offset, timestamp)."""
    body = b""
    pk = b"".join(pb_len(2, pb_int(1, p) + b"".join(pb_len(2, k) for k in keys))
                  for p, keys in parts.items())
    body = pb_len(1, pb_len(1, topic.encode()) + pk)
    r = conn.request(API_LOOKUP, 0, body, flexible=True)
    resp = pb_parse(r.data[r.pos:])
    out = {}
    for t in resp.get(3, []):
        t = pb_parse(t)
        for p in t.get(2, []):
            p = pb_parse(p)
            rows = []
            for row in p.get(4, []):
                row = pb_parse(row)
                rows.append((one(row, 2, b""), one(row, 3), one(row, 4)) if one(row, 1) else None)
            out[one(p, 1)] = (one(p, 2), one(p, 3, b"").decode(), rows)
    return one(resp, 1), out


def prefix_lookup(conn, topic, partition, prefix, limit, cursor=None):
    """-> (error, [(key, value, offset)], next_cursor or None)."""
    body = pb_len(1, topic.encode()) + pb_int(2, partition) + pb_len(3, prefix) + pb_int(4, limit)
    if cursor is not None:
        body += pb_len(5, cursor)
    r = conn.request(API_PREFIX_LOOKUP, 0, body, flexible=True)
    resp = pb_parse(r.data[r.pos:])
    rows = []
    for row in resp.get(3, []):
        row = pb_parse(row)
        rows.append((one(row, 1, b""), one(row, 2, b""), one(row, 3)))
    return one(resp, 1), rows, resp.get(4, [None])[0]


def describe_table(conn, topics):
    body = b"".join(pb_len(1, t.encode()) for t in topics)
    r = conn.request(API_DESCRIBE_TABLE, 0, body, flexible=True)
    resp = pb_parse(r.data[r.pos:])
    return one(resp, 1), [pb_parse(t) for t in resp.get(3, [])]


def produce_v8(conn, topic, partition, records):
    """Raw Produce v8 of one batch; -> (error, base_offset, [(batch_index, message)], error_msg)."""
    batch = build_batch(records)
    r = conn.request(0, 8, itutil.produce_body({topic: {partition: batch}}, acks=1))
    out = None
    for _ in range(r.i32()):
        r.str16()
        for _ in range(r.i32()):
            idx, err, base = r.i32(), r.i16(), r.i64()
            r.i64()
            r.i64()
            rec_errs = r.array(lambda: (r.i32(), r.str16()))
            msg = r.str16()
            out = (err, base, rec_errs, msg)
    return out


class PkTablesTest(BrokerTestCase):
    P = 4

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.topic = unique_topic("pk")
        itutil.ck_create_topic(cls.broker.bootstrap, cls.topic, cls.P,
                               {"table.type": "primary-key"})
        cls.log_topic = unique_topic("log")
        itutil.ck_create_topic(cls.broker.bootstrap, cls.log_topic, 1)

    def conn(self):
        c = RawConn(self.broker.port)
        self.addCleanup(c.close)
        return c

    def write_and_check(self, topic, ops, model, changes):
        """Sends ops with kafka-python (acks=1), checking each with a Lookup right after its
        acknowledgement; extends the model and the expected changelog per partition."""
        prod = itutil.kp_producer(self.broker.bootstrap, acks=1, linger_ms=0)
        conn = self.conn()
        try:
            for key, value in ops:
                md = prod.send(topic, key=key, value=value).get(timeout=30)
                self.assertEqual(md.partition, murmur2_partition(key, self.P))
                before = model.get(key)
                if value is None:
                    kind = "delete" if before is not None else "none"
                    model.pop(key, None)
                elif before is None:
                    kind = "insert"
                elif before == value:
                    kind = "none"
                else:
                    kind = "update"
                model_after = model.get(key) if value is None else value
                if value is not None:
                    model[key] = value
                changes[(md.partition, md.offset)] = (key, kind, model_after, before)
                top, res = lookup(conn, topic, {md.partition: [key]})
                self.assertEqual(top, 0)
                err, _, rows = res[md.partition]
                self.assertEqual(err, 0)
                row = rows[0]
                if key in model:
                    self.assertIsNotNone(row, "read-your-writes: %r missing after ack" % key)
                    self.assertEqual(row[0], model[key])
                    if kind != "none":
                        self.assertEqual(row[1], md.offset)
                else:
                    self.assertIsNone(row, "read-your-writes: %r still present" % key)
        finally:
            prod.close()

    def test_upserts_deletes_lookup_and_changelog(self):
        rnd = random.Random(5)
        keys = [b"user-%d" % i for i in range(40)]
        ops = []
        for i in range(300):
            k = rnd.choice(keys)
            r = rnd.random()
            if r < 0.2:
                ops.append((k, None))
            elif r < 0.3:
                ops.append((k, b"same"))
            else:
                ops.append((k, b"v%d" % i))
        model, changes = {}, {}
        self.write_and_check(self.topic, ops, model, changes)

        # A plain consumer sees one record per write: after-image values and change headers.
        recs = itutil.kp_consume(self.broker.bootstrap, self.topic, range(self.P), len(ops))
        self.assertEqual(len(recs), len(ops))
        for m in recs:
            key, kind, after, before = changes[(m.partition, m.offset)]
            hdrs = dict(m.headers)
            self.assertEqual(m.key, key)
            self.assertEqual(hdrs.get("strata.change"), kind.encode(), (m.partition, m.offset))
            self.assertEqual(m.value, after)
            if kind in ("update", "delete"):
                self.assertEqual(hdrs.get("strata.before"), before)  # full image (default)
            else:
                self.assertNotIn("strata.before", hdrs)

        # One batched Lookup over all partitions returns the final rows.
        by_part = {}
        for k in keys:
            by_part.setdefault(murmur2_partition(k, self.P), []).append(k)
        top, res = lookup(self.conn(), self.topic, by_part)
        self.assertEqual(top, 0)
        for p, ks in by_part.items():
            err, _, rows = res[p]
            self.assertEqual(err, 0)
            for k, row in zip(ks, rows):
                self.assertEqual(row[0] if row else None, model.get(k), k)

    def test_prefix_lookup_pages(self):
        topic = unique_topic("pkp")
        itutil.ck_create_topic(self.broker.bootstrap, topic, self.P, {"table.type": "primary-key"})
        prod = itutil.kp_producer(self.broker.bootstrap, acks=1)
        want = {}
        for i in range(60):
            k = (b"acct:%02d" % i) if i < 45 else (b"other:%02d" % i)
            want[k] = b"row%d" % i
            prod.send(topic, key=k, value=want[k])
        prod.flush()
        prod.close()
        conn = self.conn()
        got = []
        for p in range(self.P):
            cursor = None
            while True:
                err, rows, cursor = prefix_lookup(conn, topic, p, b"acct:", 4, cursor)
                self.assertEqual(err, 0)
                self.assertLessEqual(len(rows), 4)
                got.extend((k, v) for k, v, _ in rows)
                if cursor is None:
                    break
        self.assertEqual(sorted(got), sorted((k, v) for k, v in want.items() if k.startswith(b"acct:")))
        self.assertEqual(prefix_lookup(conn, topic, 0, b"", 0)[0], INVALID_REQUEST)
        self.assertEqual(prefix_lookup(conn, topic, 0, b"", 1 << 30)[0], INVALID_REQUEST)
        self.assertEqual(prefix_lookup(conn, self.log_topic, 0, b"", 10)[0], INVALID_REQUEST)
        self.assertEqual(prefix_lookup(conn, topic, 99, b"", 10)[0], UNKNOWN_TOPIC_OR_PARTITION)

    def test_rejections(self):
        topic = unique_topic("pkx")
        itutil.ck_create_topic(self.broker.bootstrap, topic, self.P, {"table.type": "primary-key"})
        conn = self.conn()
        key = b"routed-key"
        owner = murmur2_partition(key, self.P)
        wrong = (owner + 1) % self.P
        err, _, rec_errs, msg = produce_v8(conn, topic, wrong, [(key, b"v", [])])
        self.assertEqual(err, INVALID_RECORD)
        self.assertIn("partition %d" % owner, msg)
        self.assertEqual(rec_errs[0][0], 0)

        err, _, _, msg = produce_v8(conn, topic, owner,
                                    [(key, b"v", [("strata.change", b"delete")])])
        self.assertEqual(err, INVALID_RECORD)
        self.assertIn("strata.", msg)

        err, _, rec_errs, _ = produce_v8(conn, topic, owner, [(key, b"v", []), (None, b"x", [])])
        self.assertEqual(err, INVALID_RECORD)
        self.assertEqual([i for i, _ in rec_errs], [1])

        # Nothing of the rejected batches reached the state.
        _, res = lookup(conn, topic, {owner: [key]})
        self.assertIsNone(res[owner][2][0])
        err, base, _, _ = produce_v8(conn, topic, owner, [(key, b"ok", [("app", b"1")])])
        self.assertEqual(err, 0)
        _, res = lookup(conn, topic, {owner: [key]})
        self.assertEqual(res[owner][2][0][0], b"ok")
        self.assertEqual(res[owner][2][0][1], base)

    def test_extension_errors_and_describe(self):
        conn = self.conn()
        _, res = lookup(conn, self.log_topic, {0: [b"k"]})
        self.assertEqual(res[0][0], INVALID_REQUEST)
        _, res = lookup(conn, "no-such-topic", {0: [b"k"]})
        self.assertEqual(res[0][0], UNKNOWN_TOPIC_OR_PARTITION)
        _, res = lookup(conn, self.topic, {self.P: [b"k"]})
        self.assertEqual(res[self.P][0], UNKNOWN_TOPIC_OR_PARTITION)
        r = conn.request(API_LOOKUP, 0, b"\x0a\xff\xff\xff", flexible=True)  # truncated field
        self.assertEqual(one(pb_parse(r.data[r.pos:]), 1), INVALID_REQUEST)

        top, tables = describe_table(conn, [self.topic, self.log_topic])
        self.assertEqual(top, 0)
        t = tables[0]
        self.assertEqual(one(t, 2), 0)
        self.assertEqual(one(t, 4, b""), b"primary-key")
        self.assertEqual(one(t, 5, b""), b"last_row")
        self.assertEqual(one(t, 7, b""), b"full")
        self.assertEqual(one(t, 8, b""), b"allow")
        self.assertEqual(one(t, 9), -1)
        self.assertEqual(one(t, 10, b""), b"murmur2")
        self.assertEqual(one(t, 11), self.P)
        self.assertEqual(len(t.get(12, [])), self.P)
        self.assertEqual(one(tables[1], 2), INVALID_REQUEST)

        # ApiVersions lists both extension keys (v0-0).
        err, keys = itutil.api_versions(conn)
        self.assertEqual(err, 0)
        self.assertEqual(keys.get(API_LOOKUP), (0, 0))
        self.assertEqual(keys.get(API_PREFIX_LOOKUP), (0, 0))
        self.assertEqual(keys.get(API_DESCRIBE_TABLE), (0, 0))

    def test_table_keys_are_fixed_and_validated(self):
        from confluent_kafka.admin import ConfigResource
        admin = itutil.ck_admin(self.broker.bootstrap)
        res = ConfigResource(ConfigResource.Type.TOPIC, self.topic,
                             set_config={"table.type": "primary-key",
                                         "table.merge-engine": "first_row"})
        fs = admin.alter_configs([res], request_timeout=15)
        with self.assertRaises(Exception) as cm:
            list(fs.values())[0].result(15)
        self.assertIn("table.merge-engine", str(cm.exception))
        from confluent_kafka.admin import NewPartitions
        fs = admin.create_partitions([NewPartitions(self.topic, self.P + 2)], request_timeout=15)
        with self.assertRaises(Exception) as cm:
            list(fs.values())[0].result(15)
        self.assertIn("POLICY_VIOLATION", str(cm.exception))
        with self.assertRaises(Exception) as cm:
            itutil.ck_create_topic(self.broker.bootstrap, unique_topic("bad"), 1,
                                   {"table.type": "primary-key", "table.merge-engine": "versioned"})
        self.assertIn("table.merge-engine.versioned.header", str(cm.exception))

    def test_delete_and_recreate_starts_empty(self):
        topic = unique_topic("pkd")
        itutil.ck_create_topic(self.broker.bootstrap, topic, 1, {"table.type": "primary-key"})
        prod = itutil.kp_producer(self.broker.bootstrap, acks=1)
        prod.send(topic, key=b"k", value=b"old").get(timeout=30)
        prod.close()
        conn = self.conn()
        self.assertEqual(lookup(conn, topic, {0: [b"k"]})[1][0][2][0][0], b"old")
        admin = itutil.ck_admin(self.broker.bootstrap)
        admin.delete_topics([topic], request_timeout=15)[topic].result(15)
        itutil.harness.wait_until(
            lambda: lookup(conn, topic, {0: [b"k"]})[1][0][0] == UNKNOWN_TOPIC_OR_PARTITION,
            what="topic deleted")
        itutil.ck_create_topic(self.broker.bootstrap, topic, 1, {"table.type": "primary-key"})
        err, _, rows = lookup(conn, topic, {0: [b"k"]})[1][0]
        self.assertEqual(err, 0)
        self.assertEqual(rows, [None])
        self.assertBrokerAlive()

    def test_librdkafka_batches_of_small_records_at_the_default_batch_size(self):
        # librdkafka never splits a batch: a batch near its default batch.size (1,000,000) that
        # fits max.message.bytes must be taken although its changelog (change-kind and TTL
        # headers, before-images) comes out about 2.5x larger (here: TTL, full images).
        topic = unique_topic("pkb")
        itutil.ck_create_topic(self.broker.bootstrap, topic, 1, {
            "table.type": "primary-key", "table.changelog.image": "full",
            "table.kv.ttl.ms": "3600000"})
        n = 30000
        keys = [b"key-%06d" % i for i in range(n)]
        errors = []
        prod = itutil.ck_producer(self.broker.bootstrap, acks=1, linger_ms=2000,
                                  queue_buffering_max_messages=200000)
        # 10,000 records (librdkafka's batch.num.messages) of ~100 B: batches near 1 MB.
        v1, v2 = b"1" * 80, b"2" * 80
        for value in (v1, v2):  # inserts, then updates of every key
            for k in keys:
                prod.produce(topic, key=k, value=value,
                             on_delivery=lambda err, msg: errors.append(err) if err else None)
            self.assertEqual(prod.flush(60), 0)
        self.assertEqual(len(errors), 0, errors[:1])
        conn = self.conn()
        sample = keys[::997]
        top, res = lookup(conn, topic, {0: sample})
        self.assertEqual(top, 0)
        self.assertEqual([row[0] for row in res[0][2]], [v2] * len(sample))
        recs = itutil.kp_consume(self.broker.bootstrap, topic, [0], 2 * n)
        self.assertEqual(len(recs), 2 * n)
        last = recs[-1]
        self.assertEqual(dict(last.headers)["strata.before"], v1)

    def test_zz_state_survives_restart_and_kill(self):
        topic = unique_topic("pkr")
        itutil.ck_create_topic(self.broker.bootstrap, topic, self.P, {"table.type": "primary-key"})
        model, changes = {}, {}
        ops = [(b"k%d" % (i % 25), b"x%d" % i) for i in range(100)] + [(b"k3", None)]
        self.write_and_check(topic, ops, model, changes)
        for clean in (True, False):
            self.broker.restart(clean=clean)
            by_part = {}
            for i in range(25):
                k = b"k%d" % i
                by_part.setdefault(murmur2_partition(k, self.P), []).append(k)
            top, res = lookup(self.conn(), topic, by_part)
            self.assertEqual(top, 0)
            for p, ks in by_part.items():
                rows = res[p][2]
                for k, row in zip(ks, rows):
                    self.assertEqual(row[0] if row else None, model.get(k), (clean, k))
            # Writes continue with correct change kinds after recovery.
            more = [(b"k1", b"after-%s" % str(clean).encode()), (b"k3", b"back")]
            self.write_and_check(topic, more, model, changes)


class FaultBroker(itutil.harness.BrokerProcess):
    """A broker started with --enable-test-faults (appended by wrapping Popen during start())."""

    def start(self, timeout=30):
        real = itutil.harness.subprocess.Popen

        def popen(args, *a, **kw):
            return real(list(args) + ["--enable-test-faults"], *a, **kw)

        itutil.harness.subprocess.Popen = popen
        try:
            return super().start(timeout)
        finally:
            itutil.harness.subprocess.Popen = real


class PkIdempotenceUnderFaults(BrokerTestCase):
    """librdkafka (partitioner=murmur2_random, idempotent) writes to a PK table while every 3rd
    produce response is dropped: the retries change no row twice and add no changelog records."""
    P = 4
    overrides = {"test.fault.drop.produce.response.every.n": "5"}

    @classmethod
    def setUpClass(cls):
        cls.broker = FaultBroker(overrides=cls.overrides)
        cls.broker.start()

    def test_retries_apply_once(self):
        from confluent_kafka import Producer
        topic = unique_topic("pki")
        itutil.ck_create_topic(self.broker.bootstrap, topic, self.P, {"table.type": "primary-key"})
        errors = []
        p = Producer({"bootstrap.servers": self.broker.bootstrap, "enable.idempotence": True,
                      "partitioner": "murmur2_random", "acks": "all", "linger.ms": 2,
                      "compression.codec": "lz4", "message.timeout.ms": 60000,
                      "retry.backoff.ms": 20, "reconnect.backoff.ms": 20,
                      "reconnect.backoff.max.ms": 200, "log_level": 3})
        n, nkeys = 3000, 150
        final = {}
        for i in range(n):
            k = b"key-%d" % (i % nkeys)
            final[k] = b"value-%d" % i
            while True:
                try:
                    p.produce(topic, key=k, value=final[k],
                              on_delivery=lambda err, msg: errors.append(err) if err else None)
                    break
                except BufferError:
                    p.poll(0.05)
            p.poll(0)
            if i % 500 == 499:
                # Request boundaries: a fast loop could otherwise fit everything into fewer
                # requests than the fault period and never see a dropped response.
                self.assertEqual(p.flush(60), 0)
        self.assertEqual(p.flush(60), 0)
        self.assertEqual(errors, [])
        dropped = sum(1 for l in self.broker.log_lines if "test fault: dropping" in l)
        self.assertGreater(dropped, 0, "the fault setting did not force retries")

        recs = itutil.kp_consume(self.broker.bootstrap, topic, range(self.P), n)
        self.assertEqual(len(recs), n)  # no extra changelog records
        seen = {}
        for m in sorted(recs, key=lambda m: (m.partition, m.offset)):
            self.assertEqual(m.partition, murmur2_partition(m.key, self.P))
            kind = dict(m.headers)["strata.change"]
            self.assertEqual(kind, b"update" if m.key in seen else b"insert")
            if m.key in seen:
                self.assertEqual(dict(m.headers)["strata.before"], seen[m.key])
            seen[m.key] = m.value
        self.assertEqual(seen, final)
        by_part = {}
        for k in final:
            by_part.setdefault(murmur2_partition(k, self.P), []).append(k)
        top, res = lookup(RawConn(self.broker.port), topic, by_part)
        for part, ks in by_part.items():
            self.assertEqual([r[0] for r in res[part][2]], [final[k] for k in ks])


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"] + sys.argv[1:])
