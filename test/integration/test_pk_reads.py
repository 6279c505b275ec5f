"""Primary-key table reads at scale (issue 5): on 4-partition PK tables,
(a) read-your-writes: 10,000 acks=1 produces, each followed by a Lookup that sees it;
(b) Scan (16002) and PrefixLookup (16001) with limit 100 return each of the 10k rows exactly once;
(c) Scan at X + ReadChangelog (16003) from X, while another thread keeps upserting and deleting,
    rebuilds exactly the final state (checked against the writer's model and Lookup of every key);
(d) ReadChangelog yields exactly the changes an independent model computes (full and wal image),
    skips `none` changes, long-polls (answers on a write, and after max_wait_ms without one);
(e) bad input: unknown topic/partition, bad limits, malformed protobuf, log topic, expired or
    foreign cursors (other topic, partition or connection), offsets out of range -> the error
    codes of the protos;
(f) bounded answers: Lookup and PrefixLookup stay within max_bytes (soft cap, at least one row;
    Lookup marks the rest truncated, PrefixLookup ends the page with a cursor) and the client
    library (the strata CLI) re-requests; a row over max.message.bytes once decompressed is
    refused; a huge Lookup request is refused before it is decoded (own broker: peak RSS).
Protobuf is hand-encoded (Debian's python3 has no protobuf module): helpers of test_pk_tables."""
import json
import os
import random
import struct
import subprocess
import threading
import time
import unittest

import itutil
from itutil import BrokerTestCase, RawConn, unique_topic
from test_pk_tables import (API_LOOKUP, API_PREFIX_LOOKUP, lookup, murmur2_partition, one,
                            pb_int, pb_len, pb_parse, prefix_lookup, produce_v8)

API_SCAN = 16002
API_READ_CHANGELOG = 16003
OFFSET_OUT_OF_RANGE = 1
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_REQUEST = 42
MESSAGE_TOO_LARGE = 10
MIB = 1 << 20
CLI = os.environ.get("STRATA_CLI") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "tools", "cli", "strata")
FETCH_SESSION_ID_NOT_FOUND = 70
KINDS = {1: "insert", 2: "update", 3: "delete"}
P = 4


def scan(conn, topic, partition, limit, cursor=None, max_bytes=0):
    """-> (error, snapshot_offset, [(key, value, offset, ts)], next_cursor or None, message)."""
    body = pb_len(1, topic.encode()) + pb_int(2, partition) + pb_int(3, limit)
    if cursor is not None:
        body += pb_len(4, cursor)
    if max_bytes:
        body += pb_int(5, max_bytes)
    r = conn.request(API_SCAN, 0, body, flexible=True)
    resp = pb_parse(r.data[r.pos:])
    rows = []
    for row in resp.get(4, []):
        row = pb_parse(row)
        rows.append((one(row, 1, b""), one(row, 2, b""), one(row, 3), one(row, 4)))
    return (one(resp, 1), one(resp, 3), rows, resp.get(5, [None])[0],
            one(resp, 2, b"").decode())


def scan_all(conn, topic, partition, limit=100):
    """Every row of one partition through one scan -> (X, [rows], pages)."""
    x, rows, cursor, pages = None, [], None, 0
    while True:
        err, sx, page, cursor, msg = scan(conn, topic, partition, limit, cursor)
        assert err == 0, (err, msg)
        assert x is None or sx == x, "snapshot offset moved during a scan"
        x = sx
        assert len(page) <= limit
        rows.extend(page)
        pages += 1
        if cursor is None:
            return x, rows, pages


def read_changelog_raw(conn, body):
    r = conn.request(API_READ_CHANGELOG, 0, body, flexible=True)
    return pb_parse(r.data[r.pos:])


def read_changelog(conn, topic, parts, max_wait_ms=0):
    """parts: [(partition, from_offset, max_records[, max_bytes])] -> (error, {partition: dict})
    with error, next_offset, high_watermark, log_start_offset and changes: [(offset, kind, key,
    before or None, after or None)]."""
    body = pb_len(1, topic.encode())
    for p in parts:
        pr = pb_int(1, p[0]) + pb_int(2, p[1]) + pb_int(3, p[2])
        if len(p) > 3:
            pr += pb_int(4, p[3])
        body += pb_len(2, pr)
    if max_wait_ms:
        body += pb_int(3, max_wait_ms)
    resp = read_changelog_raw(conn, body)
    out = {}
    for pc in resp.get(4, []):
        pc = pb_parse(pc)
        changes = []
        for c in pc.get(4, []):
            c = pb_parse(c)
            changes.append((one(c, 1), KINDS.get(one(c, 3), "?"), one(c, 4, b""),
                            c.get(5, [None])[0], c.get(6, [None])[0]))
        out[one(pc, 1)] = {"error": one(pc, 2), "next_offset": one(pc, 5),
                           "high_watermark": one(pc, 6), "log_start_offset": one(pc, 7),
                           "changes": changes, "message": one(pc, 3, b"").decode()}
    return one(resp, 1), out


def lookup_bounded(conn, topic, parts, max_bytes=0):
    """Lookup with max_bytes (field 2; 0 = the broker default) -> (top_error, message,
    {partition: (error, [(found, value, truncated)])}, response frame bytes)."""
    pk = b"".join(pb_len(2, pb_int(1, p) + b"".join(pb_len(2, k) for k in keys))
                  for p, keys in parts.items())
    body = pb_len(1, pb_len(1, topic.encode()) + pk)
    if max_bytes:
        body += pb_int(2, max_bytes)
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
                rows.append((bool(one(row, 1)), one(row, 2, b""), bool(one(row, 5))))
            out[one(p, 1)] = (one(p, 2), rows)
    return one(resp, 1), one(resp, 2, b"").decode(), out, len(r.data)


def prefix_lookup_bounded(conn, topic, partition, prefix, limit, cursor=None, max_bytes=0):
    """PrefixLookup with max_bytes (field 6) -> (error, [(key, value)], next_cursor or None,
    response frame bytes)."""
    body = pb_len(1, topic.encode()) + pb_int(2, partition) + pb_len(3, prefix) + pb_int(4, limit)
    if cursor is not None:
        body += pb_len(5, cursor)
    if max_bytes:
        body += pb_int(6, max_bytes)
    r = conn.request(API_PREFIX_LOOKUP, 0, body, flexible=True)
    resp = pb_parse(r.data[r.pos:])
    rows = [(one(row, 1, b""), one(row, 2, b"")) for row in map(pb_parse, resp.get(3, []))]
    return one(resp, 1), rows, resp.get(4, [None])[0], len(r.data)


def keys_of_partition(prefix, partition, n):
    out, i = [], 0
    while len(out) < n:
        k = b"%s%06d" % (prefix, i)
        if murmur2_partition(k, P) == partition:
            out.append(k)
        i += 1
    return out


def peak_rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise AssertionError("no VmHWM for pid %d" % pid)


class Model:
    """The table as the writer computes it: rows and the expected changelog per partition."""

    def __init__(self, full=True):
        self.rows = {}
        self.full = full
        self.changes = {p: [] for p in range(P)}  # (offset, kind, key, before, after)

    def apply(self, partition, offset, key, value):
        before = self.rows.get(key)
        if value is None:
            if before is None:
                return
            del self.rows[key]
            self.changes[partition].append(
                (offset, "delete", key, before if self.full else None, None))
        elif before is None:
            self.rows[key] = value
            self.changes[partition].append((offset, "insert", key, None, value))
        elif before != value:
            self.rows[key] = value
            self.changes[partition].append(
                (offset, "update", key, before if self.full else None, value))


class Writer:
    """Single-record acks=1 produces over one raw connection, applied to a Model."""

    def __init__(self, port, topic, model):
        self.conn = RawConn(port, timeout=30)
        self.topic = topic
        self.model = model

    def put(self, key, value):
        p = murmur2_partition(key, P)
        err, base, rec_errs, msg = produce_v8(self.conn, self.topic, p, [(key, value, [])])
        assert err == 0, (err, rec_errs, msg)
        self.model.apply(p, base, key, value)
        return p, base

    def put_batch(self, key, values):
        """One batch of several records for `key` -> (partition, base offset)."""
        p = murmur2_partition(key, P)
        err, base, rec_errs, msg = produce_v8(self.conn, self.topic, p,
                                              [(key, v, []) for v in values])
        assert err == 0, (err, rec_errs, msg)
        for i, v in enumerate(values):
            self.model.apply(p, base + i, key, v)
        return p, base

    def close(self):
        self.conn.close()


class PkReadsTest(BrokerTestCase):
    overrides = {"pk.scan.session.timeout.ms": "1500"}

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.log_topic = unique_topic("log")
        itutil.ck_create_topic(cls.broker.bootstrap, cls.log_topic, 1)

    def conn(self):
        c = RawConn(self.broker.port, timeout=30)
        self.addCleanup(c.close)
        return c

    def pk_topic(self, prefix, image="full"):
        t = unique_topic(prefix)
        itutil.ck_create_topic(self.broker.bootstrap, t, P,
                               {"table.type": "primary-key", "table.changelog.image": image})
        return t

    # (a) + (b)
    def test_10k_read_your_writes_then_scan_and_prefix_lookup_pages(self):
        topic = self.pk_topic("pk10k")
        model = Model()
        w = Writer(self.broker.port, topic, model)
        self.addCleanup(w.close)
        conn = self.conn()
        n = 10000
        t0 = time.time()
        for i in range(n):
            key = b"row-%05d" % i
            value = b"value-%d" % i
            p, off = w.put(key, value)
            top, res = lookup(conn, topic, {p: [key]})
            self.assertEqual(top, 0)
            err, _, rows = res[p]
            self.assertEqual(err, 0)
            self.assertIsNotNone(rows[0], "read-your-writes: %r missing after its ack" % key)
            self.assertEqual(rows[0][0], value)
            self.assertEqual(rows[0][1], off)
        ryw_s = time.time() - t0
        self.assertEqual(len(model.rows), n)
        print("\n10k produce+lookup round trips: %.1f s (%.0f/s)" % (ryw_s, n / ryw_s))

        t0 = time.time()
        seen = {}
        for p in range(P):
            x, rows, pages = scan_all(conn, topic, p, limit=100)
            self.assertEqual(pages, (len(rows) + 99) // 100 or 1)
            keys = [r[0] for r in rows]
            self.assertEqual(keys, sorted(keys), "scan rows are in key order")
            for k, v, off, _ in rows:
                self.assertNotIn(k, seen, "row returned twice")
                self.assertEqual(murmur2_partition(k, P), p)
                self.assertLess(off, x)
                seen[k] = v
        print("scan of 10k rows (limit 100): %.2f s" % (time.time() - t0))
        self.assertEqual(seen, model.rows)

        seen = {}
        for p in range(P):
            cursor = None
            while True:
                err, rows, cursor = prefix_lookup(conn, topic, p, b"row-", 100, cursor)
                self.assertEqual(err, 0)
                self.assertLessEqual(len(rows), 100)
                for k, v, _ in rows:
                    self.assertNotIn(k, seen)
                    seen[k] = v
                if cursor is None:
                    break
        self.assertEqual(seen, model.rows)

        # The whole changelog: one insert per row, in one request per partition.
        t0 = time.time()
        err, res = read_changelog(conn, topic, [(p, 0, 10000) for p in range(P)])
        self.assertEqual(err, 0)
        got = {}
        for p in range(P):
            self.assertEqual(res[p]["next_offset"], res[p]["high_watermark"])
            for _, kind, k, before, after in res[p]["changes"]:
                self.assertEqual((kind, before), ("insert", None))
                got[k] = after
        print("changelog of 10k inserts in one request: %.2f s" % (time.time() - t0))
        self.assertEqual(got, model.rows)

    # (c)
    def test_scan_then_changelog_from_x_rebuilds_state_under_concurrent_writes(self):
        topic = self.pk_topic("pkscx")
        model = Model()
        w = Writer(self.broker.port, topic, model)
        self.addCleanup(w.close)
        keys = [b"k-%04d" % i for i in range(1500)]
        for k in keys[:1000]:
            w.put(k, b"init")
        lock = threading.Lock()
        stop = threading.Event()
        written = [0]
        errors = []

        def writer():
            rnd = random.Random(7)
            try:
                while not stop.is_set():
                    k = rnd.choice(keys)
                    with lock:
                        w.put(k, None if rnd.random() < 0.3 else b"v%d" % rnd.randrange(10**6))
                    written[0] += 1
            except Exception as e:  # surfaced below
                errors.append(e)

        th = threading.Thread(target=writer)
        th.start()
        conn = self.conn()
        try:
            state, xs = {}, {}
            for p in range(P):
                x, rows, _ = scan_all(conn, topic, p, limit=50)
                xs[p] = x
                for k, v, _, _ in rows:
                    state[k] = v
                time.sleep(0.2)  # let writes land between and after the snapshots
        finally:
            time.sleep(0.3)
            stop.set()
            th.join()
        self.assertFalse(errors, errors)
        self.assertGreater(written[0], 20, "the writer kept writing during the scans")
        applied = 0
        for p in range(P):
            off = xs[p]
            while True:
                err, res = read_changelog(conn, topic, [(p, off, 300)])
                self.assertEqual(err, 0)
                pr = res[p]
                self.assertEqual(pr["error"], 0, pr["message"])
                for o, kind, k, before, after in pr["changes"]:
                    self.assertGreaterEqual(o, xs[p])
                    if kind == "delete":
                        self.assertIn(k, state)
                        del state[k]
                    else:
                        self.assertEqual(kind == "insert", k not in state, (o, kind, k))
                        state[k] = after
                    applied += 1
                self.assertGreater(pr["next_offset"], off - 1)
                off = pr["next_offset"]
                if off >= pr["high_watermark"]:
                    break
        self.assertGreater(applied, 0)
        print("\nscan+changelog rebuild: %d rows, %d concurrent writes, %d changes replayed" %
              (len(state), written[0], applied))
        self.assertEqual(state, model.rows)
        by_part = {}
        for k in keys:
            by_part.setdefault(murmur2_partition(k, P), []).append(k)
        top, res = lookup(conn, topic, by_part)
        self.assertEqual(top, 0)
        for p, ks in by_part.items():
            for k, row in zip(ks, res[p][2]):
                self.assertEqual(row[0] if row else None, state.get(k), k)

    # (d)
    def check_changelog_matches_model(self, image):
        topic = self.pk_topic("pkcl", image)
        model = Model(full=image == "full")
        w = Writer(self.broker.port, topic, model)
        self.addCleanup(w.close)
        rnd = random.Random(11)
        keys = [b"c-%02d" % i for i in range(30)]
        for _ in range(400):
            k = rnd.choice(keys)
            r = rnd.random()
            w.put(k, None if r < 0.25 else b"same" if r < 0.35 else b"v%d" % rnd.randrange(50))
        conn = self.conn()
        for p in range(P):
            got, off, hw = [], 0, None
            while True:
                err, res = read_changelog(conn, topic, [(p, off, 7)])
                self.assertEqual(err, 0)
                pr = res[p]
                self.assertEqual(pr["error"], 0, pr["message"])
                self.assertLessEqual(len(pr["changes"]), 7)
                got.extend(pr["changes"])
                hw = pr["high_watermark"]
                self.assertEqual(pr["log_start_offset"], 0)
                self.assertGreater(pr["next_offset"], off)
                off = pr["next_offset"]
                if off >= hw:
                    break
            self.assertEqual(off, hw)
            self.assertEqual(got, model.changes[p], "partition %d" % p)
        # All partitions in one request with a byte cap: at least one change each, fewer than all.
        err, res = read_changelog(conn, topic, [(p, 0, 10000, 1) for p in range(P)])
        self.assertEqual(err, 0)
        for p in range(P):
            self.assertEqual(res[p]["changes"], model.changes[p][:1])
        # A batch of several records read from an offset inside it: the earlier ones are skipped.
        p, base = w.put_batch(b"multi", [b"m1", b"m2", b"m2", None, b"m3"])
        err, res = read_changelog(conn, topic, [(p, base + 1, 100)])
        self.assertEqual(res[p]["changes"], [c for c in model.changes[p] if c[0] > base])
        self.assertEqual([c[1] for c in res[p]["changes"]], ["update", "delete", "insert"])
        self.assertEqual(res[p]["next_offset"], base + 5)
        # A read over `none` records only still advances past them.
        k = keys[0]
        model.rows.get(k) is None and w.put(k, b"x")
        p, off = w.put(k, model.rows[k])  # identical value: a `none` change
        err, res = read_changelog(conn, topic, [(p, off, 10)])
        self.assertEqual(res[p]["changes"], [])
        self.assertEqual(res[p]["next_offset"], off + 1)

    def test_changelog_matches_model_full_image(self):
        self.check_changelog_matches_model("full")

    def test_changelog_matches_model_wal_image(self):
        self.check_changelog_matches_model("wal")

    def test_changelog_long_poll(self):
        topic = self.pk_topic("pklp")
        model = Model()
        w = Writer(self.broker.port, topic, model)
        self.addCleanup(w.close)
        key = b"poll-key"
        p = murmur2_partition(key, P)
        conn = self.conn()
        # No write: answers empty after max_wait_ms.
        t0 = time.time()
        err, res = read_changelog(conn, topic, [(p, 0, 10)], max_wait_ms=600)
        waited = time.time() - t0
        self.assertEqual(err, 0)
        self.assertEqual(res[p]["changes"], [])
        self.assertEqual(res[p]["next_offset"], 0)
        self.assertGreaterEqual(waited, 0.55)
        self.assertLess(waited, 5)
        # A write during the wait: answered promptly with the change.
        result = {}

        def poll():
            c = RawConn(self.broker.port, timeout=30)
            try:
                t = time.time()
                result["res"] = read_changelog(c, topic, [(p, 0, 10)], max_wait_ms=20000)
                result["took"] = time.time() - t
            finally:
                c.close()

        th = threading.Thread(target=poll)
        th.start()
        time.sleep(0.4)
        t_write = time.time()
        w.put(key, b"hello")
        th.join(25)
        self.assertIn("res", result)
        err, res = result["res"]
        self.assertEqual(err, 0)
        self.assertEqual(res[p]["changes"], [(0, "insert", key, None, b"hello")])
        self.assertLess(time.time() - t_write, 3.0, "long poll answered promptly after the write")
        self.assertLess(result["took"], 10)
        print("\nlong-poll wake after write: %.0f ms" % ((time.time() - t_write) * 1000))

    def test_changelog_error_answers_at_once(self):
        topic = self.pk_topic("pkerr")
        conn = self.conn()
        # One good partition with nothing to read + one out-of-range read: answered at once with
        # the error (no long-poll wait), like Fetch.
        t0 = time.time()
        err, res = read_changelog(conn, topic, [(0, 0, 10), (1, 99, 10)], max_wait_ms=10000)
        self.assertEqual(err, 0)
        self.assertEqual(res[1]["error"], 1)  # OFFSET_OUT_OF_RANGE
        self.assertEqual(res[0]["error"], 0)
        self.assertLess(time.time() - t0, 5, "a partition error must not wait for max_wait_ms")
        self.assertBrokerAlive()

    def test_scan_cursor_after_topic_recreated(self):
        from confluent_kafka.admin import AdminClient
        topic = self.pk_topic("pkrec")
        w = Writer(self.broker.port, topic, Model())
        self.addCleanup(w.close)
        keys = [b"rk-%d" % i for i in range(12)]
        for k in keys:
            w.put(k, b"x")
        # 12 keys over 4 partitions: the fullest one has at least 3 rows, so a limit-1 page
        # always has a continuation.
        p = max(range(P), key=lambda q: sum(murmur2_partition(k, P) == q for k in keys))
        conn = self.conn()
        err, _, rows, cursor, _ = scan(conn, topic, p, 1)
        self.assertEqual(err, 0)
        self.assertIsNotNone(cursor)
        admin = AdminClient({"bootstrap.servers": self.broker.bootstrap})
        admin.delete_topics([topic])[topic].result(30)
        self.assertEqual(scan(conn, topic, p, 1, cursor)[0], UNKNOWN_TOPIC_OR_PARTITION)
        deadline = time.time() + 20
        while True:
            try:
                itutil.ck_create_topic(self.broker.bootstrap, topic, P,
                                       {"table.type": "primary-key"})
                break
            except Exception:
                if time.time() > deadline:
                    raise
                time.sleep(0.2)
        self.assertEqual(scan(conn, topic, p, 1, cursor)[0], FETCH_SESSION_ID_NOT_FOUND)

    def test_scan_cursor_is_bound_to_its_connection(self):
        topic = self.pk_topic("pkconn")
        w = Writer(self.broker.port, topic, Model())
        self.addCleanup(w.close)
        keys = [b"ck-%d" % i for i in range(12)]
        for k in keys:
            w.put(k, b"x")
        p = max(range(P), key=lambda q: sum(murmur2_partition(k, P) == q for k in keys))
        first, second = self.conn(), self.conn()
        err, _, rows, cursor, _ = scan(first, topic, p, 1)
        self.assertEqual(err, 0)
        self.assertIsNotNone(cursor)
        # Version 2 | 16-byte random session id | partition | last key (docs/pk-tables.md).
        self.assertEqual(cursor[0], 2)
        self.assertEqual(struct.unpack(">i", cursor[17:21])[0], p)
        self.assertEqual(cursor[21:], rows[-1][0])
        # Another connection presenting the cursor: as if the scan had expired ...
        err, _, rows2, nc, msg = scan(second, topic, p, 1, cursor)
        self.assertEqual(err, FETCH_SESSION_ID_NOT_FOUND, msg)
        self.assertEqual(rows2, [])
        self.assertIsNone(nc)
        # ... while the opener continues undisturbed, from the same snapshot.
        err, _, rows3, _, msg = scan(first, topic, p, 1, cursor)
        self.assertEqual(err, 0, msg)
        self.assertEqual(len(rows3), 1)
        self.assertGreater(rows3[0][0], rows[-1][0])
        # Two scans get unrelated ids (random, not a counter): they differ in most bytes.
        _, _, _, other, _ = scan(first, topic, p, 1)
        self.assertIsNotNone(other)
        differing = sum(a != b for a, b in zip(cursor[1:17], other[1:17]))
        self.assertGreaterEqual(differing, 8, (cursor[1:17].hex(), other[1:17].hex()))
        # A cursor of the old format (sequential 64-bit ids) is answered as expired.
        v1 = b"\x01" + struct.pack(">Qi", 1, p) + rows[-1][0]
        self.assertEqual(scan(first, topic, p, 1, v1)[0], FETCH_SESSION_ID_NOT_FOUND)
        self.assertBrokerAlive()

    # (f) bounded answers
    def big_table(self, prefix, max_message_bytes=4 * MIB):
        t = unique_topic(prefix)
        itutil.ck_create_topic(self.broker.bootstrap, t, P, {
            "table.type": "primary-key", "max.message.bytes": str(max_message_bytes)})
        return t

    def put(self, conn, topic, key, value):
        err, _, _, msg = produce_v8(conn, topic, murmur2_partition(key, P), [(key, value, [])])
        self.assertEqual(err, 0, msg)

    def test_lookup_of_a_large_row_is_bounded_and_the_client_re_requests(self):
        topic = self.big_table("pkbig")
        conn = self.conn()
        key, big = b"big", os.urandom(MIB)
        p = murmur2_partition(key, P)
        self.put(conn, topic, key, big)
        # One ~1 MiB row named 200 times with a 3 MiB budget: a bounded answer whose first rows
        # are served and whose others are marked truncated (never silently absent).
        budget = 3 * MIB
        top, msg, res, size = lookup_bounded(conn, topic, {p: [key] * 200}, budget)
        self.assertEqual(top, 0, msg)
        err, rows = res[p]
        self.assertEqual(err, 0)
        self.assertEqual(len(rows), 200)
        served = sum(not r[2] for r in rows)
        self.assertGreaterEqual(served, 1)
        self.assertLessEqual(size, budget + MIB + 64 * 1024, "max_bytes + one row at most")
        self.assertEqual(rows[:served], [(True, big, False)] * served)
        self.assertEqual(rows[served:], [(False, b"", True)] * (200 - served))
        # Re-requesting the truncated keys gets all 200, each answer bounded.
        left, requests = 200, 0
        while left:
            top, msg, res, size = lookup_bounded(conn, topic, {p: [key] * left}, budget)
            self.assertEqual((top, res[p][0]), (0, 0), msg)
            n = sum(not r[2] for r in res[p][1])
            self.assertGreaterEqual(n, 1, "every answer serves at least one row")
            self.assertLessEqual(size, budget + MIB + 64 * 1024)
            self.assertTrue(all(r == (True, big, False) for r in res[p][1][:n]))
            left -= n
            requests += 1
        self.assertGreater(requests, 10)
        # A budget below one row still serves one (soft cap); absent keys cost nothing but come
        # after the budget truncated like the rest; the other partition of the same request too.
        other = (p + 1) % P
        absent = keys_of_partition(b"absent-", other, 2)
        top, _, res, _ = lookup_bounded(conn, topic, {p: [b"nope", key, key], other: absent}, 1)
        self.assertEqual(top, 0)
        self.assertEqual(res[p][1], [(False, b"", False), (True, big, False), (False, b"", True)])
        self.assertEqual(res[other][1], [(False, b"", True)] * 2)
        # The broker default (16 MiB) bounds a request without max_bytes, the cap (64 MiB) one
        # asking for more; a negative max_bytes is refused.
        top, _, res, size = lookup_bounded(conn, topic, {p: [key] * 40})
        self.assertEqual(top, 0)
        self.assertLessEqual(size, 17 * MIB + 64 * 1024)
        self.assertEqual(sum(not r[2] for r in res[p][1]), 16)
        top, _, res, size = lookup_bounded(conn, topic, {p: [key] * 80}, 2**31 - 1)
        self.assertEqual(top, 0)
        self.assertEqual(sum(not r[2] for r in res[p][1]), 64)
        self.assertLessEqual(size, 65 * MIB + 64 * 1024)
        top, msg, _, _ = lookup_bounded(conn, topic, {p: [key]}, -1)
        self.assertEqual(top, INVALID_REQUEST, msg)
        # The client library (through the CLI) re-requests truncated keys: 200 x a 100 KiB row
        # is more than the broker's 16 MiB default, and every key comes back found.
        mid_key, mid = b"mid", b"0123456789abcdef" * 6400
        self.put(conn, topic, mid_key, mid)
        cmd = [CLI, "--bootstrap-server", self.broker.bootstrap, "--output", "json", "table",
               "get", topic] + ["mid"] * 200
        out = subprocess.run(cmd, capture_output=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr[-2000:])
        rows = json.loads(out.stdout)["rows"]
        self.assertEqual(len(rows), 200)
        self.assertTrue(all(r["found"] and r["value"] == mid.decode() for r in rows))
        self.assertBrokerAlive()

    def test_answers_shrink_while_unread_responses_reach_the_broker_bound(self):
        """queued.max.response.bytes: while answers nobody reads hold that much memory, Lookup
        (and PrefixLookup, Scan, ReadChangelog) answers shrink to one row, the rest marked for
        the client to ask again; once the memory is given back they are whole again."""
        from test_metrics import Scrape
        import socket
        b = itutil.harness.BrokerProcess(overrides={
            "queued.max.response.bytes": str(4 * MIB), "metrics.listener": "127.0.0.1:0"}).start()
        try:
            topic = unique_topic("pkpress")
            itutil.ck_create_topic(b.bootstrap, topic, P, {
                "table.type": "primary-key", "max.message.bytes": str(4 * MIB)})
            conn = RawConn(b.port, timeout=30)
            self.addCleanup(conn.close)
            key, big = b"big", os.urandom(MIB)
            p = murmur2_partition(key, P)
            err, _, _, msg = produce_v8(conn, topic, p, [(key, big, [])])
            self.assertEqual(err, 0, msg)
            self.assertEqual(sum(not r[2] for r in lookup_bounded(
                conn, topic, {p: [key] * 4}, 8 * MIB)[2][p][1]), 4)
            # A client with a tiny receive window asks for 8 rows and reads nothing.
            hog = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            hog.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            hog.connect(("127.0.0.1", b.port))
            self.addCleanup(hog.close)
            body = pb_len(1, pb_len(1, topic.encode()) +
                          pb_len(2, pb_int(1, p) + b"".join(pb_len(2, key) for _ in range(8))))
            hog.sendall(itutil.request_frame(API_LOOKUP, 0, 1, body + pb_int(2, 8 * MIB),
                                             flexible=True))
            itutil.harness.wait_until(
                lambda: Scrape(b).get("strata_connections_queued_response_memory_bytes") >= 4 * MIB,
                10, what="the unread answer held in memory")
            top, msg, res, _ = lookup_bounded(conn, topic, {p: [key] * 4}, 8 * MIB)
            self.assertEqual((top, res[p][0]), (0, 0), msg)
            self.assertEqual(res[p][1], [(True, big, False)] + [(False, b"", True)] * 3)
            hog.close()
            itutil.harness.wait_until(
                lambda: Scrape(b).get("strata_connections_queued_response_memory_bytes") == 0,
                10, what="the unread answer given back")
            top, msg, res, _ = lookup_bounded(conn, topic, {p: [key] * 4}, 8 * MIB)
            self.assertEqual(res[p][1], [(True, big, False)] * 4)
            self.assertTrue(b.alive())
        finally:
            b.stop()
            b.cleanup()

    def test_lookup_of_100k_keys_is_bounded(self):
        topic = self.big_table("pk100k")
        conn = self.conn()
        key, big = b"big", os.urandom(MIB)
        p = murmur2_partition(key, P)
        self.put(conn, topic, key, big)
        # 100,000 keys naming a 1 MiB row: a bounded answer (the 16 MiB default + one row).
        top, msg, res, size = lookup_bounded(conn, topic, {p: [key] * 100000})
        self.assertEqual(top, 0, msg)
        rows = res[p][1]
        self.assertEqual(len(rows), 100000)
        self.assertEqual(sum(not r[2] for r in rows), 16)
        self.assertLessEqual(size, 17 * MIB + 4 * MIB)
        # One key more is a clear error, and the connection and the broker keep serving.
        top, msg, _, _ = lookup_bounded(conn, topic, {p: [b"k%d" % i for i in range(100001)]})
        self.assertEqual(top, INVALID_REQUEST)
        self.assertIn("100000", msg)
        top, _, res, _ = lookup_bounded(conn, topic, {p: [key]})
        self.assertEqual((top, res[p][1]), (0, [(True, big, False)]))
        self.assertBrokerAlive()

    def test_prefix_lookup_pages_by_max_bytes(self):
        topic = self.big_table("pkpfx")
        conn = self.conn()
        p = 1
        rows = {k: os.urandom(100 * 1024) for k in keys_of_partition(b"pfx-", p, 20)}
        for k, v in rows.items():
            self.put(conn, topic, k, v)
        for k in keys_of_partition(b"pfy-", p, 2):  # outside the prefix
            self.put(conn, topic, k, b"y")

        def pages(max_bytes, limit=1000):
            seen, cursor, n = [], None, 0
            while True:
                err, page, cursor, size = prefix_lookup_bounded(conn, topic, p, b"pfx-", limit,
                                                                cursor, max_bytes)
                self.assertEqual(err, 0)
                self.assertGreaterEqual(len(page), 1, "every page serves at least one row")
                self.assertLessEqual(size, max(max_bytes, 0) + 101 * 1024 + 4096)
                seen.extend(page)
                n += 1
                if cursor is None:
                    break
                self.assertEqual(cursor, page[-1][0])
                self.assertLess(n, 100, "no progress")
            self.assertEqual([k for k, _ in seen], sorted(rows), "each row once, in key order")
            self.assertEqual(dict(seen), rows)
            return n

        # A 250 KiB budget ends each page after the row that reaches it: 3 rows a page.
        self.assertEqual(pages(250 * 1024), 7)
        self.assertEqual(pages(1), 20)  # at least one row, however small the budget
        self.assertEqual(pages(250 * 1024, limit=2), 10)  # the limit still applies
        err, page, cursor, _ = prefix_lookup_bounded(conn, topic, p, b"pfx-", 1000)
        self.assertEqual((err, len(page), cursor), (0, 20, None))  # 2 MiB < the 16 MiB default
        err, _, _, _ = prefix_lookup_bounded(conn, topic, p, b"pfx-", 10, None, -1)
        self.assertEqual(err, INVALID_REQUEST)
        self.assertBrokerAlive()

    def test_row_over_max_message_bytes_once_decompressed_is_refused(self):
        topic = self.big_table("pkbomb", max_message_bytes=MIB)
        conn = self.conn()
        p = 2
        small, bomb = keys_of_partition(b"bomb-", p, 2)

        def produce(records, codec):
            batch = itutil.build_batch(records, compression=codec)
            self.assertLess(len(batch), 64 * 1024, "compressed far below max.message.bytes")
            r = conn.request(0, 8, itutil.produce_body({topic: {p: batch}}, acks=1))
            out = None
            for _ in range(r.i32()):
                r.str16()
                for _ in range(r.i32()):
                    idx, err, base = r.i32(), r.i16(), r.i64()
                    r.i64()
                    r.i64()
                    rec_errs = r.array(lambda: (r.i32(), r.str16()))
                    out = (err, rec_errs, r.str16())
            return out

        def high_watermark():
            return read_changelog(conn, topic, [(p, 0, 1)])[1][p]["high_watermark"]

        hw = high_watermark()
        for codec in ("gzip", "lz4"):
            # A 2 MiB value (and separately a 2 MiB key) compresses to a few KiB: the batch passes
            # the size check, the record must not. The whole batch is refused, nothing appended.
            for records, index in (([(small, b"s", []), (bomb, b"z" * (2 * MIB), [])], 1),
                                   ([(b"k" * (2 * MIB), b"v", [])], 0)):
                err, rec_errs, msg = produce(records, codec)
                self.assertEqual(err, MESSAGE_TOO_LARGE, (codec, msg))
                self.assertEqual([i for i, _ in rec_errs], [index], rec_errs)
                self.assertIn("max.message.bytes", rec_errs[0][1])
                self.assertEqual(high_watermark(), hw, "nothing was appended")
            _, res = lookup(conn, topic, {p: [small, bomb]})
            self.assertEqual(res[p][2], [None, None])
        # A compressible row under the cap is still accepted.
        err, rec_errs, msg = produce([(bomb, b"z" * (900 * 1024), [])], "gzip")
        self.assertEqual((err, rec_errs), (0, []), msg)
        _, res = lookup(conn, topic, {p: [bomb]})
        self.assertEqual(res[p][2][0][0], b"z" * (900 * 1024))
        self.assertBrokerAlive()


    # (e)
    def test_bad_input(self):
        topic = self.pk_topic("pkbad")
        model = Model()
        w = Writer(self.broker.port, topic, model)
        self.addCleanup(w.close)
        for i in range(40):
            w.put(b"b-%02d" % i, b"x")
        conn = self.conn()
        # Scan
        self.assertEqual(scan(conn, topic, 99, 10)[0], UNKNOWN_TOPIC_OR_PARTITION)
        self.assertEqual(scan(conn, topic, -1, 10)[0], UNKNOWN_TOPIC_OR_PARTITION)
        self.assertEqual(scan(conn, "no-such-topic", 0, 10)[0], UNKNOWN_TOPIC_OR_PARTITION)
        self.assertEqual(scan(conn, topic, 0, 0)[0], INVALID_REQUEST)
        self.assertEqual(scan(conn, topic, 0, 10001)[0], INVALID_REQUEST)
        self.assertEqual(scan(conn, topic, 0, 2**31 - 1)[0], INVALID_REQUEST)
        self.assertEqual(scan(conn, self.log_topic, 0, 10)[0], INVALID_REQUEST)
        r = conn.request(API_SCAN, 0, b"\x0a\x50abc", flexible=True)
        self.assertEqual(one(pb_parse(r.data[r.pos:]), 1), INVALID_REQUEST)
        self.assertEqual(scan(conn, topic, 0, 10, cursor=b"\x01")[0], INVALID_REQUEST)
        p = max(range(P), key=lambda q: sum(murmur2_partition(k, P) == q for k in model.rows))
        err, _, rows, cursor, _ = scan(conn, topic, p, 1)
        self.assertEqual(err, 0)
        self.assertIsNotNone(cursor)
        other = (p + 1) % P
        self.assertEqual(scan(conn, topic, other, 1, cursor)[0], INVALID_REQUEST)
        forged = cursor[:1] + struct.pack(">Q", struct.unpack(">Q", cursor[1:9])[0] ^ 0x5A5A) + \
            cursor[9:]  # the first half of the 16-byte session id changed
        self.assertEqual(scan(conn, topic, p, 1, forged)[0], FETCH_SESSION_ID_NOT_FOUND)
        self.assertEqual(scan(conn, topic, p, 1, cursor)[0], 0)  # still alive
        other_topic = self.pk_topic("pkbad2")
        self.assertEqual(scan(conn, other_topic, p, 1, cursor)[0], INVALID_REQUEST)
        time.sleep(2.6)  # pk.scan.session.timeout.ms = 1500 (+ the 1 s sweep)
        err, _, rows, nc, msg = scan(conn, topic, p, 1, cursor)
        self.assertEqual(err, FETCH_SESSION_ID_NOT_FOUND, msg)
        self.assertEqual(rows, [])
        self.assertIsNone(nc)
        # ReadChangelog
        hw = read_changelog(conn, topic, [(p, 0, 1)])[1][p]["high_watermark"]
        self.assertGreater(hw, 0)
        err, res = read_changelog(conn, topic, [(99, 0, 10), (p, hw + 1, 10), (p, -1, 10),
                                                (p, 0, 0), (p, 0, 10001), (p, 0, 10, -5),
                                                (p, hw, 10)])
        self.assertEqual(err, 0)
        # results are keyed by partition: check them in order instead
        body = pb_len(1, topic.encode())
        specs = [(99, 0, 10, 0), (p, hw + 1, 10, 0), (p, -1, 10, 0), (p, 0, 0, 0),
                 (p, 0, 10001, 0), (p, 0, 10, -5), (p, hw, 10, 0)]
        for q, f, m, b in specs:
            body += pb_len(2, pb_int(1, q) + pb_int(2, f) + pb_int(3, m) + pb_int(4, b))
        resp = read_changelog_raw(conn, body)
        self.assertEqual(one(resp, 1), 0)
        codes = [one(pb_parse(pc), 2) for pc in resp.get(4, [])]
        self.assertEqual(codes, [UNKNOWN_TOPIC_OR_PARTITION, OFFSET_OUT_OF_RANGE,
                                 OFFSET_OUT_OF_RANGE, INVALID_REQUEST, INVALID_REQUEST,
                                 INVALID_REQUEST, 0])
        self.assertEqual(read_changelog(conn, topic, [(p, 0, 1)], max_wait_ms=30001)[0],
                         INVALID_REQUEST)
        self.assertEqual(read_changelog(conn, topic, [(p, 0, 1)], max_wait_ms=-1)[0],
                         INVALID_REQUEST)
        self.assertEqual(read_changelog(conn, self.log_topic, [(0, 0, 1)])[0], INVALID_REQUEST)
        err, res = read_changelog(conn, "no-such-topic", [(0, 0, 1)])
        self.assertEqual(err, 0)
        self.assertEqual(res[0]["error"], UNKNOWN_TOPIC_OR_PARTITION)
        resp = read_changelog_raw(conn, b"\x12\x7f")
        self.assertEqual(one(resp, 1), INVALID_REQUEST)
        # The broker is still serving.
        self.assertEqual(scan_all(conn, topic, p)[1][0][1], b"x")
        self.assertBrokerAlive()


class PkRequestBoundsTest(BrokerTestCase):
    """Its own broker, so that its peak RSS measures only the request below."""

    def test_huge_lookup_request_is_refused_before_it_is_decoded(self):
        topic = unique_topic("pkhuge")
        itutil.ck_create_topic(self.broker.bootstrap, topic, P, {"table.type": "primary-key"})
        conn = RawConn(self.broker.port, timeout=60)
        self.addCleanup(conn.close)
        key = b"k1"
        p = murmur2_partition(key, P)
        err, _, _, msg = produce_v8(conn, topic, p, [(key, b"v", [])])
        self.assertEqual(err, 0, msg)
        lookup_bounded(conn, topic, {p: [key]})
        # Lookups of 2-byte keys: 24 MiB (6M keys) is within the 32 MiB body bound but over the
        # 100,000 keys, 64 MiB (16M keys) over the body bound; decoded, either would be GiBs of
        # strings. (Peak RSS: the second is measured above the first's peak.)
        for mib, expect in ((24, "at most 100000 keys"), (64, "at most 33554432 bytes")):
            before = peak_rss_kib(self.broker.proc.pid)
            part = pb_int(1, p) + b"\x12\x02ab" * (mib * MIB // 4)
            body = pb_len(1, pb_len(1, topic.encode()) + pb_len(2, part))
            del part
            r = conn.request(API_LOOKUP, 0, body, flexible=True)
            del body
            resp = pb_parse(r.data[r.pos:])
            self.assertEqual(one(resp, 1), INVALID_REQUEST)
            self.assertIn(expect, one(resp, 2, b"").decode())
            grew_mib = (peak_rss_kib(self.broker.proc.pid) - before) / 1024
            print("\npeak RSS grew by %.0f MiB for a %d MiB Lookup request" % (grew_mib, mib))
            self.assertLess(grew_mib, 4 * mib, "the request was refused before it was decoded")
        # One key over the byte bound is refused as well.
        top, msg, _, _ = lookup_bounded(conn, topic, {p: [b"x" * (33 * MIB)]})
        self.assertEqual(top, INVALID_REQUEST, msg)
        # The same connection keeps serving.
        top, _, res, _ = lookup_bounded(conn, topic, {p: [key]})
        self.assertEqual((top, res[p][1]), (0, [(True, b"v", False)]))
        self.assertBrokerAlive()


if __name__ == "__main__":
    unittest.main(verbosity=2)
