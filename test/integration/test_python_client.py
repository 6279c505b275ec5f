"""The pure-Python client package tools/python (strata_client; docs/python-client.md) against one
real broker, every answer checked against a model built from what confluent-kafka delivered:

- a raw table over 3 partitions with updates and deletes: get/get_many (absent keys, keys of
  every partition, str and bytes keys, truncation rounds with a tiny max_bytes), prefix across
  partitions (paging, limit), scan of all partitions (every row exactly once, one snapshot per
  partition), changelog from 0 with follow=False (every change, per partition in offset order)
  and follow=True (sees a write made after the call started); 8 threads sharing one client;
- a crc32-partitioned table written by librdkafka's default partitioner;
- a history table: as_of by offset and by timestamp equal the model; after checkpoints and
  DeleteRecords, points before the history's start answer OutOfRetention with `earliest`;
- a typed json table: rows decode to dicts, `columns` projection;
- filtered changelog reads (`where`, table.statistics.columns): a model test of random predicates
  against a Python evaluation of the unfiltered changelog; selective ranges skip batches;
- ReadLog of a typed (json) log topic: every record read back, filtered reads against the same
  Python evaluation, batches skipped, non-JSON values refused, the configs' cross-checks;
- errors: unknown table, log topic, projection of a raw table, as_of without history;
- the committed *_pb2.py files equal what tools/python/gen.sh generates now;
- install into a venv (--system-site-packages, --no-build-isolation, --no-index) and one lookup.
"""
import importlib.util
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import itutil
from itutil import BrokerTestCase, unique_topic

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYDIR = os.path.join(ROOT, "tools", "python")
sys.path.insert(0, PYDIR)
from strata_client import OutOfRetention, Strata, StrataError, _wire  # noqa: E402
from strata_client.partitioner import murmur2, partition_for_key  # noqa: E402

P = 3
BASE = 1_700_000_000_000
API_DELETE_RECORDS = 21


def produce(bootstrap, items, **extra):
    """Delivers items (dicts for Producer.produce) -> [(item, Message)] in (partition, offset)
    order."""
    extra.setdefault("partitioner", "murmur2_random")
    delivered = itutil.ck_produce_all(itutil.ck_producer(bootstrap, **extra), items)
    return sorted(zip(items, delivered), key=lambda im: (im[1].partition(), im[1].offset()))


def table_model(written):
    """(current rows {key: (value, offset, ts, partition)}, changes per partition) of a last_row
    table in full image mode, from [(item, msg)] in log order."""
    rows, changes = {}, {}
    for item, msg in written:
        k, v, p = item["key"], item["value"], msg.partition()
        ts = msg.timestamp()[1]
        before = rows.get(k)
        ch = None
        if v is None:
            if before is not None:
                ch = ("delete", k, before[0], None)
                del rows[k]
        else:
            if before is None:
                ch = ("insert", k, None, v)
            elif before[0] != v:
                ch = ("update", k, before[0], v)
            rows[k] = (v, msg.offset(), ts, p)
        if ch is not None:
            changes.setdefault(p, []).append((msg.offset(), ts) + ch)
    return rows, changes


def delete_records(port, topic, partition, offset):
    """DeleteRecords v0 -> (low watermark, error)."""
    body = itutil.array32([itutil.str16(topic) + itutil.array32(
        [struct.pack(">iq", partition, offset)])]) + struct.pack(">i", 5000)
    with itutil.RawConn(port) as c:
        r = c.request(API_DELETE_RECORDS, 0, body)
        r.i32()
        (t,) = r.array(lambda: (r.str16(), r.array(lambda: (r.i32(), r.i64(), r.i16()))))
    return t[1][0][1], t[1][0][2]


# ---- a Python evaluation of filters (docs/typed-tables.md, "Filtered reads"), the model of the
# filtered-read tests: predicate trees, their WHERE text, and SQL semantics over JSON values.

def filter_cmp(v, op, lit):
    if v is None:
        return False
    num = lambda x: isinstance(x, (int, float)) and not isinstance(x, bool)  # noqa: E731
    if not ((num(v) and num(lit)) or (isinstance(v, str) and isinstance(lit, str)) or
            (isinstance(v, bool) and isinstance(lit, bool))):
        return False
    return {"=": v == lit, "<": v < lit, "<=": v <= lit, ">": v > lit, ">=": v >= lit}[op]


def filter_holds(node, row):
    kind = node[0]
    if kind == "and":
        return all(filter_holds(n, row) for n in node[1])
    if kind == "or":
        return any(filter_holds(n, row) for n in node[1])
    if kind == "null":
        return row.get(node[1]) is None
    return filter_cmp(row.get(node[1]), node[2], node[3])


def filter_text(node):
    kind = node[0]
    if kind in ("and", "or"):
        return "(" + (" %s " % kind.upper()).join(filter_text(n) for n in node[1]) + ")"
    if kind == "null":
        return "%s IS NULL" % node[1]
    lit = node[3]
    if isinstance(lit, bool):
        lit = "TRUE" if lit else "FALSE"
    elif isinstance(lit, str):
        lit = "'%s'" % lit.replace("'", "''")
    return "%s %s %s" % (node[1], node[2], lit)


def random_filter(rng, columns, depth=0):
    k = rng.randrange(3 if depth >= 2 else 5)
    col = rng.choice(columns)
    if k == 0:
        return ("null", col)
    if k in (1, 2):
        lit = rng.choice([rng.randrange(3200), rng.randrange(3200) + 0.25,
                          rng.choice(["DE", "FR", "US", "A", "Z"]), rng.random() < 0.5])
        return ("cmp", col, rng.choice(["=", "<", "<=", ">", ">="]), lit)
    return ("and" if k == 3 else "or", [random_filter(rng, columns, depth + 1)
                                        for _ in range(1 + rng.randrange(3))])


def random_row(rng, rnd, i):
    """A row of round `rnd`: amounts cluster per round, so batches hold narrow ranges."""
    row = {"n": rnd * 100 + i, "country": rng.choice(["DE", "FR", "US", None]),
           "amount": rng.choice([rnd * 100 + rng.randrange(100), None,
                                 rnd * 100 + rng.randrange(100) + 0.5])}
    if rng.random() < 0.2:
        del row["country"]
    if rng.random() < 0.1:
        row["flag"] = rng.random() < 0.5
    return row


class PythonClientTest(BrokerTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        b = cls.broker.bootstrap
        cls.client = Strata(b, client_id="strata-it-python", timeout=20)
        # The raw table: 300 keys in 3 partitions, updates and deletes.
        cls.topic = unique_topic("pyraw")
        itutil.ck_create_topic(b, cls.topic, P, {"table.type": "primary-key"})
        rng = random.Random(7)
        keys = ["user-%03d" % i for i in range(300)]
        items = [{"topic": cls.topic, "key": k.encode(), "value": b"v0-" + k.encode()}
                 for k in keys]
        for i in range(700):
            k = rng.choice(keys).encode()
            value = None if rng.random() < 0.15 else b"v%d" % i
            items.append({"topic": cls.topic, "key": k, "value": value})
        cls.keys = [k.encode() for k in keys]
        cls.rows, cls.changes = table_model(produce(b, items))

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        super().tearDownClass()

    def expect_row(self, key):
        m = self.rows.get(key)
        if m is None:
            return None
        return {"key": key, "value": m[0], "offset": m[1], "timestamp": m[2], "partition": m[3]}

    # ---------------------------------------------------------------- no broker needed

    def test_partitioner_vectors(self):
        # Kafka's UtilsTest vectors, and the broker's own partition for every delivered key.
        self.assertEqual(murmur2(b"21"), -973932308)
        self.assertEqual(murmur2(b"foobar"), -790332482)
        self.assertEqual(murmur2(b"a-little-bit-long-string"), -985981536)
        self.assertEqual(partition_for_key("crc32", b"123456789", 1 << 30), 0xCBF43926 % (1 << 30))
        for key, (_, _, _, p) in self.rows.items():
            self.assertEqual(partition_for_key("murmur2", key, P), p, key)

    def test_generated_files_match_the_protos(self):
        if shutil.which("protoc") is None:
            self.skipTest("protoc is not installed (tools/setup.sh installs protobuf-compiler)")
        ext = os.path.join(PYDIR, "strata_client", "_ext")
        with tempfile.TemporaryDirectory() as d:
            subprocess.run(["bash", os.path.join(PYDIR, "gen.sh"), d], check=True, timeout=60)
            fresh = sorted(f for f in os.listdir(d) if f.endswith("_pb2.py"))
            committed = sorted(f for f in os.listdir(ext) if f.endswith("_pb2.py"))
            self.assertEqual(fresh, committed)
            for f in fresh:
                with open(os.path.join(d, f), "rb") as a, open(os.path.join(ext, f), "rb") as b:
                    self.assertEqual(a.read(), b.read(),
                                     "%s differs from protocol/ext: run tools/python/gen.sh" % f)

    def test_to_dataframe_without_pandas_says_so(self):
        if importlib.util.find_spec("pandas") is not None:
            self.skipTest("pandas is installed")
        with self.assertRaisesRegex(ImportError, "pandas"):
            self.client.table(self.topic).to_dataframe([])

    # ---------------------------------------------------------------- raw table reads

    def test_describe(self):
        d = self.client.table(self.topic).describe()
        self.assertEqual((d["topic"], d["table_type"], d["partitioner"], d["partition_count"],
                          d["value_format"]), (self.topic, "primary-key", "murmur2", P, "raw"))
        self.assertEqual([p["partition"] for p in d["partitions"]], list(range(P)))
        self.assertTrue(all(p["high_watermark"] > 0 for p in d["partitions"]), d)

    def test_get_and_get_many_equal_the_model(self):
        t = self.client.table(self.topic)
        asked = self.keys + [b"absent-%d" % i for i in range(30)]
        random.Random(3).shuffle(asked)
        got = t.get_many(asked)
        self.assertEqual(len(got), len(asked))
        for k, row in zip(asked, got):
            self.assertEqual(row, self.expect_row(k), k)
        self.assertEqual({r["partition"] for r in got if r}, set(range(P)), "all partitions")
        self.assertGreater(sum(1 for r in got if r is None), 30, "deleted keys are absent")
        present = next(k for k in self.keys if k in self.rows)
        self.assertEqual(t.get(present.decode()), self.expect_row(present))  # a str key
        self.assertEqual(t.get(bytearray(present)), self.expect_row(present))
        self.assertIsNone(t.get("absent"))
        self.assertEqual(t.get_many([]), [])
        # Truncation rounds: a 1-byte budget serves one key per response; all are answered.
        some = self.keys[:40] + [b"absent"]
        calls = []
        real = _wire.Connection.call_ext

        def counted(conn, api_key, *args, **kw):
            calls.append(api_key)
            return real(conn, api_key, *args, **kw)

        _wire.Connection.call_ext = counted
        try:
            self.assertEqual(t.get_many(some, max_bytes=1), [self.expect_row(k) for k in some])
        finally:
            _wire.Connection.call_ext = real
        self.assertGreater(calls.count(16000), 30, "one served key per round")
        with self.assertRaises(TypeError):
            t.get(42)

    def test_prefix_across_partitions(self):
        t = self.client.table(self.topic)
        want = sorted(k for k in self.rows if k.startswith(b"user-1"))
        got = list(t.prefix("user-1", page_rows=7))
        self.assertEqual(sorted(r["key"] for r in got), want)
        self.assertEqual(len(got), len(want), "each row once")
        for r in got:
            self.assertEqual(r, self.expect_row(r["key"]))
        self.assertGreater(len({r["partition"] for r in got}), 1)
        self.assertEqual(len(list(t.prefix(b"user-", limit=11, page_rows=4))), 11)
        self.assertEqual(list(t.prefix("nothing-")), [])

    def test_scan_returns_every_row_exactly_once(self):
        t = self.client.table(self.topic)
        seen = []
        snapshots = {}
        pages = list(t.scan(page_rows=50))
        for page in pages:
            self.assertLessEqual(len(page), 50)
            self.assertEqual(snapshots.setdefault(page.partition, page.snapshot_offset),
                             page.snapshot_offset, "one snapshot per partition")
            for r in page:
                self.assertEqual(r["partition"], page.partition)
                self.assertEqual(r, self.expect_row(r["key"]))
            seen.extend(r["key"] for r in page)
        self.assertEqual(sorted(seen), sorted(self.rows), "every row exactly once")
        self.assertEqual(set(snapshots), set(range(P)))
        one = [r["key"] for page in t.scan(partition=1, page_rows=1000) for r in page]
        self.assertEqual(sorted(one), sorted(k for k, m in self.rows.items() if m[3] == 1))

    def test_changelog_to_the_high_watermark(self):
        t = self.client.table(self.topic)
        got = {}
        for c in t.changelog(0, follow=False, max_records=64):
            got.setdefault(c["partition"], []).append(
                (c["offset"], c["timestamp"], c["kind"], c["key"], c["before"], c["after"]))
        self.assertEqual(set(got), set(self.changes))
        for p in self.changes:
            itutil.assert_same_list(self, got[p], self.changes[p], "partition %d changes" % p)
        # From a partition's own offset, and only the partitions asked for.
        mid = self.changes[2][len(self.changes[2]) // 2][0]
        tail = [(c["offset"], c["kind"]) for c in t.changelog({2: mid}, follow=False)]
        self.assertEqual(tail, [(c[0], c[2]) for c in self.changes[2] if c[0] >= mid])

    def test_changelog_follow_sees_a_later_write(self):
        b = self.broker.bootstrap
        topic = unique_topic("pylive")
        itutil.ck_create_topic(b, topic, 2, {"table.type": "primary-key"})
        produce(b, [{"topic": topic, "key": b"early", "value": b"1"}])
        t = self.client.table(topic)
        seen, started, errors = [], threading.Event(), []

        def follow():
            try:
                it = t.changelog(0, follow=True, max_wait_ms=300)
                started.set()
                for c in it:
                    seen.append((c["kind"], c["key"], c["after"]))
                    if c["key"] == b"late":
                        it.close()
                        return
            except Exception as e:  # reported by the main thread
                errors.append(e)

        th = threading.Thread(target=follow, daemon=True)
        th.start()
        self.assertTrue(started.wait(10))
        itutil.harness.wait_until(lambda: seen, timeout=10, what="the early change")
        time.sleep(0.5)  # the reader is now long-polling
        produce(b, [{"topic": topic, "key": b"late", "value": b"2"}])
        th.join(15)
        self.assertFalse(th.is_alive(), "follow=True did not see the later write")
        self.assertEqual(errors, [])
        self.assertEqual(seen, [("insert", b"early", b"1"), ("insert", b"late", b"2")])

    def test_eight_threads_share_one_client(self):
        t = self.client.table(self.topic)
        failures = []

        def worker(seed):
            rng = random.Random(seed)
            try:
                for _ in range(25):
                    ks = rng.sample(self.keys, 40) + [b"nope-%d" % seed]
                    got = t.get_many(ks)
                    want = [self.expect_row(k) for k in ks]
                    if got != want:
                        failures.append((seed, "mismatch"))
                        return
            except Exception as e:
                failures.append((seed, repr(e)))

        threads = [threading.Thread(target=worker, args=(s,)) for s in range(8)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(60)
        self.assertEqual(failures, [])

    def test_crc32_table_written_by_librdkafka_default_partitioner(self):
        b = self.broker.bootstrap
        topic = unique_topic("pycrc")
        itutil.ck_create_topic(b, topic, 4, {"table.type": "primary-key",
                                             "table.partitioner": "crc32"})
        keys = [b"crc-%d" % i for i in range(60)]
        written = produce(b, [{"topic": topic, "key": k, "value": k[::-1]} for k in keys],
                          partitioner="consistent_random")
        t = self.client.table(topic)
        self.assertEqual(t.describe()["partitioner"], "crc32")
        got = t.get_many(keys)
        self.assertEqual([r and (r["value"], r["partition"]) for r in got],
                         [(k[::-1], m.partition()) for (_, m), k in
                          zip(sorted(written, key=lambda im: keys.index(im[0]["key"])), keys)])

    # ---------------------------------------------------------------- history

    def test_as_of_by_offset_and_time_equal_the_model(self):
        b = self.broker.bootstrap
        topic = unique_topic("pyhist")
        itutil.ck_create_topic(b, topic, 2, {"table.type": "primary-key",
                                             "table.history.enabled": "true"})
        rng = random.Random(11)
        keys = [b"h-%02d" % i for i in range(20)]
        items = []
        for i in range(400):
            value = None if rng.random() < 0.1 else b"v%d" % i
            items.append({"topic": topic, "key": rng.choice(keys), "value": value,
                          "timestamp": BASE + i * 10})
        history, present = {}, {}
        for item, msg in produce(b, items):
            k, v = item["key"], item["value"]
            if v is None and not present.get(k):
                continue  # deleting an absent key changes nothing
            history.setdefault(k, []).append((msg.offset(), item["timestamp"], v,
                                              msg.partition()))
            present[k] = v is not None

        def expected(k, at, by_offset):
            hit = None
            for off, ts, v, p in history.get(k, []):
                if (off if by_offset else ts) <= at:
                    hit = (v, off, ts, p)
            if hit is None or hit[0] is None:
                return None
            return {"key": k, "at": at, "value": hit[0], "offset": hit[1], "timestamp": hit[2],
                    "partition": hit[3]}

        t = self.client.table(topic)
        by_time = [(rng.choice(keys), BASE - 50 + rng.randint(0, 4100)) for _ in range(500)]
        got = t.as_of(by_time)
        self.assertEqual(got, [expected(k, at, False) for k, at in by_time])
        self.assertGreater(sum(1 for r in got if r), 300)
        by_offset = [(k, off + d) for k in keys for off, _, _, _ in history.get(k, [])[:6]
                     for d in (-1, 0, 1)]
        got = t.as_of(by_offset, by="offset", max_bytes=1)  # rounds of one key
        self.assertEqual(got, [expected(k, at, True) for k, at in by_offset])
        with self.assertRaises(ValueError):
            t.as_of(by_time, by="day")

    def test_as_of_before_retention_is_out_of_retention(self):
        b = self.broker.bootstrap
        topic = unique_topic("pyret")
        itutil.ck_create_topic(b, topic, 1, {"table.type": "primary-key",
                                             "table.history.enabled": "true",
                                             "table.kv.snapshot.interval.ms": "100"})
        items = [{"topic": topic, "key": b"r-%d" % (i % 5), "value": b"v%d" % i,
                  "timestamp": BASE + i * 10} for i in range(60)]
        written = produce(b, items)
        t = self.client.table(topic)

        def checkpointed():
            p = t.describe()["partitions"][0]
            return p["checkpoint_offset"] >= p["applied_offset"] >= 59

        itutil.harness.wait_until(checkpointed, timeout=20, what="a checkpoint of every write")
        low, err = delete_records(self.broker.port, topic, 0, 60)
        self.assertEqual(err, 0)
        self.assertGreater(low, 5, "DeleteRecords moved the log start")
        itutil.harness.wait_until(
            lambda: isinstance(t.as_of([("r-0", 0)], by="offset")[0], OutOfRetention),
            timeout=10, what="the history trimmed below the new log start")
        old = t.as_of([("r-0", 0), ("r-1", low - 2)], by="offset")
        for r in old:
            self.assertIsInstance(r, OutOfRetention)
            self.assertEqual(r.earliest, low - 1)
            self.assertFalse(r)
        self.assertEqual((old[0].key, old[0].at, old[0].partition), (b"r-0", 0, 0))
        # From low - 1 on, every offset is exact.
        for item, msg in written[low - 1:low + 7]:
            row = t.as_of([(item["key"], msg.offset())], by="offset")[0]
            self.assertEqual((row["value"], row["offset"]), (item["value"], msg.offset()))
        # A time before the trimmed changes: refused with the newest trimmed timestamp.
        early = t.as_of([("r-3", BASE)])[0]
        self.assertIsInstance(early, OutOfRetention)
        self.assertEqual(early.earliest, written[low - 1][0]["timestamp"])

    # ---------------------------------------------------------------- typed table

    def test_typed_json_rows_and_projection(self):
        b = self.broker.bootstrap
        topic = unique_topic("pyjson")
        itutil.ck_create_topic(b, topic, 2, {"table.type": "primary-key",
                                             "table.value.format": "json"})
        produce(b, [{"topic": topic, "key": b"u1", "value": b'{"name": "ann", "age": 31}'},
                    {"topic": topic, "key": b"u2", "value": b'{"name":"bob","city":"oslo"}'},
                    {"topic": topic, "key": b"u1", "value": b'{"age": 32}'}])
        t = self.client.table(topic)
        self.assertTrue(t.typed)
        self.assertEqual(t.get("u1")["value"], {"name": "ann", "age": 32})
        got = t.get_many(["u1", "u2", "u3"], columns=["age", "city"])
        self.assertEqual([r and r["value"] for r in got],
                         [{"age": 32, "city": None}, {"age": None, "city": "oslo"}, None])
        self.assertEqual(sorted((r["key"], r["value"]["name"])
                                for r in t.prefix("u", columns=["name"])),
                         [(b"u1", "ann"), (b"u2", "bob")])
        rows = [r for page in t.scan(columns=["city"]) for r in page]
        self.assertEqual(sorted((r["key"], r["value"]) for r in rows),
                         [(b"u1", {"city": None}), (b"u2", {"city": "oslo"})])
        changes = [(c["kind"], c["after"]) for c in t.changelog(0, follow=False)
                   if c["key"] == b"u1"]
        self.assertEqual(changes, [("insert", {"age": 31, "name": "ann"}),
                                   ("update", {"age": 32, "name": "ann"})])

    def test_filtered_changelog_equals_filtering_the_whole_changelog(self):
        # A model test of filtered reads: random WHERE predicates (nulls, absent columns, types
        # that do not compare, AND/OR) give exactly the changes a Python evaluation of the same
        # semantics keeps from the unfiltered changelog; selective ranges skip whole batches by
        # their column statistics.
        b = self.broker.bootstrap
        topic = unique_topic("pystats")
        itutil.ck_create_topic(b, topic, 1, {"table.type": "primary-key",
                                             "table.value.format": "json",
                                             "table.statistics.columns": "*"})
        rng = random.Random(11)
        producer = itutil.ck_producer(b)
        for rnd in range(30):  # one flush per round: batches hold clustered amounts
            items = []
            for i in range(40):
                key = b"k%03d" % rng.randrange(120)
                if rng.random() < 0.08:
                    items.append({"topic": topic, "key": key, "value": None})
                    continue
                row = random_row(rng, rnd, i)
                items.append({"topic": topic, "key": key, "value": json.dumps(row).encode()})
            itutil.ck_produce_all(producer, items)
        t = self.client.table(topic)
        everything = list(t.changelog(0, follow=False))
        self.assertGreater(len(everything), 500)

        def value_of(c):
            return c["before"] if c["kind"] == "delete" else c["after"]

        def check(node):
            stats = {}
            got = [(c["offset"], c["kind"]) for c in
                   t.changelog(0, follow=False, where=filter_text(node), stats=stats)]
            want = [(c["offset"], c["kind"]) for c in everything
                    if value_of(c) is None or filter_holds(node, value_of(c))]
            self.assertEqual(got, want, filter_text(node))
            self.assertLessEqual(stats.get("filtered_changes", 0) + len(got), len(everything))
            return stats

        for _ in range(40):
            check(random_filter(rng, ["amount", "country", "n", "flag", "missing"]))
        # Selective ranges: most batches are skipped unread, none that holds a match.
        skipped = 0
        for lo in (500, 1200, 2600):
            stats = check(("and", [("cmp", "amount", ">=", lo), ("cmp", "amount", "<", lo + 40)]))
            skipped += stats["skipped_batches"]
            self.assertGreater(stats["skipped_bytes"], 0)
        self.assertGreater(skipped, 3 * 15, "batches skipped by statistics")
        # Bad filters: a raw table, a malformed text, a predicate nested too deep.
        with self.assertRaises(StrataError) as cm:
            list(self.client.table(self.topic).changelog(0, follow=False, where="a = 1"))
        self.assertEqual(cm.exception.name, "INVALID_REQUEST")
        with self.assertRaises(ValueError):
            list(t.changelog(0, follow=False, where="amount >"))
        deep = "n = 1"
        for i in range(20):
            deep = "n = %d %s (%s)" % (i, "AND" if i % 2 else "OR", deep)
        with self.assertRaises(StrataError) as cm:
            list(t.changelog(0, follow=False, where=deep))
        self.assertEqual(cm.exception.name, "INVALID_REQUEST")
        self.assertIn("deeper", cm.exception.message)

    def test_read_log_of_a_typed_log_topic_filtered(self):
        # ReadLog on a typed (json) log topic with column statistics: every record read back;
        # random WHERE filters equal a Python evaluation of the whole read (a null value always
        # passes); selective ranges skip batches; non-JSON values refused with INVALID_RECORD.
        b = self.broker.bootstrap
        topic = unique_topic("pylogjson")
        itutil.ck_create_topic(b, topic, 2, {"table.value.format": "json",
                                             "table.statistics.columns": "amount,country,n"})
        rng = random.Random(5)
        producer = itutil.ck_producer(b)
        written = []
        for rnd in range(20):
            items = []
            for i in range(50):
                key = b"e%03d" % rng.randrange(200)
                if rnd % 5 == 0 and rng.random() < 0.1:  # a null value: its batch is never skipped
                    items.append({"topic": topic, "key": key, "value": None,
                                  "partition": rnd % 2})
                    continue
                value = json.dumps(random_row(rng, rnd, i)).encode()
                items.append({"topic": topic, "key": key, "value": value, "partition": rnd % 2,
                              "headers": [("h", b"%d" % i)]})
            written += zip(items, itutil.ck_produce_all(producer, items))
        log = self.client.log(topic)
        self.assertEqual(log.partition_count(), 2)
        everything = list(log.read(0, follow=False))
        self.assertEqual(sorted((r["partition"], r["offset"]) for r in everything),
                         sorted((m.partition(), m.offset()) for _, m in written))
        by_pos = {(m.partition(), m.offset()): item for item, m in written}
        for r in everything:
            item = by_pos[(r["partition"], r["offset"])]
            self.assertEqual(r["key"], item["key"])
            want = None if item["value"] is None else json.loads(item["value"])
            self.assertEqual(r["value"], want)
            if item["value"] is not None:
                self.assertEqual(r["headers"], [("h", item["headers"][0][1])])

        def check(node):
            stats = {}
            got = [(r["partition"], r["offset"]) for r in
                   log.read(0, follow=False, where=filter_text(node), stats=stats)]
            want = [(r["partition"], r["offset"]) for r in everything
                    if r["value"] is None or filter_holds(node, r["value"])]
            self.assertEqual(got, want, filter_text(node))
            return stats

        for _ in range(30):
            check(random_filter(rng, ["amount", "country", "n", "flag", "missing"]))
        stats = check(("and", [("cmp", "n", ">=", 1000), ("cmp", "n", "<", 1010)]))
        self.assertGreater(stats["skipped_batches"], 10)
        self.assertGreater(stats["filtered_records"], 0)
        # Values that are not JSON objects are refused, naming the record.
        from confluent_kafka import KafkaError
        errs = []
        p = itutil.ck_producer(b)
        for v in (b"not json", b"[1, 2]"):
            p.produce(topic, key=b"x", value=v, on_delivery=lambda e, m: errs.append(e))
            p.flush(30)
        self.assertEqual([e.code() if e else None for e in errs],
                         [KafkaError.INVALID_RECORD, KafkaError.INVALID_RECORD])
        # ReadLog is for log topics; statistics need a typed topic; confluent needs its subject.
        with self.assertRaises(StrataError) as cm:
            list(self.client.log(self.topic).read(0, follow=False))
        self.assertEqual(cm.exception.name, "INVALID_REQUEST")
        for bad in ({"table.statistics.columns": "a"}, {"table.value.format": "confluent"},
                    {"table.value.format": "json", "table.merge-engine": "last_row"}):
            with self.assertRaises(Exception) as cm:
                itutil.ck_create_topic(b, unique_topic("pylogbad"), 1, bad)
            self.assertIn("INVALID_CONFIG", str(cm.exception), bad)

    # ---------------------------------------------------------------- errors

    def test_errors(self):
        b = self.broker.bootstrap
        missing = unique_topic("pynone")
        for call in (lambda: self.client.table(missing).get("k"),
                     lambda: self.client.table(missing).describe(),
                     lambda: list(self.client.table(missing).scan())):
            with self.assertRaises(StrataError) as cm:
                call()
            self.assertEqual((cm.exception.code, cm.exception.name),
                             (3, "UNKNOWN_TOPIC_OR_PARTITION"))
        log = unique_topic("pylog")
        itutil.ck_create_topic(b, log, 1)
        with self.assertRaises(StrataError) as cm:
            self.client.table(log).get("k")
        self.assertEqual(cm.exception.name, "INVALID_REQUEST")
        self.assertTrue(str(cm.exception).startswith("INVALID_REQUEST"), str(cm.exception))
        with self.assertRaises(StrataError) as cm:  # projection needs a typed table
            self.client.table(self.topic).get("user-001", columns=["a"])
        self.assertEqual(cm.exception.name, "INVALID_REQUEST")
        with self.assertRaises(StrataError) as cm:  # no table.history.enabled
            self.client.table(self.topic).as_of([("user-001", BASE)])
        self.assertEqual(cm.exception.name, "INVALID_REQUEST")
        self.assertIn("history", cm.exception.message)
        with self.assertRaises(StrataError) as cm:  # beyond the high watermark
            list(self.client.table(self.topic).changelog(10 ** 9, follow=False))
        self.assertEqual(cm.exception.name, "OFFSET_OUT_OF_RANGE")
        closed = Strata(b)
        closed.close()
        with self.assertRaises(StrataError):
            closed.table(self.topic).get("user-001")

    # ---------------------------------------------------------------- install

    def test_venv_install_and_one_lookup(self):
        if subprocess.run([sys.executable, "-m", "venv", "--help"], capture_output=True,
                          timeout=60).returncode != 0:
            self.skipTest("python3 -m venv is unavailable (Debian: apt-get install python3-venv)")
        key = next(k for k in self.keys if k in self.rows)
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "src")  # a copy: pip's build leaves build/ and egg-info behind
            shutil.copytree(PYDIR, src, ignore=shutil.ignore_patterns("__pycache__", "build",
                                                                      "*.egg-info"))
            venv = os.path.join(d, "v")
            subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv],
                           check=True, capture_output=True, timeout=120)
            pip = subprocess.run([os.path.join(venv, "bin", "pip"), "install", "-q",
                                  "--no-build-isolation", "--no-index", src],
                                 capture_output=True, text=True, timeout=300)
            self.assertEqual(pip.returncode, 0, pip.stdout + pip.stderr)
            code = ("import sys, strata_client\n"
                    "assert 'site-packages' in strata_client.__file__, strata_client.__file__\n"
                    "with strata_client.Strata(sys.argv[1]) as s:\n"
                    "    print(s.table(sys.argv[2]).get(sys.argv[3])['value'].decode())\n")
            env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
            out = subprocess.run([os.path.join(venv, "bin", "python"), "-c", code,
                                  self.broker.bootstrap, self.topic, key.decode()],
                                 capture_output=True, text=True, timeout=60, cwd=d, env=env)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertEqual(out.stdout.strip(), self.rows[key][0].decode())


if __name__ == "__main__":
    unittest.main()
