"""User and user+client-id client quotas (KIP-55) with authenticated clients: one broker with a
PLAINTEXT and a SASL_PLAINTEXT listener (PLAIN users from the JAAS config). A producer_byte_rate
quota on user=NAME throttles that user's connections whatever their client id (one rate shared by
all of them) and not another user's or an unauthenticated client's with the same client id; a
user+client-id quota overrides the user's; librdkafka producers show it end to end (throttle in
their statistics, the rate they reach). DescribeClientQuotas filters with the user type, `strata
quota --user`, and a user entity surviving a restart."""
import json
import os
import struct
import subprocess
import time
import unittest

import itutil
from itutil import BrokerTestCase, Reader, str16, unique_topic
from test_quotas import ANY, DEFAULT, EXACT, ClientConn, alter, describe, produce_frame

USERS = ["alice", "bob", "carol", "dave", "erin", "frank"]
JAAS = ("org.apache.kafka.common.security.plain.PlainLoginModule required " +
        " ".join('user_%s="%s-secret"' % (u, u) for u in USERS) + ";")
CLI = os.environ.get("STRATA_CLI")
API_SASL_HANDSHAKE, API_SASL_AUTHENTICATE = 17, 36


def user(name):
    return [("user", name)]


def user_client(name, client_id):
    return [("user", name), ("client-id", client_id)]


class UserQuotasTest(BrokerTestCase):
    # two 1 s windows: a fresh rate's allowance is one second of quota, so tests stay short
    overrides = {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                 "sasl.enabled.mechanisms": "PLAIN", "sasl.jaas.config": JAAS,
                 "quota.window.num": "2", "quota.window.size.seconds": "1"}

    def admin(self):
        return ClientConn(self.broker.ports["PLAINTEXT"], "quota-admin")

    def sasl_conn(self, name, client_id):
        """A raw connection authenticated as `name` (PLAIN), sending `client_id`."""
        c = ClientConn(self.broker.ports["SASL_PLAINTEXT"], client_id)
        r = c.request(API_SASL_HANDSHAKE, 1, str16("PLAIN"))
        self.assertEqual(r.i16(), 0)
        token = b"\0" + name.encode() + b"\0" + name.encode() + b"-secret"
        r = c.request(API_SASL_AUTHENTICATE, 1, itutil.bytes32(token))
        self.assertEqual(r.i16(), 0)
        return c

    def produce_throttle(self, conn, topic, size):
        """One Produce v7 of a `size`-byte record on conn: the throttle_time_ms answered."""
        conn.corr += 1
        conn.send_raw(produce_frame(conn.client_id, conn.corr, topic, b"q" * size))
        r = Reader(conn.recv_frame())
        self.assertEqual(r.i32(), conn.corr)
        errors = []
        r.array(lambda: (r.str16(), r.array(lambda: errors.append(
            (r.i32(), r.i16(), r.i64(), r.i64(), r.i64())[1]))))
        self.assertEqual(errors, [0])
        return r.i32()

    def set_quotas(self, entries):
        """Sets them; they are removed again when the test ends, whatever its outcome."""
        with self.admin() as c:
            res = alter(c, 1, entries)
        self.assertEqual([e for e, _, _ in res], [0] * len(entries), res)

        def remove():
            with self.admin() as c:
                alter(c, 1, [(e, [(k, 0, True) for k, _, _ in ops]) for e, ops in entries])

        self.addCleanup(remove)

    def test_user_quota_throttles_that_user_whatever_its_client_id(self):
        topic = unique_topic("uq-raw")
        itutil.ck_create_topic(self.broker.bootstrap, topic)
        self.set_quotas([(user("alice"), [("producer_byte_rate", 20000, False)]),
                         (user_client("alice", "alice-vip"),
                          [("producer_byte_rate", 1e9, False)])])
        with self.sasl_conn("alice", "shared-app") as a:  # 5 s of alice's quota at once
            self.assertGreater(self.produce_throttle(a, topic, 100000), 2000)
        with self.sasl_conn("alice", "another-app") as a2:  # alice's one rate: still over
            self.assertGreater(self.produce_throttle(a2, topic, 10), 0)
        with self.sasl_conn("bob", "shared-app") as b:  # same client id, another user
            self.assertEqual(self.produce_throttle(b, topic, 100000), 0)
        with ClientConn(self.broker.ports["PLAINTEXT"], "shared-app") as anon:  # ANONYMOUS
            self.assertEqual(self.produce_throttle(anon, topic, 100000), 0)
        with self.sasl_conn("alice", "alice-vip") as v:  # user+client-id overrides the user
            self.assertEqual(self.produce_throttle(v, topic, 100000), 0)

    def test_default_user_limits_each_user_separately(self):
        topic = unique_topic("uq-default")
        itutil.ck_create_topic(self.broker.bootstrap, topic)
        self.set_quotas([(user(None), [("producer_byte_rate", 20000, False)]),
                         (user("frank"), [("producer_byte_rate", 1e9, False)])])
        with self.sasl_conn("erin", "d-app") as e:
            self.assertEqual(self.produce_throttle(e, topic, 15000), 0)
        with self.sasl_conn("dave", "d-app") as d:  # dave's own rate, not erin's
            self.assertEqual(self.produce_throttle(d, topic, 15000), 0)
            self.assertGreater(self.produce_throttle(d, topic, 100000), 2000)
        with self.sasl_conn("frank", "d-app") as f:  # his own entity beats the default
            self.assertEqual(self.produce_throttle(f, topic, 200000), 0)

    def ck_run(self, name, client_id, topic, total, stats):
        from confluent_kafka import Producer
        p = Producer({"bootstrap.servers": "127.0.0.1:%d" % self.broker.ports["SASL_PLAINTEXT"],
                      "security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN",
                      "sasl.username": name, "sasl.password": name + "-secret",
                      "client.id": client_id, "acks": "all", "linger.ms": 0,
                      "batch.num.messages": 1, "statistics.interval.ms": 200,
                      "stats_cb": stats.append})
        t0 = time.monotonic()
        itutil.ck_produce_all(p, [dict(topic=topic, value=b"p" * 10000) for _ in range(total)])
        elapsed = time.monotonic() - t0
        p.poll(0.5)
        throttles = [b["throttle"]["max"] for st in stats
                     for b in json.loads(st)["brokers"].values() if b["nodeid"] >= 0]
        disconnects = sum(b.get("disconnects", 0) for b in json.loads(stats[-1])["brokers"].values()
                          if b["nodeid"] >= 0)
        return elapsed, throttles, disconnects

    def test_librdkafka_producers_of_two_users_with_one_client_id(self):
        topic = unique_topic("uq-ck")
        itutil.ck_create_topic(self.broker.bootstrap, topic)
        quota = 100000
        self.set_quotas([(user("carol"), [("producer_byte_rate", quota, False)]),
                         (user_client("carol", "carol-fast"),
                          [("producer_byte_rate", 1e9, False)])])
        free, free_throttles, _ = self.ck_run("dave", "ck-shared", topic, 60, [])
        slow, slow_throttles, disconnects = self.ck_run("carol", "ck-shared", topic, 60, [])
        # 600 kB at 100 kB/s past a one-second allowance: about 5 s
        self.assertLess(free, 3.0)
        self.assertFalse(any(t > 0 for t in free_throttles), free_throttles)
        self.assertGreater(slow, 3.5)
        self.assertLess(600000 / slow, quota * 1.6)
        self.assertTrue(any(t > 0 for t in slow_throttles), slow_throttles)
        self.assertEqual(disconnects, 0)
        # carol's user+client-id entity overrides her user quota
        fast, fast_throttles, _ = self.ck_run("carol", "carol-fast", topic, 60, [])
        self.assertLess(fast, 3.0)
        self.assertFalse(any(t > 0 for t in fast_throttles), fast_throttles)
        self.assertBrokerAlive()

    def test_describe_filters_with_users(self):
        self.set_quotas([(user("d-alice"), [("consumer_byte_rate", 1000, False)]),
                         (user_client("d-alice", "d-x"), [("consumer_byte_rate", 2000, False)]),
                         (user_client(None, None), [("request_percentage", 5, False)]),
                         ([("client-id", "d-x")], [("consumer_byte_rate", 3000, False)])])
        with self.admin() as c:
            for v in (0, 1):
                err, _, found = describe(c, v, [("user", EXACT, "d-alice")], strict=True)
                self.assertEqual(err, 0)
                self.assertEqual(found, {(("user", "d-alice"),): {"consumer_byte_rate": 1000}})
                err, _, found = describe(c, v, [("user", EXACT, "d-alice")])
                self.assertEqual(set(found), {(("user", "d-alice"),),
                                              (("client-id", "d-x"), ("user", "d-alice"))})
                err, _, found = describe(c, v, [("user", DEFAULT, None),
                                                ("client-id", DEFAULT, None)])
                self.assertEqual(found, {(("client-id", None), ("user", None)):
                                         {"request_percentage": 5}})
                err, _, found = describe(c, v, [("client-id", EXACT, "d-x")])
                self.assertEqual(set(found), {(("client-id", "d-x"),),
                                              (("client-id", "d-x"), ("user", "d-alice"))})
                err, _, found = describe(c, v, [("user", ANY, None), ("client-id", ANY, None)])
                self.assertIn((("client-id", "d-x"), ("user", "d-alice")), found)
                self.assertNotIn((("user", "d-alice"),), found)
            # validation with the user type
            res = alter(c, 1, [(user(""), [("producer_byte_rate", 10, False)]),
                               ([("user", "a"), ("user", "b")], [("producer_byte_rate", 1, False)]),
                               ([("ip", "127.0.0.1")], [("producer_byte_rate", 1, False)])])
            self.assertEqual([e for e, _, _ in res], [42, 42, 42], res)
            self.assertIn("Empty user", res[0][1])

    @unittest.skipUnless(CLI, "STRATA_CLI not set")
    def test_cli_user_entities(self):
        boot = ["--bootstrap-server", "127.0.0.1:%d" % self.broker.ports["PLAINTEXT"]]

        def cli(*args):
            return subprocess.run([CLI] + boot + list(args), capture_output=True, text=True,
                                  timeout=30)

        r = cli("quota", "alter", "--user", "cli-u", "--add", "producer_byte_rate=5000")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("user=cli-u", r.stdout)
        r = cli("quota", "alter", "--user", "cli-u", "--client-id", "cli-c", "--add",
                "producer_byte_rate=9000")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("user=cli-u,client-id=cli-c", r.stdout)
        r = cli("quota", "alter", "--user-default", "--client-id-default", "--add",
                "request_percentage=50")
        self.assertEqual(r.returncode, 0, r.stderr)
        r = cli("quota", "describe", "--user", "cli-u")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("user=cli-u,client-id=cli-c", r.stdout)
        self.assertIn("producer_byte_rate=9000", r.stdout)
        r = cli("--output", "json", "quota", "describe", "--user", "cli-u", "--strict")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout), [{"entity": [{"type": "user", "name": "cli-u"}],
                                                 "values": {"producer_byte_rate": 5000}}])
        r = cli("quota", "describe", "--user-default", "--client-id-default")
        self.assertIn("user=<default>,client-id=<default>", r.stdout)
        self.assertIn("request_percentage=50", r.stdout)
        r = cli("quota", "alter", "--user", "a", "--user-default", "--add", "producer_byte_rate=1")
        self.assertEqual(r.returncode, 2)
        for args in (["--user", "cli-u"], ["--user", "cli-u", "--client-id", "cli-c"]):
            r = cli("quota", "alter", *args, "--delete", "producer_byte_rate")
            self.assertEqual(r.returncode, 0, r.stderr)
        cli("quota", "alter", "--user-default", "--client-id-default", "--delete",
            "request_percentage")
        r = cli("--output", "json", "quota", "describe", "--user", "cli-u")
        self.assertEqual(json.loads(r.stdout), [])

    def test_zz_user_quotas_survive_restart(self):
        self.set_quotas([(user_client("bob", "durable-u"), [("producer_byte_rate", 20000, False)])])
        self.broker.restart()
        with self.admin() as c:
            err, _, found = describe(c, 1, [("user", EXACT, "bob")])
        self.assertEqual(found, {(("client-id", "durable-u"), ("user", "bob")):
                                 {"producer_byte_rate": 20000}})
        topic = unique_topic("uq-restart")
        itutil.ck_create_topic(self.broker.bootstrap, topic)
        with self.sasl_conn("bob", "durable-u") as b:  # and enforced after the restart
            self.assertGreater(self.produce_throttle(b, topic, 100000), 0)
        with self.sasl_conn("alice", "durable-u") as a:
            self.assertEqual(self.produce_throttle(a, topic, 100000), 0)


if __name__ == "__main__":
    unittest.main()
