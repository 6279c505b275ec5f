"""Shared helpers for the integration tests (owned by the integration-test engineer).

- BrokerTestCase: unittest base class, one real strata-broker per test file (harness.BrokerProcess),
  prints the broker's log tail when a test fails.
- Client helpers: confluent-kafka admin/producer/consumer factories, kafka-python consumer factory,
  consume-until-count loops.
- Raw wire helpers for hand-built frames: request header v1/v2, ApiVersions, Metadata, Produce v3+,
  Fetch v4, CRC-32C, varints and a RecordBatch v2 builder.

Used from Debian's /usr/bin/python3 (kafka-python 2.0.2, confluent-kafka 1.7 / librdkafka 2.0.2).
"""
import os
import re
import socket
import struct
import sys
import time
import unittest
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

# ---------------------------------------------------------------- broker per test file


class BrokerTestCase(unittest.TestCase):
    """One broker for the whole class. Subclasses may set `overrides`."""
    overrides = {}
    broker = None

    @classmethod
    def setUpClass(cls):
        cls.broker = harness.BrokerProcess(overrides=cls.overrides)
        cls.broker.start()

    @classmethod
    def tearDownClass(cls):
        if cls.broker is not None:
            try:
                if cls.broker.alive():
                    cls.broker.stop()
            finally:
                cls.broker.cleanup()

    def run(self, result=None):
        # Print the broker log tail for failing tests (the broker's error is usually there).
        before = len(result.failures) + len(result.errors) if result is not None else 0
        out = super().run(result)
        if result is not None and len(result.failures) + len(result.errors) > before:
            b = type(self).broker
            if b is not None:
                sys.stderr.write("\n--- broker log tail for %s ---\n%s\n---\n" % (
                    self.id(), "\n".join(b.log_lines[-40:])))
        return out

    def assertBrokerAlive(self):
        self.assertTrue(self.broker.alive(), "broker process died:\n" +
                        "\n".join(self.broker.log_lines[-40:]))


def unique_topic(prefix):
    return "%s-%s" % (prefix, uuid.uuid4().hex[:10])


# ---------------------------------------------------------------- confluent-kafka helpers


REGISTRY_SERVING_RE = re.compile(r"schema registry serving (https?)://([0-9.]+):(\d+)")


def registry_url(broker):
    """The embedded Schema Registry's URL, as the broker logged it (its port is the OS's)."""
    for line in reversed(broker.log_lines):
        m = REGISTRY_SERVING_RE.search(line)
        if m:
            return "%s://%s:%s" % m.groups()
    raise AssertionError("the broker did not log its schema registry address")


def compile_proto(directory, name, text):
    """The Python module protoc generates for .proto `text` (file `name`, e.g. "risk.proto"),
    as confluent-kafka's ProtobufSerializer wants a generated message class."""
    import importlib.util
    import subprocess
    with open(os.path.join(directory, name), "w") as f:
        f.write(text)
    subprocess.run(["protoc", "--proto_path", directory, "--python_out", directory,
                    os.path.join(directory, name)], check=True, timeout=60)
    module = name[:-len(".proto")] + "_pb2"
    spec = importlib.util.spec_from_file_location(module, os.path.join(directory, module + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def ck_admin(bootstrap):
    from confluent_kafka.admin import AdminClient
    return AdminClient({"bootstrap.servers": bootstrap})


def ck_create_topic(bootstrap, topic, partitions=1, config=None, timeout=30):
    """Creates a topic through CreateTopics; raises on failure."""
    from confluent_kafka.admin import NewTopic
    admin = ck_admin(bootstrap)
    fs = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1,
                                       config=dict(config or {}))], request_timeout=timeout)
    fs[topic].result(timeout)


def ck_producer(bootstrap, **extra):
    from confluent_kafka import Producer
    conf = {"bootstrap.servers": bootstrap, "enable.idempotence": False, "acks": "all",
            "linger.ms": 5, "message.timeout.ms": 30000}
    conf.update({k.replace("_", "."): v for k, v in extra.items()})
    return Producer(conf)


def ck_consumer(bootstrap, **extra):
    from confluent_kafka import Consumer
    conf = {"bootstrap.servers": bootstrap, "group.id": "strata-it-unused",
            "enable.auto.commit": False, "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest", "enable.partition.eof": True}
    conf.update({k.replace("_", "."): v for k, v in extra.items()})
    return Consumer(conf)


def ck_produce_all(producer, items, timeout=60):
    """items: iterable of dicts with kwargs for Producer.produce. Returns delivered Messages in
    input order; raises AssertionError if any delivery fails."""
    results = []
    errors = []

    def make_cb(i):
        def cb(err, msg):
            if err is not None:
                errors.append((i, err))
            results.append((i, msg))
        return cb

    n = 0
    for i, kw in enumerate(items):
        while True:
            try:
                producer.produce(on_delivery=make_cb(i), **kw)
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
        n += 1
    remaining = producer.flush(timeout)
    if remaining:
        raise AssertionError("%d messages not delivered within %ss" % (remaining, timeout))
    if errors:
        raise AssertionError("delivery failed for %d messages, first: %r" % (len(errors), errors[0]))
    assert len(results) == n
    results.sort(key=lambda r: r[0])
    return [m for _, m in results]


def ck_consume(bootstrap, topic, partitions, expected, timeout=60, **extra):
    """Assigns the given partitions from the beginning and returns messages until `expected`
    have been read (raises on consumer errors or timeout)."""
    from confluent_kafka import TopicPartition, OFFSET_BEGINNING, KafkaError
    c = ck_consumer(bootstrap, **extra)
    try:
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        out = []
        deadline = time.time() + timeout
        while len(out) < expected:
            if time.time() > deadline:
                raise AssertionError("consumed %d of %d messages within %ss" %
                                     (len(out), expected, timeout))
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise AssertionError("consumer error: %s" % m.error())
            out.append(m)
        return out
    finally:
        c.close()


# ---------------------------------------------------------------- kafka-python helpers


def ck_consume_to_end(bootstrap, topic, timeout=60, **extra):
    """Every message of partition 0 from the beginning up to the end (partition EOF; the LSO for
    isolation_level="read_committed" in `extra`)."""
    from confluent_kafka import TopicPartition, OFFSET_BEGINNING, KafkaError
    c = ck_consumer(bootstrap, **extra)
    out = []
    try:
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        deadline = time.time() + timeout
        while time.time() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    return out
                raise AssertionError("consumer error: %s" % m.error())
            out.append(m)
        raise AssertionError("no partition EOF within %ss (%d messages)" % (timeout, len(out)))
    finally:
        c.close()


def kp_consume(bootstrap, topic, partitions, expected, timeout=60, **extra):
    """kafka-python consumer without a group: assign + seek_to_beginning. `extra`: more
    KafkaConsumer settings (security_protocol, sasl_mechanism, ...)."""
    from kafka import KafkaConsumer, TopicPartition
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                      auto_offset_reset="earliest", request_timeout_ms=30000,
                      api_version_auto_timeout_ms=10000, **extra)
    try:
        tps = [TopicPartition(topic, p) for p in partitions]
        c.assign(tps)
        c.seek_to_beginning(*tps)
        out = []
        deadline = time.time() + timeout
        while len(out) < expected:
            if time.time() > deadline:
                raise AssertionError("kafka-python consumed %d of %d within %ss" %
                                     (len(out), expected, timeout))
            batch = c.poll(timeout_ms=500)
            for tp in sorted(batch, key=lambda t: t.partition):
                out.extend(batch[tp])
        return out
    finally:
        c.close()


def kp_producer(bootstrap, **extra):
    from kafka import KafkaProducer
    conf = dict(bootstrap_servers=bootstrap, acks="all", linger_ms=5, request_timeout_ms=30000,
                api_version_auto_timeout_ms=10000)
    conf.update(extra)
    return KafkaProducer(**conf)


# ---------------------------------------------------------------- CRC-32C (Castagnoli)

_CRC32C_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC32C_TABLE.append(_c)


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    t = _CRC32C_TABLE
    for b in data:
        crc = t[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283  # standard check value

# ---------------------------------------------------------------- primitives


def zigzag(n):
    return (n << 1) ^ (n >> 63)


def uvarint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def varint(n):
    return uvarint(zigzag(n) & 0xFFFFFFFFFFFFFFFF)


def str16(s):
    if s is None:
        return struct.pack(">h", -1)
    b = s.encode() if isinstance(s, str) else s
    return struct.pack(">h", len(b)) + b


def bytes32(b):
    if b is None:
        return struct.pack(">i", -1)
    return struct.pack(">i", len(b)) + b


def compact_str(s):
    if s is None:
        return uvarint(0)
    b = s.encode() if isinstance(s, str) else s
    return uvarint(len(b) + 1) + b


def array32(items):
    return struct.pack(">i", len(items)) + b"".join(items)


def compact_array(items):
    if items is None:
        return uvarint(0)
    return uvarint(len(items) + 1) + b"".join(items)


class Reader:
    """Big-endian reader over a response body."""

    def __init__(self, data, pos=0):
        self.data = data
        self.pos = pos

    def take(self, n):
        if self.pos + n > len(self.data):
            raise ValueError("response truncated at %d (+%d of %d)" % (self.pos, n, len(self.data)))
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def i8(self):
        return struct.unpack(">b", self.take(1))[0]

    def i16(self):
        return struct.unpack(">h", self.take(2))[0]

    def i32(self):
        return struct.unpack(">i", self.take(4))[0]

    def i64(self):
        return struct.unpack(">q", self.take(8))[0]

    def uvarint(self):
        shift = 0
        result = 0
        while True:
            b = self.take(1)[0]
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7

    def str16(self):
        n = self.i16()
        return None if n < 0 else self.take(n).decode()

    def bytes32(self):
        n = self.i32()
        return None if n < 0 else self.take(n)

    def compact_str(self):
        n = self.uvarint()
        return None if n == 0 else self.take(n - 1).decode()

    def uuid(self):
        return uuid.UUID(bytes=self.take(16))

    def tagged(self):
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())

    def array(self, fn):
        n = self.i32()
        return None if n < 0 else [fn() for _ in range(n)]

    def compact_array(self, fn):
        n = self.uvarint()
        return None if n == 0 else [fn() for _ in range(n - 1)]

    def remaining(self):
        return len(self.data) - self.pos


# ---------------------------------------------------------------- record batch v2

COMPRESSION = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def encode_record(offset_delta, key, value, headers=(), timestamp_delta=0):
    body = bytearray()
    body.append(0)  # attributes
    body += varint(timestamp_delta)
    body += varint(offset_delta)
    for b in (key, value):
        if b is None:
            body += varint(-1)
        else:
            body += varint(len(b)) + b
    body += varint(len(headers))
    for hk, hv in headers:
        hk = hk.encode()
        body += varint(len(hk)) + hk
        body += varint(-1) if hv is None else varint(len(hv)) + hv
    return varint(len(body)) + bytes(body)


def build_batch(records, base_timestamp=None, compression="none", magic=2, records_blob=None,
                record_count=None, bad_crc=False, base_offset=0, attributes_extra=0):
    """records: list of (key, value, headers). records_blob overrides the encoded (and possibly
    compressed) records section verbatim. The CRC is computed over what is sent unless bad_crc."""
    if base_timestamp is None:
        base_timestamp = int(time.time() * 1000)
    if records_blob is None:
        raw = b"".join(encode_record(i, k, v, h) for i, (k, v, h) in enumerate(records))
        records_blob = compress(compression, raw)
    n = len(records) if record_count is None else record_count
    attributes = COMPRESSION[compression] | attributes_extra
    after_crc = struct.pack(">hiqqqhii", attributes, max(len(records) - 1, 0), base_timestamp,
                            base_timestamp, -1, -1, -1, n) + records_blob
    crc = crc32c(after_crc)
    if bad_crc:
        crc ^= 0xDEADBEEF
    after_len = struct.pack(">ibI", -1, magic, crc) + after_crc  # partitionLeaderEpoch, magic, crc
    return struct.pack(">qi", base_offset, len(after_len)) + after_len


def compress(codec, raw):
    if codec == "none":
        return raw
    if codec == "gzip":
        import gzip
        return gzip.compress(raw)
    if codec == "snappy":
        import snappy
        return snappy.compress(raw)
    if codec == "lz4":
        import lz4.frame
        return lz4.frame.compress(raw)
    if codec == "zstd":
        import zstandard
        return zstandard.ZstdCompressor().compress(raw)
    raise ValueError(codec)


def batch_attributes(batch_bytes):
    """Attributes (int16) of the first v2 batch in a buffer."""
    return struct.unpack_from(">h", batch_bytes, 21)[0]


def iter_batches(buf):
    """Yields (base_offset, attributes, record_count, whole_batch_bytes) for v2 batches in buf."""
    pos = 0
    while pos + 12 <= len(buf):
        base_offset, length = struct.unpack_from(">qi", buf, pos)
        end = pos + 12 + length
        if end > len(buf):
            return  # partial batch at the end of a fetch response is legal
        attributes = struct.unpack_from(">h", buf, pos + 21)[0]
        count = struct.unpack_from(">i", buf, pos + 57)[0]
        yield base_offset, attributes, count, buf[pos:end]
        pos = end


# ---------------------------------------------------------------- raw connection

API_PRODUCE, API_FETCH, API_LIST_OFFSETS, API_METADATA = 0, 1, 2, 3
API_API_VERSIONS, API_CREATE_TOPICS = 18, 19


def request_frame(api_key, version, corr, body, client_id="strata-it", flexible=False):
    hdr = struct.pack(">hhi", api_key, version, corr) + str16(client_id)
    if flexible:
        hdr += uvarint(0)
    payload = hdr + body
    return struct.pack(">i", len(payload)) + payload


class RawConn:
    client_id = "strata-it"  # the header's client id (subclasses may set up their own socket)

    def __init__(self, port, timeout=10, client_id="strata-it"):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.corr = 0
        self.client_id = client_id

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send_raw(self, data):
        self.sock.sendall(data)

    def _recv_exact(self, n):
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("connection closed by broker after %d of %d bytes" %
                                      (len(buf), n))
            buf += chunk
        return bytes(buf)

    def recv_frame(self):
        size = struct.unpack(">i", self._recv_exact(4))[0]
        return self._recv_exact(size)

    def request(self, api_key, version, body, flexible=False, flexible_response=None):
        """Sends a request and returns (correlation_id, Reader positioned at the body)."""
        self.corr += 1
        corr = self.corr
        self.send_raw(request_frame(api_key, version, corr, body, client_id=self.client_id,
                                    flexible=flexible))
        data = self.recv_frame()
        r = Reader(data)
        got = r.i32()
        if got != corr:
            raise AssertionError("correlation id %d != %d" % (got, corr))
        if flexible if flexible_response is None else flexible_response:
            r.tagged()
        return r

    def wait_closed(self, timeout=10):
        """True if the broker closes the connection (EOF or reset) within timeout, without sending
        any bytes. Returns False if it stays open; raises if the broker sends data."""
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(65536)
        except (ConnectionResetError, BrokenPipeError):
            return True
        except socket.timeout:
            return False
        if data:
            raise AssertionError("broker sent %d bytes instead of closing: %r" % (len(data), data[:64]))
        return True


def api_versions(conn, version=3):
    """Returns (error_code, {api_key: (min, max)})."""
    if version >= 3:
        body = compact_str("strata-it") + compact_str("1.0") + uvarint(0)
        r = conn.request(API_API_VERSIONS, version, body, flexible=True, flexible_response=False)
    else:
        r = conn.request(API_API_VERSIONS, version, b"")
    err = r.i16()
    if version >= 3:
        keys = r.compact_array(lambda: (r.i16(), r.i16(), r.i16(), r.tagged())[:3])
    else:
        keys = r.array(lambda: (r.i16(), r.i16(), r.i16()))
    return err, {k: (lo, hi) for k, lo, hi in keys}


def metadata_v1(conn, topics=None):
    """Metadata v1: returns {topic: (error, [partition ids])}. topics=None → all."""
    body = struct.pack(">i", -1) if topics is None else array32([str16(t) for t in topics])
    r = conn.request(API_METADATA, 1, body)
    r.array(lambda: (r.i32(), r.str16(), r.i32(), r.str16()))  # brokers
    r.i32()  # controller
    out = {}

    def part():
        err, idx, leader = r.i16(), r.i32(), r.i32()
        r.array(r.i32)
        r.array(r.i32)
        return idx

    for _ in range(r.i32()):
        err = r.i16()
        name = r.str16()
        r.i8()  # internal
        out[name] = (err, r.array(part))
    return out


def metadata_v10(conn, topics, allow_auto_create=False):
    """Metadata v10 (flexible): returns {name: dict(error, topic_id, partitions={idx: leader_epoch})}."""
    tlist = [b"\x00" * 16 + compact_str(t) + uvarint(0) for t in topics]
    body = compact_array(tlist) + struct.pack(">???", allow_auto_create, False, False) + uvarint(0)
    r = conn.request(API_METADATA, 10, body, flexible=True)
    r.i32()  # throttle
    r.compact_array(lambda: (r.i32(), r.compact_str(), r.i32(), r.compact_str(), r.tagged()))
    r.compact_str()  # cluster id
    r.i32()  # controller
    out = {}
    for _ in range(r.uvarint() - 1):
        err = r.i16()
        name = r.compact_str()
        tid = r.uuid()
        r.i8()
        parts = {}
        for _ in range(r.uvarint() - 1):
            perr, idx, leader, epoch = r.i16(), r.i32(), r.i32(), r.i32()
            for _ in range(3):
                r.compact_array(r.i32)
            r.tagged()
            parts[idx] = epoch
        r.i32()  # authorized ops
        r.tagged()
        out[name] = dict(error=err, topic_id=tid, partitions=parts)
    return out


def produce_body(topic_parts, acks=1, timeout_ms=10000):
    """Produce v3-v8 (non-flexible) body. topic_parts: {topic: {partition: records_bytes}}."""
    topics = []
    for t, parts in topic_parts.items():
        ps = [struct.pack(">i", p) + bytes32(rec) for p, rec in parts.items()]
        topics.append(str16(t) + array32(ps))
    return str16(None) + struct.pack(">hi", acks, timeout_ms) + array32(topics)


def produce(conn, version, topic_parts, acks=1, timeout_ms=10000):
    """Sends a Produce v3..v8 request; returns {(topic, partition): (error, base_offset)}."""
    r = conn.request(API_PRODUCE, version, produce_body(topic_parts, acks, timeout_ms))
    out = {}
    for _ in range(r.i32()):
        name = r.str16()
        for _ in range(r.i32()):
            idx, err, base = r.i32(), r.i16(), r.i64()
            if version >= 2:
                r.i64()  # log append time
            if version >= 5:
                r.i64()  # log start offset
            if version >= 8:
                r.array(lambda: (r.i32(), r.str16()))
                r.str16()
            out[(name, idx)] = (err, base)
    return out


def fetch_v4(conn, topic, partition, offset, max_wait_ms, min_bytes=1, max_bytes=1 << 20):
    """Fetch v4; returns dict(error, high_watermark, last_stable_offset, records)."""
    body = struct.pack(">iiiib", -1, max_wait_ms, min_bytes, max_bytes, 0)
    body += array32([str16(topic) + array32([struct.pack(">iqi", partition, offset, max_bytes)])])
    r = conn.request(API_FETCH, 4, body)
    r.i32()  # throttle
    result = None
    for _ in range(r.i32()):
        r.str16()
        for _ in range(r.i32()):
            idx, err, hw, lso = r.i32(), r.i16(), r.i64(), r.i64()
            r.array(lambda: (r.i64(), r.i64()))
            records = r.bytes32()
            if idx == partition:
                result = dict(error=err, high_watermark=hw, last_stable_offset=lso,
                              records=records or b"")
    return result


def segment_files(data_dir, topic, partition):
    d = os.path.join(data_dir, "logs", "%s-%d" % (topic, partition))
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".log"))


def assert_same_list(test, got, want, what):
    """assertEqual for long lists without difflib's quadratic diff: reports lengths and the first
    differing positions."""
    if got == want:
        return
    diffs = [i for i in range(min(len(got), len(want))) if got[i] != want[i]]
    lines = ["%s: %d items, expected %d; %d differ" % (what, len(got), len(want), len(diffs))]
    for i in diffs[:5]:
        lines.append("  [%d] got %r\n       want %r" % (i, got[i], want[i]))
    if len(got) != len(want):
        lines.append("  extra got: %r" % (got[len(want):len(want) + 3],))
        lines.append("  missing:   %r" % (want[len(got):len(got) + 3],))
    test.fail("\n".join(lines))
