"""Client quotas (KIP-13/124/219, KIP-546) on the wire: AlterClientQuotas (49) and
DescribeClientQuotas (48) v0 and v1 frames built by hand from the message definitions (no Debian
client speaks them), Kafka's validation, match types and the strict flag, validate_only; a
confluent_kafka producer with a low producer_byte_rate is throttled (throttle_time_ms seen in its
statistics, its rate bounded near the quota) without being disconnected while another client id
runs free; a throttled connection is muted (its next request waits out the throttle); a Fetch over
consumer_byte_rate is answered empty with a throttle; quotas survive a restart; `strata quota`
end to end."""
import json
import os
import struct
import subprocess
import time
import unittest

import itutil
from itutil import (BrokerTestCase, RawConn, Reader, array32, build_batch, compact_array,
                    compact_str, request_frame, str16, uvarint, unique_topic)

API_DESCRIBE_CLIENT_QUOTAS, API_ALTER_CLIENT_QUOTAS = 48, 49
EXACT, DEFAULT, ANY = 0, 1, 2
INVALID_REQUEST, UNSUPPORTED_VERSION = 42, 35
TAGS = uvarint(0)
CLI = os.environ.get("STRATA_CLI")


class ClientConn(RawConn):
    """RawConn whose requests carry a chosen client id."""

    def __init__(self, port, client_id, timeout=20):
        super().__init__(port, timeout, client_id=client_id)


def alter(conn, version, entries, validate_only=False):
    """entries: [([(type, name)], [(key, value, remove)])] → [(error, message, [(type, name)])]."""
    if version == 0:
        body = array32([array32([str16(t) + str16(n) for t, n in entity]) +
                        array32([str16(k) + struct.pack(">d?", v, rm) for k, v, rm in ops])
                        for entity, ops in entries]) + struct.pack(">?", validate_only)
        r = conn.request(API_ALTER_CLIENT_QUOTAS, 0, body)
        assert r.i32() >= 0
        return r.array(lambda: (r.i16(), r.str16(), r.array(lambda: (r.str16(), r.str16()))))
    body = compact_array([
        compact_array([compact_str(t) + compact_str(n) + TAGS for t, n in entity]) +
        compact_array([compact_str(k) + struct.pack(">d?", v, rm) + TAGS for k, v, rm in ops]) +
        TAGS for entity, ops in entries]) + struct.pack(">?", validate_only) + TAGS
    r = conn.request(API_ALTER_CLIENT_QUOTAS, 1, body, flexible=True)
    assert r.i32() >= 0

    def entry():
        err, msg = r.i16(), r.compact_str()
        ent = r.compact_array(lambda: (r.compact_str(), r.compact_str(), r.tagged())[:2])
        r.tagged()
        return err, msg, ent

    return r.compact_array(entry)


def describe(conn, version, components, strict=False):
    """components: [(type, match_type, match)] → (error, message, {((type, name),...): {k: v}})."""
    if version == 0:
        body = array32([str16(t) + struct.pack(">b", mt) + str16(m) for t, mt, m in components])
        r = conn.request(API_DESCRIBE_CLIENT_QUOTAS, 0, body + struct.pack(">?", strict))
        r.i32()
        err, msg = r.i16(), r.str16()
        entries = r.array(lambda: (tuple(r.array(lambda: (r.str16(), r.str16()))),
                                   dict(r.array(lambda: (r.str16(), struct.unpack(
                                       ">d", r.take(8))[0])))))
    else:
        body = compact_array([compact_str(t) + struct.pack(">b", mt) + compact_str(m) + TAGS
                              for t, mt, m in components]) + struct.pack(">?", strict) + TAGS
        r = conn.request(API_DESCRIBE_CLIENT_QUOTAS, 1, body, flexible=True)
        r.i32()
        err, msg = r.i16(), r.compact_str()

        def entry():
            ent = tuple(r.compact_array(lambda: (r.compact_str(), r.compact_str(),
                                                 r.tagged())[:2]))
            vals = dict(r.compact_array(lambda: (r.compact_str(),
                                                 struct.unpack(">d", r.take(8))[0],
                                                 r.tagged())[:2]))
            r.tagged()
            return ent, vals

        entries = r.compact_array(entry)
    return err, msg, None if entries is None else dict(entries)


def client(name):
    return [("client-id", name)]


def produce_frame(client_id, corr, topic, payload):
    batch = build_batch([(b"k", payload, [])])
    body = str16(None) + struct.pack(">hi", 1, 10000) + array32(
        [str16(topic) + array32([struct.pack(">i", 0) + itutil.bytes32(batch)])])
    return request_frame(0, 7, corr, body, client_id=client_id)


class QuotasTest(BrokerTestCase):
    # two 1 s windows: a fresh client's allowance is one second of quota, so tests stay short
    overrides = {"quota.window.num": "2", "quota.window.size.seconds": "1"}

    def conn(self, client_id="quota-admin"):
        return ClientConn(self.broker.port, client_id)

    def test_api_versions_advertise_48_and_49(self):
        with self.conn() as c:
            err, apis = itutil.api_versions(c)
        self.assertEqual(err, 0)
        self.assertEqual(apis[API_DESCRIBE_CLIENT_QUOTAS], (0, 1))
        self.assertEqual(apis[API_ALTER_CLIENT_QUOTAS], (0, 1))

    def test_alter_and_describe_v0_v1(self):
        with self.conn() as c:
            res = alter(c, 0, [(client("it-a"), [("producer_byte_rate", 1024, False),
                                                 ("request_percentage", 12.5, False)]),
                               (client(None), [("consumer_byte_rate", 2048, False)])])
            self.assertEqual(res, [(0, None, [("client-id", "it-a")]),
                                   (0, None, [("client-id", None)])])
            res = alter(c, 1, [(client("it-b"), [("consumer_byte_rate", 4096, False)])])
            self.assertEqual(res, [(0, None, [("client-id", "it-b")])])
            for v in (0, 1):
                err, _, found = describe(c, v, [("client-id", EXACT, "it-a")])
                self.assertEqual(err, 0)
                self.assertEqual(found, {(("client-id", "it-a"),): {"producer_byte_rate": 1024,
                                                                     "request_percentage": 12.5}})
                err, _, found = describe(c, v, [("client-id", DEFAULT, None)], strict=True)
                self.assertEqual(found, {(("client-id", None),): {"consumer_byte_rate": 2048}})
                err, _, found = describe(c, v, [("client-id", ANY, None)])
                self.assertTrue({(("client-id", "it-a"),), (("client-id", "it-b"),),
                                 (("client-id", None),)} <= set(found))
                err, _, found = describe(c, v, [], strict=False)
                self.assertIn((("client-id", "it-b"),), found)
                self.assertEqual(describe(c, v, [], strict=True)[2], {})
                self.assertEqual(describe(c, v, [("user", ANY, None)])[2], {})
            # remove one key, then the last one: the entity disappears
            alter(c, 1, [(client("it-a"), [("request_percentage", 0, True)])])
            self.assertEqual(describe(c, 1, [("client-id", EXACT, "it-a")])[2],
                             {(("client-id", "it-a"),): {"producer_byte_rate": 1024}})
            alter(c, 1, [(client("it-a"), [("producer_byte_rate", 0, True)]),
                         (client(None), [("consumer_byte_rate", 0, True)])])
            self.assertEqual(describe(c, 1, [("client-id", EXACT, "it-a")])[2], {})

    def test_validation(self):
        with self.conn() as c:
            for version in (0, 1):
                res = alter(c, version, [
                    (client("v"), [("producer_bytes_rate", 10, False)]),   # unknown key
                    (client("v"), [("producer_byte_rate", -10, False)]),   # dup entity anyway
                    (client("w"), [("consumer_byte_rate", -1, False)]),    # negative
                    (client("x"), [("consumer_byte_rate", 1.5, False)]),   # not a long
                    ([("group", "g")], [("producer_byte_rate", 10, False)]),
                    ([], [("producer_byte_rate", 10, False)]),
                ])
                self.assertEqual([e for e, _, _ in res], [INVALID_REQUEST] * 6, res)
                self.assertIn("producer_bytes_rate", res[0][1])
                # validate_only: fine, and nothing stored
                res = alter(c, version, [(client("vo"), [("producer_byte_rate", 10, False)])],
                            validate_only=True)
                self.assertEqual(res[0][0], 0)
                self.assertEqual(describe(c, version, [("client-id", EXACT, "vo")])[2], {})
                err, msg, entries = describe(c, version, [("client-id", 7, None)])
                self.assertEqual((err, entries), (INVALID_REQUEST, None))
                err, msg, entries = describe(c, version, [("client-id", EXACT, None)])
                self.assertEqual(err, INVALID_REQUEST)
                err, msg, entries = describe(c, version, [("group", ANY, None)])
                self.assertEqual(err, UNSUPPORTED_VERSION)
                self.assertIn("group", msg)

    def test_throttled_connection_is_muted_not_closed(self):
        topic = unique_topic("quota-mute")
        itutil.ck_create_topic(self.broker.bootstrap, topic)
        with self.conn() as c:
            alter(c, 1, [(client("muted"), [("producer_byte_rate", 20000, False)])])
        with self.conn("muted") as m:
            m.send_raw(produce_frame("muted", 1, topic, b"x" * 100000))  # 5 s of quota at once
            r = Reader(m.recv_frame())
            self.assertEqual(r.i32(), 1)
            r.array(lambda: (r.str16(), r.array(lambda: (r.i32(), r.i16(), r.i64(), r.i64(),
                                                         r.i64()))))
            throttle = r.i32()
            self.assertGreater(throttle, 2000)
            # the next request is not read before the throttle is over
            t0 = time.monotonic()
            err, _ = itutil.api_versions(m)
            waited = time.monotonic() - t0
            self.assertEqual(err, 0)
            self.assertGreater(waited, throttle / 1000.0 * 0.8)
        with self.conn() as c:  # others are not muted
            t0 = time.monotonic()
            itutil.api_versions(c)
            self.assertLess(time.monotonic() - t0, 1.0)
            alter(c, 1, [(client("muted"), [("producer_byte_rate", 0, True)])])

    def test_request_percentage_throttles_any_api(self):
        with self.conn() as c:
            alter(c, 1, [(client("busy"), [("request_percentage", 0.0001, False)])])
        throttles = []
        with self.conn("busy") as b:
            for _ in range(300):  # each ApiVersions costs microseconds of handler time
                r = b.request(18, 3, compact_str("it") + compact_str("1") + TAGS, flexible=True,
                              flexible_response=False)
                self.assertEqual(r.i16(), 0)
                r.compact_array(lambda: (r.i16(), r.i16(), r.i16(), r.tagged()))
                throttles.append(r.i32())
                if throttles[-1] > 0:
                    break
        self.assertGreater(throttles[-1], 0, "no throttle after %d requests" % len(throttles))
        self.assertLessEqual(throttles[-1], 1000)  # capped at one quota window
        with self.conn() as c:
            alter(c, 1, [(client("busy"), [("request_percentage", 0, True)])])

    def test_fetch_over_consumer_byte_rate_is_answered_empty(self):
        topic = unique_topic("quota-fetch")
        itutil.ck_create_topic(self.broker.bootstrap, topic)
        with self.conn("fetch-filler") as p:  # 10 batches of ~20 kB
            for i in range(10):
                p.send_raw(produce_frame("fetch-filler", i + 1, topic, b"v" * 20000))
                p.recv_frame()
        with self.conn() as c:
            alter(c, 1, [(client("slow-consumer"), [("consumer_byte_rate", 50000, False)])])

        def fetch(conn, offset):
            body = struct.pack(">iiiib", -1, 100, 1, 1 << 20, 0)
            body += array32([str16(topic) + array32([struct.pack(">iqi", 0, offset, 1 << 20)])])
            r = conn.request(1, 4, body)
            throttle = r.i32()
            records = b""
            for _ in range(r.i32()):
                r.str16()
                for _ in range(r.i32()):
                    r.i32(), r.i16(), r.i64(), r.i64()
                    r.array(lambda: (r.i64(), r.i64()))
                    records += r.bytes32() or b""
            return throttle, records

        with self.conn("slow-consumer") as f:
            # max_bytes (1 MiB asked) is capped at the quota's window worth: 50 kB → 2 batches
            throttle, records = fetch(f, 0)
            self.assertEqual(throttle, 0)
            self.assertGreater(len(records), 20000)
            self.assertLess(len(records), 50000)
            batches = list(itutil.iter_batches(records))
            # the next one is over the quota: an empty answer with a throttle
            throttle, records = fetch(f, len(batches))
            self.assertGreater(throttle, 0)
            self.assertEqual(records, b"")
            # a consumer that waits out its throttles gets the data, at about the quota
            got, t0 = 0, time.monotonic()
            while got < 100000 and time.monotonic() - t0 < 20:
                time.sleep(throttle / 1000.0)
                throttle, records = fetch(f, len(batches))
                batches += list(itutil.iter_batches(records))
                got += len(records)
            self.assertGreaterEqual(got, 100000)
            self.assertLess(got / (time.monotonic() - t0), 50000 * 2)
        with self.conn() as c:
            alter(c, 1, [(client("slow-consumer"), [("consumer_byte_rate", 0, True)])])

    def test_producer_is_throttled_by_client_id_without_disconnect(self):
        topic = unique_topic("quota-produce")
        itutil.ck_create_topic(self.broker.bootstrap, topic)
        quota = 100000
        with self.conn() as c:
            res = alter(c, 1, [(client("throttled-producer"),
                                [("producer_byte_rate", quota, False)])])
            self.assertEqual(res[0][0], 0)
        stats = []

        def run(client_id, total):
            from confluent_kafka import Producer
            p = Producer({"bootstrap.servers": self.broker.bootstrap, "client.id": client_id,
                          "acks": "all", "linger.ms": 0, "batch.num.messages": 1,
                          "statistics.interval.ms": 200, "stats_cb": stats.append})
            t0 = time.monotonic()
            itutil.ck_produce_all(p, [dict(topic=topic, value=b"p" * 10000)
                                      for _ in range(total)])
            elapsed = time.monotonic() - t0
            p.poll(0.5)
            return elapsed

        free = run("free-producer", 60)
        stats.clear()
        slow = run("throttled-producer", 60)  # 600 kB at 100 kB/s: ≥ ~4 s past the allowance
        self.assertLess(free, 3.0)
        self.assertGreater(slow, 3.5)
        self.assertLess(600000 / slow, quota * 1.6)  # the rate is bounded near the quota
        # librdkafka's throttle stat is a window per statistics interval: look at all of them
        seen = [b["throttle"]["max"] for st in stats
                for b in json.loads(st)["brokers"].values() if b["nodeid"] >= 0]
        self.assertTrue(any(t > 0 for t in seen), seen)
        last = json.loads(stats[-1])
        brokers = [b for b in last["brokers"].values() if b["nodeid"] >= 0]
        self.assertEqual(sum(b.get("disconnects", 0) for b in brokers), 0)
        self.assertBrokerAlive()

    @unittest.skipUnless(CLI, "STRATA_CLI not set")
    def test_cli_quota_describe_alter(self):
        boot = ["--bootstrap-server", self.broker.bootstrap]

        def cli(*args):
            return subprocess.run([CLI] + boot + list(args), capture_output=True, text=True,
                                  timeout=30)

        r = cli("quota", "alter", "--client-id", "cli-app", "--add",
                "producer_byte_rate=5000,request_percentage=20")
        self.assertEqual(r.returncode, 0, r.stderr)
        r = cli("quota", "alter", "--client-id-default", "--add", "consumer_byte_rate=7000")
        self.assertEqual(r.returncode, 0, r.stderr)
        r = cli("quota", "describe", "--client-id", "cli-app")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("client-id=cli-app", r.stdout)
        self.assertIn("producer_byte_rate=5000", r.stdout)
        r = cli("--output", "json", "quota", "describe")
        self.assertEqual(r.returncode, 0, r.stderr)
        got = json.loads(r.stdout)
        by = {tuple((e["type"], e["name"]) for e in q["entity"]): q["values"] for q in got}
        self.assertEqual(by[(("client-id", "cli-app"),)],
                         {"producer_byte_rate": 5000, "request_percentage": 20})
        self.assertEqual(by[(("client-id", None),)], {"consumer_byte_rate": 7000})
        r = cli("quota", "alter", "--client-id", "cli-app", "--add", "producer_byte_rate=-1")
        self.assertEqual(r.returncode, 1)
        self.assertIn("INVALID_REQUEST", r.stderr)
        r = cli("quota", "alter", "--client-id", "cli-app", "--delete",
                "producer_byte_rate,request_percentage")
        self.assertEqual(r.returncode, 0, r.stderr)
        r = cli("--output", "json", "quota", "describe", "--client-id", "cli-app")
        self.assertEqual(json.loads(r.stdout), [])
        r = cli("quota", "alter", "--add", "producer_byte_rate=1")  # no entity
        self.assertEqual(r.returncode, 2)
        cli("quota", "alter", "--client-id-default", "--delete", "consumer_byte_rate")

    def test_zz_quotas_survive_restart(self):
        with self.conn() as c:
            alter(c, 1, [(client("durable"), [("producer_byte_rate", 20000, False)])])
        self.broker.restart()
        with self.conn() as c:
            err, _, found = describe(c, 1, [("client-id", EXACT, "durable")])
        self.assertEqual(found, {(("client-id", "durable"),): {"producer_byte_rate": 20000}})
        topic = unique_topic("quota-restart")
        itutil.ck_create_topic(self.broker.bootstrap, topic)
        with self.conn("durable") as m:  # and it is enforced after the restart
            m.send_raw(produce_frame("durable", 1, topic, b"x" * 100000))
            r = Reader(m.recv_frame())
            r.i32()
            r.array(lambda: (r.str16(), r.array(lambda: (r.i32(), r.i16(), r.i64(), r.i64(),
                                                         r.i64()))))
            self.assertGreater(r.i32(), 0)


if __name__ == "__main__":
    unittest.main()
