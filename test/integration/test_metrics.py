"""Prometheus metrics (issue 6): the /metrics endpoint on metrics.listener.

Scrapes before and after known traffic — raw Produce of a batch of known size, raw Fetch, a PK
Lookup of K keys, a group commit — and checks that counters and gauges move by exactly the expected
amounts. Every scrape is parsed by a strict parser of the Prometheus text exposition format
(HELP/TYPE lines, contiguous families, label syntax and escapes, histogram bucket invariants, no
duplicate series). A broker with metrics.listener empty opens no metrics port; a bad value stops
the broker at start-up.
"""
import math
import os
import re
import struct
import sys
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import itutil  # noqa: E402
from itutil import BrokerTestCase, RawConn, unique_topic  # noqa: E402
from test_pk_tables import lookup  # noqa: E402

METRICS_RE = re.compile(r"metrics listening on http://([0-9.]+):(\d+)/metrics")
NAME_RE = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*$")
LABEL_NAME_RE = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
TYPES = ("counter", "gauge", "histogram", "summary", "untyped")


# ------------------------------------------------------------ strict exposition-format parser


def _parse_float(s):
    if s in ("+Inf", "Inf"):
        return math.inf
    if s == "-Inf":
        return -math.inf
    if s.lower() == "nan":
        return math.nan
    if not re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", s):
        raise ValueError("bad sample value %r" % s)
    return float(s)


def _parse_labels(text, pos, line):
    """text[pos] == '{'; returns (dict, position after '}')."""
    labels = {}
    pos += 1
    while True:
        if text[pos] == "}":
            return labels, pos + 1
        m = LABEL_NAME_RE.match(text, pos)
        if not m:
            raise ValueError("bad label name in %r" % line)
        name = m.group(0)
        pos = m.end()
        if text[pos:pos + 2] != '="':
            raise ValueError("expected =\" after label %s in %r" % (name, line))
        pos += 2
        value = []
        while True:
            c = text[pos]
            if c == "\\":
                esc = text[pos + 1]
                if esc not in ('\\', '"', 'n'):
                    raise ValueError("bad escape \\%s in %r" % (esc, line))
                value.append("\n" if esc == "n" else esc)
                pos += 2
            elif c == '"':
                pos += 1
                break
            elif c == "\n":
                raise ValueError("newline inside label value in %r" % line)
            else:
                value.append(c)
                pos += 1
        if name in labels:
            raise ValueError("duplicate label %s in %r" % (name, line))
        labels[name] = "".join(value)
        if text[pos] == ",":
            pos += 1
        elif text[pos] != "}":
            raise ValueError("expected , or } in %r" % line)


def _family_of(sample_name, types):
    if sample_name in types:
        return sample_name
    for suffix, kinds in (("_bucket", ("histogram",)), ("_sum", ("histogram", "summary")),
                          ("_count", ("histogram", "summary"))):
        if sample_name.endswith(suffix):
            base = sample_name[:-len(suffix)]
            if types.get(base) in kinds:
                return base
    return None


def parse_exposition(text):
    """-> (types {family: type}, samples {(name, frozenset(labels.items())): value}).
    Raises ValueError on anything the text format does not allow."""
    if text and not text.endswith("\n"):
        raise ValueError("exposition does not end with a newline")
    types, helps, samples = {}, {}, {}
    finished = set()  # families whose block has ended (samples must be contiguous)
    current = None
    for line in text.split("\n")[:-1]:
        if line == "":
            continue
        if line.startswith("#"):
            parts = line.split(" ", 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                name = parts[2]
                if not NAME_RE.match(name):
                    raise ValueError("bad metric name in %r" % line)
                if parts[1] == "TYPE":
                    if len(parts) != 4 or parts[3] not in TYPES:
                        raise ValueError("bad TYPE line %r" % line)
                    if name in types:
                        raise ValueError("second TYPE for %s" % name)
                    if any(k[0] == name for k in samples):
                        raise ValueError("TYPE of %s after its samples" % name)
                    types[name] = parts[3]
                else:
                    if name in helps:
                        raise ValueError("second HELP for %s" % name)
                    helps[name] = parts[3] if len(parts) == 4 else ""
                if current != name:
                    if current is not None:
                        finished.add(current)
                    if name in finished:
                        raise ValueError("family %s is not contiguous" % name)
                    current = name
            continue
        m = re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line)
        if not m:
            raise ValueError("bad sample line %r" % line)
        name = m.group(0)
        pos = m.end()
        labels = {}
        if pos < len(line) and line[pos] == "{":
            labels, pos = _parse_labels(line + "\n", pos, line)
        rest = line[pos:]
        if not rest.startswith(" "):
            raise ValueError("expected a space before the value in %r" % line)
        fields = rest.strip().split(" ")
        if len(fields) not in (1, 2):
            raise ValueError("bad value/timestamp in %r" % line)
        value = _parse_float(fields[0])
        if len(fields) == 2 and not re.fullmatch(r"-?\d+", fields[1]):
            raise ValueError("bad timestamp in %r" % line)
        fam = _family_of(name, types) or name
        if fam != current:
            if current is not None:
                finished.add(current)
            if fam in finished:
                raise ValueError("family %s is not contiguous" % fam)
            current = fam
        key = (name, frozenset(labels.items()))
        if key in samples:
            raise ValueError("duplicate series %r" % line)
        if types.get(fam) == "counter" and not (value >= 0):
            raise ValueError("negative counter %r" % line)
        samples[key] = value
    _check_histograms(types, samples)
    return types, samples


def _check_histograms(types, samples):
    for fam, kind in types.items():
        if kind != "histogram":
            continue
        series = {}
        for (name, labels), v in samples.items():
            if name == fam + "_bucket":
                d = dict(labels)
                le = d.pop("le")
                series.setdefault(frozenset(d.items()), []).append((_parse_float(le), v))
        for labels, buckets in series.items():
            buckets.sort()
            if buckets[-1][0] != math.inf:
                raise ValueError("%s%s has no +Inf bucket" % (fam, dict(labels)))
            counts = [c for _, c in buckets]
            if counts != sorted(counts):
                raise ValueError("%s%s buckets are not cumulative" % (fam, dict(labels)))
            if samples.get((fam + "_count", labels)) != counts[-1]:
                raise ValueError("%s%s _count != +Inf bucket" % (fam, dict(labels)))
            if (fam + "_sum", labels) not in samples:
                raise ValueError("%s%s has no _sum" % (fam, dict(labels)))


class ParserSelfTest(unittest.TestCase):
    """The parser must reject what the format forbids, or the tests below prove nothing."""

    def test_rejects(self):
        bad = [
            "x 1",  # no trailing newline
            "# TYPE x counter\nx -1\n",
            "# TYPE x counter\nx 1\nx 2\n",
            "# TYPE x gauge\nx{a=\"1\"} 1\n# TYPE y gauge\ny 1\nx{a=\"2\"} 1\n",
            "# TYPE x gauge\nx{a=1} 1\n",
            "# TYPE x gauge\nx{a=\"\\t\"} 1\n",
            "# TYPE x foo\nx 1\n",
            "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
            "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 1\n",
            "x one\n",
        ]
        for text in bad:
            with self.assertRaises(ValueError, msg=text):
                parse_exposition(text)

    def test_accepts(self):
        types, samples = parse_exposition(
            "# HELP x a \\\\ help\n# TYPE x counter\nx{a=\"q\\\"\\n\",b=\"\"} 3\n"
            "# TYPE h histogram\nh_bucket{le=\"0.5\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 0.7\n"
            "h_count 2\n# TYPE s summary\ns{quantile=\"0.5\"} Nan\ns_sum 0\ns_count 0\n")
        self.assertEqual(types, {"x": "counter", "h": "histogram", "s": "summary"})
        self.assertEqual(samples[("x", frozenset({("a", "q\"\n"), ("b", "")}))], 3)
        self.assertEqual(samples[("h_count", frozenset())], 2)


# ------------------------------------------------------------ the broker's metrics


def metrics_address(broker):
    for line in broker.log_lines:
        m = METRICS_RE.search(line)
        if m:
            return m.group(1), int(m.group(2))
    return None


class Scrape:
    def __init__(self, broker):
        host, port = metrics_address(broker)
        with urllib.request.urlopen("http://%s:%d/metrics" % (host, port), timeout=10) as r:
            self.content_type = r.headers.get("Content-Type", "")
            self.text = r.read().decode()
        self.types, self.samples = parse_exposition(self.text)

    def get(self, name, default=0.0, **labels):
        return self.samples.get((name, frozenset(labels.items())), default)

    def series(self, name):
        return {k[1]: v for k, v in self.samples.items() if k[0] == name}


class MetricsTest(BrokerTestCase):
    overrides = {"metrics.listener": "127.0.0.1:0", "group.initial.rebalance.delay.ms": "0"}

    def scrape(self):
        return Scrape(self.broker)

    def conn(self):
        c = RawConn(self.broker.port)
        self.addCleanup(c.close)
        return c

    def test_exposition_is_valid_and_complete(self):
        s = self.scrape()
        self.assertIn("text/plain", s.content_type)
        want = {
            "strata_requests_total": "counter",
            "strata_request_errors_total": "counter",
            "strata_request_duration_seconds": "histogram",
            "strata_connections_active": "gauge",
            "strata_connections_total": "counter",
            "strata_connections_queued_response_bytes": "gauge",
            "strata_connections_request_bytes": "gauge",
            "strata_connections_waiting_for_request_memory": "gauge",
            "strata_connections_kept_request_buffer_bytes": "gauge",
            "strata_topic_bytes_in_total": "counter",
            "strata_topic_records_in_total": "counter",
            "strata_topic_bytes_out_total": "counter",
            "strata_partition_log_start_offset": "gauge",
            "strata_partition_log_end_offset": "gauge",
            "strata_partition_size_bytes": "gauge",
            "strata_partition_open_files_estimate": "gauge",
            "strata_partition_open_files_budget": "gauge",
            "strata_consumer_group_lag": "gauge",
            "strata_group_coordinator_partitions": "gauge",
            "strata_pk_lookups_total": "counter",
            "strata_pk_lookup_keys_total": "counter",
            "strata_pk_lookup_duration_seconds": "histogram",
            "strata_pk_rows_applied_total": "counter",
            "strata_pk_block_cache_hit_ratio": "gauge",
            "strata_pk_block_cache_hits_total": "counter",
            "strata_pk_block_cache_misses_total": "counter",
            "strata_pk_row_cache_hits_total": "counter",
            "strata_pk_row_cache_misses_total": "counter",
            "strata_pk_row_cache_refused_fills_total": "counter",
            "strata_pk_row_cache_bytes": "gauge",
            "strata_pk_memtable_bytes": "gauge",
            "strata_pk_write_buffer_bytes": "gauge",
            "strata_pk_memtable_blooms": "gauge",
            "strata_pk_memtable_bloom_slots": "gauge",
            "strata_pk_pending_compaction_bytes": "gauge",
            "process_cpu_seconds_total": "counter",
            "process_resident_memory_bytes": "gauge",
            "process_open_fds": "gauge",
        }
        for name, kind in want.items():
            self.assertEqual(s.types.get(name), kind, name)
        for name, kind in s.types.items():
            if kind == "counter" and name.startswith("strata_"):
                self.assertTrue(name.endswith("_total"), name)
        # Every served API has a request series, named as in the handler table.
        apis = {dict(k)["api"] for k in s.series("strata_requests_total")}
        self.assertTrue({"Produce", "Fetch", "Metadata", "ApiVersions", "Lookup"} <= apis, apis)
        self.assertGreater(s.get("process_resident_memory_bytes"), 1 << 20)
        self.assertGreater(s.get("process_open_fds"), 3)
        self.assertGreater(s.get("process_cpu_seconds_total"), 0)

    def test_produce_and_fetch_move_counters_exactly(self):
        topic = unique_topic("m")
        itutil.ck_create_topic(self.broker.bootstrap, topic, 2)
        n = 7
        batch = itutil.build_batch([(b"k%d" % i, b"value-%d" % i, ()) for i in range(n)])
        conn = self.conn()
        before = self.scrape()
        res = itutil.produce(conn, 3, {topic: {1: batch}})
        self.assertEqual(res[(topic, 1)][0], 0)
        mid = self.scrape()
        self.assertEqual(mid.get("strata_topic_bytes_in_total", topic=topic), len(batch))
        self.assertEqual(mid.get("strata_topic_records_in_total", topic=topic), n)
        self.assertEqual(mid.get("strata_requests_total", api="Produce") -
                         before.get("strata_requests_total", api="Produce"), 1)
        self.assertEqual(mid.get("strata_request_duration_seconds_count", api="Produce") -
                         before.get("strata_request_duration_seconds_count", api="Produce"), 1)
        self.assertEqual(mid.get("strata_partition_log_end_offset", topic=topic, partition="1"), n)
        self.assertEqual(mid.get("strata_partition_log_end_offset", topic=topic, partition="0"), 0)
        self.assertEqual(mid.get("strata_partition_log_start_offset", topic=topic, partition="1"), 0)
        self.assertGreaterEqual(mid.get("strata_partition_size_bytes", topic=topic, partition="1"),
                                len(batch))
        self.assertEqual(mid.get("strata_partition_size_bytes", topic=topic, partition="0"), 0)

        got = itutil.fetch_v4(conn, topic, 1, 0, max_wait_ms=0)
        self.assertEqual(got["error"], 0)
        self.assertEqual(len(got["records"]), len(batch))
        after = self.scrape()
        self.assertEqual(after.get("strata_topic_bytes_out_total", topic=topic), len(batch))
        self.assertEqual(after.get("strata_requests_total", api="Fetch") -
                         mid.get("strata_requests_total", api="Fetch"), 1)
        self.assertEqual(after.get("strata_topic_bytes_in_total", topic=topic), len(batch))

    def test_request_pool_gauges(self):
        """A 200 KiB Produce body is read into a buffer the pool keeps afterwards; once handled,
        its bytes are back (no request in flight on this otherwise idle broker)."""
        topic = unique_topic("rp")
        itutil.ck_create_topic(self.broker.bootstrap, topic, 1)
        batch = itutil.build_batch([(b"k%d" % i, os.urandom(1000), ()) for i in range(200)])
        res = itutil.produce(self.conn(), 3, {topic: {0: batch}})
        self.assertEqual(res[(topic, 0)][0], 0)
        harness.wait_until(
            lambda: self.scrape().get("strata_connections_kept_request_buffer_bytes") >= len(batch),
            what="a kept request buffer")
        s = self.scrape()
        self.assertEqual(s.get("strata_connections_request_bytes"), 0)
        self.assertEqual(s.get("strata_connections_waiting_for_request_memory"), 0)
        self.assertLessEqual(s.get("strata_connections_kept_request_buffer_bytes"), 32 << 20)

    def test_errors_by_api_and_code(self):
        conn = self.conn()
        key = dict(api="Produce", error="UNKNOWN_TOPIC_OR_PARTITION", code="3")
        before = self.scrape().get("strata_request_errors_total", **key)
        batch = itutil.build_batch([(b"k", b"v", ())])
        missing = unique_topic("nope")
        res = itutil.produce(conn, 3, {missing: {0: batch, 1: batch}})
        self.assertEqual(res[(missing, 0)][0], 3)
        after = self.scrape()
        self.assertEqual(after.get("strata_request_errors_total", **key) - before, 2)
        # Nothing was counted for the topic that does not exist.
        self.assertNotIn(frozenset({("topic", missing)}), after.series("strata_topic_bytes_in_total"))

    def test_connections(self):
        before = self.scrape()
        c = RawConn(self.broker.port)
        try:
            itutil.api_versions(c)
            mid = self.scrape()
            self.assertEqual(mid.get("strata_connections_active") -
                             before.get("strata_connections_active"), 1)
            self.assertEqual(mid.get("strata_connections_total") -
                             before.get("strata_connections_total"), 1)
        finally:
            c.close()
        harness.wait_until(lambda: self.scrape().get("strata_connections_active") ==
                           before.get("strata_connections_active"), what="connection gauge drop")
        self.assertEqual(self.scrape().get("strata_connections_total") -
                         before.get("strata_connections_total"), 1)

    def test_queued_response_bytes_of_a_client_that_does_not_read(self):
        """A client pipelines Fetches of a ~2 MB partition and reads nothing: the gauge shows the
        bytes waiting for it (the kernel's socket buffers hold only part of 16 x 2 MB), bounded
        by connection.max.queued.response.bytes plus the answers already in flight; once it
        reads everything the gauge goes back to where it was."""
        topic = unique_topic("unread")
        itutil.ck_create_topic(self.broker.bootstrap, topic)
        c = RawConn(self.broker.port)
        try:
            value = b"v" * 1000
            for _ in range(20):  # 20 x 100 records x 1 KB
                batch = itutil.build_batch([(b"k", value, ()) for _ in range(100)])
                self.assertEqual(itutil.produce(c, 3, {topic: {0: batch}})[(topic, 0)][0], 0)
        finally:
            c.close()
        base = self.scrape().get("strata_connections_queued_response_bytes")
        reader = RawConn(self.broker.port)
        try:
            n = 16
            body = struct.pack(">iiiib", -1, 0, 1, 4 << 20, 0) + itutil.array32(
                [itutil.str16(topic) + itutil.array32([struct.pack(">iqi", 0, 0, 4 << 20)])])
            for corr in range(1, n + 1):
                reader.send_raw(itutil.request_frame(itutil.API_FETCH, 4, corr, body))
            harness.wait_until(
                lambda: self.scrape().get("strata_connections_queued_response_bytes") - base >
                1 << 20, what="queued response bytes of the client that does not read")
            queued = self.scrape().get("strata_connections_queued_response_bytes") - base
            self.assertLess(queued, (16 << 20) + 8 * (3 << 20), "bounded per connection")
            for corr in range(1, n + 1):  # now it reads: every answer arrives, in order
                frame = reader.recv_frame()
                self.assertEqual(struct.unpack(">i", frame[:4])[0], corr)
        finally:
            reader.close()
        # <= base: bytes another connection had queued when `base` was read may drain too.
        harness.wait_until(lambda: self.scrape().get("strata_connections_queued_response_bytes")
                           <= base, what="queued bytes drained")

    def test_pk_lookup_and_apply(self):
        topic = unique_topic("mpk")
        itutil.ck_create_topic(self.broker.bootstrap, topic, 1, {"table.type": "primary-key"})
        conn = self.conn()
        n = 5
        batch = itutil.build_batch([(b"key-%d" % i, b"row-%d" % i, ()) for i in range(n)])
        before = self.scrape()
        res = itutil.produce(conn, 3, {topic: {0: batch}})
        self.assertEqual(res[(topic, 0)][0], 0)
        mid = self.scrape()
        self.assertEqual(mid.get("strata_pk_rows_applied_total", topic=topic), n)
        self.assertEqual(mid.get("strata_pk_applied_offset", topic=topic, partition="0"), n - 1)
        self.assertGreater(mid.get("strata_pk_memtable_bytes", topic=topic, partition="0"), 0)
        self.assertIn(frozenset({("topic", topic), ("partition", "0")}),
                      mid.series("strata_pk_pending_compaction_bytes"))
        keys = [b"key-1", b"key-3", b"absent"]
        err, parts = lookup(conn, topic, {0: keys})
        self.assertEqual(err, 0)
        self.assertEqual(parts[0][0], 0)
        self.assertEqual([r is not None for r in parts[0][2]], [True, True, False])
        after = self.scrape()
        self.assertEqual(after.get("strata_pk_lookups_total", topic=topic), 1)
        self.assertEqual(after.get("strata_pk_lookup_keys_total", topic=topic), len(keys))
        self.assertEqual(after.get("strata_pk_lookup_duration_seconds_count") -
                         before.get("strata_pk_lookup_duration_seconds_count"), 1)
        self.assertEqual(after.get("strata_requests_total", api="Lookup") -
                         before.get("strata_requests_total", api="Lookup"), 1)
        ratio = after.get("strata_pk_block_cache_hit_ratio", default=None)
        self.assertIsNotNone(ratio)
        self.assertTrue(0 <= ratio <= 1)
        # The row cache: the first lookup of each key missed (and cached the two rows found), a
        # second lookup of them hits, and a write of key-1 drops its entry (the next lookup
        # misses and answers the new row).
        def row_cache(s):
            return (s.get("strata_pk_row_cache_hits_total"),
                    s.get("strata_pk_row_cache_misses_total"))
        h0, m0 = row_cache(before)
        h1, m1 = row_cache(after)
        self.assertEqual((h1 - h0, m1 - m0), (0, 3))
        rows = lookup(conn, topic, {0: [b"key-1", b"key-3"]})[1][0][2]
        self.assertEqual([r[0] for r in rows], [b"row-1", b"row-3"])
        h2, m2 = row_cache(self.scrape())
        self.assertEqual((h2 - h1, m2 - m1), (2, 0))
        res = itutil.produce(conn, 3, {topic: {0: itutil.build_batch([(b"key-1", b"new", ())])}})
        self.assertEqual(res[(topic, 0)][0], 0)
        self.assertEqual(lookup(conn, topic, {0: [b"key-1"]})[1][0][2][0][0], b"new")
        h3, m3 = row_cache(self.scrape())
        self.assertEqual((h3 - h2, m3 - m2), (0, 1))
        self.assertGreater(self.scrape().get("strata_pk_row_cache_bytes"), 0)
        # A log topic is not a PK table: the error is counted under Lookup.
        log_topic = unique_topic("mlog")
        itutil.ck_create_topic(self.broker.bootstrap, log_topic, 1)
        key = dict(api="Lookup", error="INVALID_REQUEST", code="42")
        b0 = after.get("strata_request_errors_total", **key)
        lookup(conn, log_topic, {0: [b"x"]})
        self.assertEqual(self.scrape().get("strata_request_errors_total", **key) - b0, 1)

    def test_group_lag_is_log_end_minus_committed(self):
        from confluent_kafka import TopicPartition
        topic = unique_topic("mlag")
        group = unique_topic("g")
        itutil.ck_create_topic(self.broker.bootstrap, topic, 2)
        conn = self.conn()
        itutil.produce(conn, 3, {topic: {0: itutil.build_batch([(None, b"v%d" % i, ())
                                                                for i in range(10)])}})
        itutil.produce(conn, 3, {topic: {1: itutil.build_batch([(None, b"w%d" % i, ())
                                                                for i in range(3)])}})
        c = itutil.ck_consumer(self.broker.bootstrap, **{"group.id": group})
        try:
            c.commit(offsets=[TopicPartition(topic, 0, 4), TopicPartition(topic, 1, 3)],
                     asynchronous=False)
        finally:
            c.close()
        s = self.scrape()
        self.assertEqual(s.get("strata_consumer_group_lag", group=group, topic=topic,
                               partition="0", default=None), 10 - 4)
        self.assertEqual(s.get("strata_consumer_group_lag", group=group, topic=topic,
                               partition="1", default=None), 0)
        self.assertEqual(s.get("strata_consumer_group_committed_offset", group=group, topic=topic,
                               partition="0", default=None), 4)
        # A single node coordinates every __consumer_offsets partition, loaded before it serves.
        self.assertEqual(s.get("strata_group_coordinator_partitions", state="loaded"), 50)
        self.assertEqual(s.get("strata_group_coordinator_partitions", state="loading"), 0)
        # More records raise the lag without any new commit.
        itutil.produce(conn, 3, {topic: {0: itutil.build_batch([(None, b"x", ())])}})
        self.assertEqual(self.scrape().get("strata_consumer_group_lag", group=group, topic=topic,
                                           partition="0"), 11 - 4)

    def test_deleted_topic_series_go_away(self):
        topic = unique_topic("mdel")
        itutil.ck_create_topic(self.broker.bootstrap, topic, 1)
        # A topic has its counter series (at 0) from its creation; PK series only for PK tables.
        first = self.scrape()
        self.assertEqual(first.get("strata_topic_records_in_total", topic=topic, default=None), 0)
        self.assertIsNone(first.get("strata_pk_lookups_total", topic=topic, default=None))
        conn = self.conn()
        itutil.produce(conn, 3, {topic: {0: itutil.build_batch([(b"k", b"v", ())])}})
        self.assertEqual(self.scrape().get("strata_topic_records_in_total", topic=topic), 1)
        admin = itutil.ck_admin(self.broker.bootstrap)
        admin.delete_topics([topic], request_timeout=15)[topic].result(15)
        s = self.scrape()
        self.assertIsNone(s.get("strata_topic_records_in_total", topic=topic, default=None))
        self.assertIsNone(s.get("strata_partition_log_end_offset", topic=topic, partition="0",
                                default=None))


class MetricsConfigTest(unittest.TestCase):
    def test_idle_pk_partitions_give_back_write_buffer_and_bloom(self):
        # Its own broker: a short pk.memtable.idle.flush.ms would race the other tests' scrapes.
        b = harness.BrokerProcess(overrides={"metrics.listener": "127.0.0.1:0",
                                             "pk.memtable.idle.flush.ms": "8000"})
        try:
            b.start()
            topic = unique_topic("mbloom")
            itutil.ck_create_topic(b.bootstrap, topic, 1, {"table.type": "primary-key"})
            s = Scrape(b)
            self.assertEqual(s.get("strata_pk_memtable_bloom_slots"), 12)  # 64 MiB / 8 / 671 KiB
            self.assertEqual(s.get("strata_pk_memtable_blooms"), 0)
            with RawConn(b.port) as c:
                value = b"v" * 1000
                for n in range(12):  # ~1.2 MiB: the partition takes a memtable bloom filter
                    batch = itutil.build_batch([(b"key-%d-%d" % (n, i), value, ())
                                                for i in range(100)])
                    self.assertEqual(itutil.produce(c, 3, {topic: {0: batch}})[(topic, 0)][0], 0)
                # Taken at the next upkeep tick (every 250 ms), off the write path.
                deadline = time.monotonic() + 6
                while time.monotonic() < deadline:
                    s = Scrape(b)
                    if s.get("strata_pk_memtable_blooms") == 1:
                        break
                    time.sleep(0.1)
                self.assertEqual(s.get("strata_pk_memtable_blooms"), 1)
                # Idle: the memtable is flushed and the filter given back.
                deadline = time.monotonic() + 40
                while time.monotonic() < deadline:
                    s = Scrape(b)
                    if (s.get("strata_pk_memtable_blooms") == 0 and
                            s.get("strata_pk_write_buffer_bytes") < 256 << 10):
                        break
                    time.sleep(0.2)
                self.assertEqual(s.get("strata_pk_memtable_blooms"), 0)
                self.assertLess(s.get("strata_pk_write_buffer_bytes"), 256 << 10)
                rows = lookup(c, topic, {0: [b"key-0-0", b"key-11-99"]})[1][0][2]
                self.assertEqual([r[0] for r in rows], [value, value])
        finally:
            b.stop()
            b.cleanup()

    def test_disabled_listener_opens_no_port(self):
        # (The Schema Registry's listener is off too: only the Kafka listener may remain.)
        b = harness.BrokerProcess(overrides={"metrics.listener": "", "schema.registry.listener": ""})
        try:
            b.start()
            with RawConn(b.port) as c:  # the broker serves
                self.assertEqual(itutil.api_versions(c)[0], 0)
            self.assertIsNone(metrics_address(b))
            self.assertFalse(any("metrics" in line and "listening" in line for line in b.log_lines))
            # No listening socket besides the Kafka listener.
            self.assertEqual(listening_ports(b.proc.pid), {b.port})
        finally:
            b.stop()
            b.cleanup()

    def test_bad_listener_value_stops_the_broker(self):
        b = harness.BrokerProcess(overrides={"metrics.listener": "localhost"})
        try:
            with self.assertRaises(RuntimeError):
                b.start(timeout=10)
            self.assertTrue(any("metrics.listener" in line for line in b.log_lines), b.log_lines)
        finally:
            b.cleanup()


def listening_ports(pid):
    """TCP ports in LISTEN state owned by process `pid` (from /proc, no extra tools)."""
    inodes = set()
    fd_dir = "/proc/%d/fd" % pid
    for fd in os.listdir(fd_dir):
        try:
            target = os.readlink(os.path.join(fd_dir, fd))
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    cols = line.split()
                    if cols[3] == "0A" and cols[9] in inodes:  # 0A = LISTEN
                        ports.add(int(cols[1].rsplit(":", 1)[1], 16))
        except FileNotFoundError:
            pass
    return ports


if __name__ == "__main__":
    unittest.main()
