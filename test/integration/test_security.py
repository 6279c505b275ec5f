"""TLS and SASL listeners with real clients: one broker listening on PLAINTEXT, SSL (mTLS
required), SASL_SSL and SASL_PLAINTEXT at once, certificates made by openssl in the test (SAN
IP:127.0.0.1: librdkafka and Python verify host names). PLAIN users come from the JAAS config.
Clients: librdkafka (confluent-kafka), kafka-python (SaslHandshake v0 + bare tokens), KafkaJS.
Failures (wrong password, unknown user, no or untrusted client certificate, plaintext on a TLS
port, TLS on a plaintext port, requests before authentication, oversized unauthenticated frames)
each end that connection only: the broker keeps serving the others."""
import json
import os
import shutil
import socket
import ssl
import struct
import subprocess
import tempfile
import time
import unittest

import cluster_harness
import harness
import itutil
import tls_util

JS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "js")
CLI = os.environ.get("STRATA_CLI") or os.path.join(harness.ROOT, "build", "tools", "cli", "strata")
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'user_alice="alice-secret" user_bob="bob-secret";')
API_SASL_HANDSHAKE = 17
API_METADATA = 3


def pki_dir():
    return tempfile.mkdtemp(prefix="strata-pki-")


class SecureBrokerCase(itutil.BrokerTestCase):
    extra = {}

    @classmethod
    def setUpClass(cls):
        cls.pki_root = pki_dir()
        cls.pki = tls_util.make_pki(cls.pki_root)
        cls.overrides = dict({
            "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0,"
                         "SASL_PLAINTEXT://127.0.0.1:0",
            "ssl.keystore.location": cls.pki["server"],
            "ssl.truststore.location": cls.pki["ca"],
            "listener.name.ssl.ssl.client.auth": "required",
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            "sasl.jaas.config": JAAS,
            "connection.failed.authentication.delay.ms": "50",
            # carol has SCRAM credentials (and can use PLAIN with the same password).
            "sasl.scram.bootstrap.users": "SCRAM-SHA-512=[name=carol,password=carol-secret];"
                                          "SCRAM-SHA-256=[name=carol,password=carol-secret]",
        }, **cls.extra)
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        shutil.rmtree(cls.pki_root, ignore_errors=True)

    def addr(self, listener):
        return "127.0.0.1:%d" % self.broker.ports[listener]

    def ck_conf(self, listener, user=None, password="alice-secret", mechanism="PLAIN", cert=None):
        conf = {"security.protocol": listener}
        if listener in ("SSL", "SASL_SSL"):
            conf["ssl.ca.location"] = self.pki["ca"]
        if cert:
            conf["ssl.certificate.location"] = self.pki[cert + "_crt"]
            conf["ssl.key.location"] = self.pki[cert + "_key"]
        if user:
            conf.update({"sasl.mechanisms": mechanism, "sasl.username": user,
                         "sasl.password": password})
        return conf

    def ck_roundtrip(self, listener, n=30, **kw):
        from confluent_kafka import Producer
        topic = itutil.unique_topic("sec-" + listener.lower())
        conf = dict({"bootstrap.servers": self.addr(listener), "acks": "all", "linger.ms": 5,
                     "message.timeout.ms": 20000}, **self.ck_conf(listener, **kw))
        p = Producer(conf)
        itutil.ck_produce_all(p, [{"topic": topic, "key": b"k%d" % i, "value": b"v%d" % i}
                                  for i in range(n)], timeout=30)
        msgs = itutil.ck_consume(self.addr(listener), topic, [0], n, timeout=30,
                                 **self.ck_conf(listener, **kw))
        self.assertEqual([m.value() for m in msgs], [b"v%d" % i for i in range(n)])

    def ck_auth_error(self, listener, **kw):
        """A librdkafka producer that cannot authenticate: the error it reports (or None)."""
        from confluent_kafka import Producer
        errors = []
        conf = dict({"bootstrap.servers": self.addr(listener), "message.timeout.ms": 3000,
                     "error_cb": lambda e: errors.append(e)}, **self.ck_conf(listener, **kw))
        p = Producer(conf)
        p.produce(itutil.unique_topic("denied"), b"x")
        deadline = time.time() + 10
        while not errors and time.time() < deadline:
            p.poll(0.2)
        p.flush(5)
        return errors

    def assert_logged(self, text):
        """The broker logged a line containing `text` (read by a thread: wait for it)."""
        harness.wait_until(lambda: any(text in ln for ln in self.broker.log_lines), 10,
                           what="broker log line %r" % text)

    def assert_still_serving(self):
        self.assertBrokerAlive()
        self.ck_roundtrip("PLAINTEXT", n=3)


class ListenersTest(SecureBrokerCase):
    def test_librdkafka_sasl_ssl_plain(self):
        self.ck_roundtrip("SASL_SSL", user="alice")

    def test_librdkafka_sasl_plaintext_plain(self):
        self.ck_roundtrip("SASL_PLAINTEXT", user="bob", password="bob-secret")

    def test_librdkafka_mtls(self):
        self.ck_roundtrip("SSL", cert="alice")

    def test_mtls_without_or_with_untrusted_certificate_is_refused(self):
        for cert in (None, "mallory"):
            errors = self.ck_auth_error("SSL", cert=cert)
            self.assertTrue(errors, "a client with %s certificate connected" % (cert or "no"))
        self.assert_logged("TLS handshake failed on listener SSL")
        self.assert_still_serving()

    def test_kafka_python_sasl_plaintext_and_sasl_ssl(self):
        for listener, tls in (("SASL_PLAINTEXT", False), ("SASL_SSL", True)):
            sec = dict(security_protocol=listener, sasl_mechanism="PLAIN",
                       sasl_plain_username="alice", sasl_plain_password="alice-secret")
            if tls:
                sec.update(ssl_cafile=self.pki["ca"], ssl_check_hostname=True)
            topic = itutil.unique_topic("kp-" + listener.lower())
            p = itutil.kp_producer(self.addr(listener), **sec)
            for i in range(20):
                p.send(topic, key=b"k%d" % i, value=b"v%d" % i, partition=0).get(timeout=30)
            p.close()
            got = itutil.kp_consume(self.addr(listener), topic, [0], 20, **sec)
            self.assertEqual([m.value for m in got], [b"v%d" % i for i in range(20)], listener)

    def test_scram_with_librdkafka_kafka_python_and_kafkajs(self):
        self.ck_roundtrip("SASL_SSL", user="carol", password="carol-secret",
                          mechanism="SCRAM-SHA-512")
        self.ck_roundtrip("SASL_PLAINTEXT", user="carol", password="carol-secret",
                          mechanism="SCRAM-SHA-256")
        # PLAIN checked against carol's SCRAM credential (she is not in the JAAS config).
        self.ck_roundtrip("SASL_SSL", user="carol", password="carol-secret", mechanism="PLAIN")
        errors = self.ck_auth_error("SASL_SSL", user="carol", password="wrong",
                                    mechanism="SCRAM-SHA-512")
        self.assertTrue(any("uthentication" in e.str() for e in errors), [e.str() for e in errors])
        # kafka-python: SaslHandshake v0, then SCRAM's four messages as bare tokens.
        sec = dict(security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-256",
                   sasl_plain_username="carol", sasl_plain_password="carol-secret")
        topic = itutil.unique_topic("kp-scram")
        prod = itutil.kp_producer(self.addr("SASL_PLAINTEXT"), **sec)
        for i in range(10):
            prod.send(topic, value=b"v%d" % i, partition=0).get(timeout=30)
        prod.close()
        got = itutil.kp_consume(self.addr("SASL_PLAINTEXT"), topic, [0], 10, **sec)
        self.assertEqual([m.value for m in got], [b"v%d" % i for i in range(10)])
        topic = itutil.unique_topic("kjs-scram")
        opts = {"mechanism": "SCRAM-SHA-512", "username": "carol", "password": "carol-secret",
                "ca": self.pki["ca"]}
        env = dict(os.environ, NODE_PATH=os.path.join(JS_DIR, "node_modules"))
        p = subprocess.run(["node", os.path.join(JS_DIR, "sasl_client.js"), self.addr("SASL_SSL"),
                            topic, "10", json.dumps(opts)], cwd=JS_DIR, env=env,
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_kafkajs_sasl_ssl_plain(self):
        topic = itutil.unique_topic("kjs-sasl")
        opts = {"mechanism": "PLAIN", "username": "alice", "password": "alice-secret",
                "ca": self.pki["ca"]}
        env = dict(os.environ, NODE_PATH=os.path.join(JS_DIR, "node_modules"))
        p = subprocess.run(["node", os.path.join(JS_DIR, "sasl_client.js"), self.addr("SASL_SSL"),
                            topic, "25", json.dumps(opts)], cwd=JS_DIR, env=env,
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        res = json.loads([ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")][0][7:])
        self.assertEqual(sorted(res["values"], key=lambda v: int(v[1:])),
                         ["v%d" % i for i in range(25)])

    def cli(self, listener, props, *args):
        path = os.path.join(self.pki_root, "client-%s.properties" % listener)
        with open(path, "w") as f:
            f.write("".join("%s=%s\n" % kv for kv in props.items()))
        return subprocess.run([CLI, "--command-config", path, "-b", self.addr(listener),
                               "--output", "json", *args], capture_output=True, text=True,
                              timeout=60)

    def test_cli_over_sasl_ssl_and_mtls(self):
        topic = itutil.unique_topic("cli-sec")
        jaas = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
                'username="alice" password="alice-secret";')
        sasl_ssl = {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
                    "sasl.jaas.config": jaas, "ssl.truststore.type": "PEM",
                    "ssl.truststore.location": self.pki["ca"]}
        p = self.cli("SASL_SSL", sasl_ssl, "topic", "create", topic, "--partitions", "2")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        p = self.cli("SASL_SSL", sasl_ssl, "topic", "list")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(topic, [t["name"] for t in json.loads(p.stdout)["topics"]])
        mtls = {"security.protocol": "SSL", "ssl.ca.location": self.pki["ca"],
                "ssl.certificate.location": self.pki["alice_crt"],
                "ssl.key.location": self.pki["alice_key"]}
        p = self.cli("SSL", mtls, "topic", "list")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(topic, [t["name"] for t in json.loads(p.stdout)["topics"]])
        # Failures: wrong password (a Kafka error: exit 1), no CA (the broker is not trusted),
        # an unknown property (usage).
        bad = dict(sasl_ssl, **{"sasl.jaas.config": jaas.replace("alice-secret", "x")})
        p = self.cli("SASL_SSL", bad, "topic", "list")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("SASL_AUTHENTICATION_FAILED", p.stderr)
        untrusted = {k: v for k, v in sasl_ssl.items() if k != "ssl.truststore.location"}
        p = self.cli("SASL_SSL", untrusted, "topic", "list")
        self.assertEqual(p.returncode, 3, p.stdout + p.stderr)
        self.assertIn("certificate", p.stderr)
        p = self.cli("SASL_SSL", dict(sasl_ssl, **{"ssl.trustsore.location": "x"}), "topic", "list")
        self.assertEqual(p.returncode, 2, p.stderr)

    def test_wrong_password_and_unknown_user_fail_cleanly(self):
        for kw in ({"user": "alice", "password": "wrong"}, {"user": "nobody"}):
            errors = self.ck_auth_error("SASL_SSL", **kw)
            self.assertTrue(errors, "no error for %r" % kw)
            self.assertTrue(any("uthentication" in e.str() for e in errors), [e.str() for e in errors])
        from kafka.errors import KafkaError
        with self.assertRaises(KafkaError):
            itutil.kp_producer(self.addr("SASL_PLAINTEXT"), security_protocol="SASL_PLAINTEXT",
                               sasl_mechanism="PLAIN", sasl_plain_username="alice",
                               sasl_plain_password="nope", api_version_auto_timeout_ms=3000,
                               max_block_ms=3000)
        self.assert_logged("authentication failed for")
        self.assert_still_serving()

    def test_plaintext_on_tls_port_and_tls_on_plaintext_port(self):
        # A Kafka request to the TLS port: the handshake fails and the connection closes.
        with itutil.RawConn(self.broker.ports["SSL"]) as c:
            c.send_raw(itutil.request_frame(18, 0, 1, b""))
            self.assertTrue(c.wait_closed(10))
        # A TLS client on the plaintext port: its ClientHello reads as a huge frame size.
        ctx = ssl.create_default_context(cafile=self.pki["ca"])
        raw = socket.create_connection(("127.0.0.1", self.broker.ports["PLAINTEXT"]), timeout=10)
        with self.assertRaises((ssl.SSLError, ConnectionError, OSError)):
            ctx.wrap_socket(raw, server_hostname="127.0.0.1").do_handshake()
        raw.close()
        self.assert_still_serving()

    def test_only_api_versions_and_handshake_before_authentication(self):
        port = self.broker.ports["SASL_PLAINTEXT"]
        with itutil.RawConn(port) as c:
            err, keys = itutil.api_versions(c, version=0)
            self.assertEqual(err, 0)
            self.assertIn(API_SASL_HANDSHAKE, keys)
            self.assertIn(36, keys)
            c.send_raw(itutil.request_frame(API_METADATA, 0, 9, struct.pack(">i", 0)))
            self.assertTrue(c.wait_closed(10), "Metadata before authentication was served")
        with itutil.RawConn(port) as c:
            r = c.request(API_SASL_HANDSHAKE, 1, itutil.str16("GSSAPI"))
            self.assertEqual(r.i16(), 33)  # UNSUPPORTED_SASL_MECHANISM
            self.assertEqual(sorted(r.array(lambda: r.str16())),
                             ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
            self.assertTrue(c.wait_closed(10))
        with itutil.RawConn(port) as c:  # SaslAuthenticate without a handshake: closed, as Kafka
            c.send_raw(itutil.request_frame(36, 1, 3, itutil.bytes32(b"\0alice\0alice-secret")))
            self.assertTrue(c.wait_closed(10))
        # On a PLAINTEXT listener SaslHandshake is an illegal state, and the connection stays.
        with itutil.RawConn(self.broker.ports["PLAINTEXT"]) as c:
            r = c.request(API_SASL_HANDSHAKE, 1, itutil.str16("PLAIN"))
            self.assertEqual(r.i16(), 34)
            self.assertEqual(itutil.api_versions(c, version=0)[0], 0)
        self.assert_still_serving()

    def test_handshake_v1_then_authenticate_raw(self):
        """SaslAuthenticate v1 by hand: the principal is then served, with session_lifetime 0."""
        with itutil.RawConn(self.broker.ports["SASL_PLAINTEXT"]) as c:
            r = c.request(API_SASL_HANDSHAKE, 1, itutil.str16("PLAIN"))
            self.assertEqual(r.i16(), 0)
            r = c.request(36, 1, itutil.bytes32(b"\0bob\0bob-secret"))
            self.assertEqual(r.i16(), 0)
            self.assertIsNone(r.str16())
            r.bytes32()
            self.assertEqual(r.i64(), 0)
            topics = itutil.metadata_v1(c)
            self.assertIsInstance(topics, dict)

    def test_oversized_frame_before_authentication_closes(self):
        with itutil.RawConn(self.broker.ports["SASL_PLAINTEXT"]) as c:
            c.send_raw(struct.pack(">i", 10 * 1024 * 1024) + b"\0" * 64)
            self.assertTrue(c.wait_closed(10))
        self.assert_logged("sasl.server.max.receive.size")
        self.assert_still_serving()


class PrincipalsInAclsTest(SecureBrokerCase):
    """The authenticated principal is what ACLs see: alice (super user) grants bob, over SASL_SSL
    with the CLI, and bob's produce goes from TOPIC_AUTHORIZATION_FAILED to accepted; an mTLS
    client is its certificate's mapped subject."""
    extra = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
             "super.users": "User:alice",
             "listener.name.ssl.ssl.principal.mapping.rules": "RULE:^.*CN=([^,]+).*$/$1/L"}

    def produce_as(self, listener, **kw):
        from confluent_kafka import Producer
        conf = dict({"bootstrap.servers": self.addr(listener), "acks": "all",
                     "message.timeout.ms": 5000}, **self.ck_conf(listener, **kw))
        p = Producer(conf)
        out = []
        p.produce(self.topic, b"x", partition=0, on_delivery=lambda e, m: out.append(e))
        p.flush(15)
        return out[0] if out else "no answer"

    def test_grants_follow_the_authenticated_principal(self):
        from confluent_kafka import KafkaError
        self.topic = itutil.unique_topic("acl-principal")
        jaas = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
                'username="alice" password="alice-secret";')
        admin = {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
                 "sasl.jaas.config": jaas, "ssl.truststore.location": self.pki["ca"]}
        path = os.path.join(self.pki_root, "alice.properties")
        with open(path, "w") as f:
            f.write("".join("%s=%s\n" % kv for kv in admin.items()))

        def cli(*args):
            p = subprocess.run([CLI, "--command-config", path, "-b", self.addr("SASL_SSL"), *args],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        cli("topic", "create", self.topic)
        err = self.produce_as("SASL_PLAINTEXT", user="bob", password="bob-secret")
        self.assertIsNotNone(err)
        self.assertEqual(err.code(), KafkaError.TOPIC_AUTHORIZATION_FAILED, err)
        cli("acl", "add", "--allow-principal", "User:bob", "--operation", "Write",
            "--topic", self.topic)
        self.assertIsNone(self.produce_as("SASL_PLAINTEXT", user="bob", password="bob-secret"))
        # mTLS: CN=alice maps to User:alice, a super user.
        self.assertIsNone(self.produce_as("SSL", cert="alice"))
        self.assertEqual(self.produce_as("SASL_SSL", user="carol", password="carol-secret",
                                         mechanism="SCRAM-SHA-512").code(),
                         KafkaError.TOPIC_AUTHORIZATION_FAILED)


class ReauthenticationTest(SecureBrokerCase):
    """connections.max.reauth.ms on the SASL listeners: librdkafka 2.0.2 and kafka-python do not
    re-authenticate, so the broker closes their connections at the first request after expiry
    and they reconnect; KafkaJS re-authenticates in band. No acknowledged record is lost."""
    extra = {"connections.max.reauth.ms": "1500"}

    def test_librdkafka_produces_across_session_expiry(self):
        from confluent_kafka import Producer
        topic = itutil.unique_topic("reauth-ck")
        conf = dict({"bootstrap.servers": self.addr("SASL_SSL"), "acks": "all",
                     "enable.idempotence": True, "message.timeout.ms": 30000},
                    **self.ck_conf("SASL_SSL", user="alice"))
        p = Producer(conf)
        acked, failed = [], []

        def cb(err, msg):
            (failed if err else acked).append(msg.value() if not err else err)
        deadline = time.time() + 5
        i = 0
        while time.time() < deadline:
            p.produce(topic, value=b"v%d" % i, partition=0, on_delivery=cb)
            i += 1
            p.poll(0.05)
        self.assertEqual(p.flush(30), 0)
        self.assertEqual(failed, [])
        self.assertEqual(len(acked), i)
        msgs = itutil.ck_consume(self.addr("SASL_SSL"), topic, [0], i, timeout=30,
                                 **self.ck_conf("SASL_SSL", user="alice"))
        self.assertEqual([m.value() for m in msgs], [b"v%d" % k for k in range(i)])
        self.assert_logged("expired (connections.max.reauth.ms)")

    def test_kafkajs_reauthenticates_in_band(self):
        topic = itutil.unique_topic("reauth-kjs")
        opts = {"mechanism": "PLAIN", "username": "bob", "password": "bob-secret",
                "holdMs": 4000}
        env = dict(os.environ, NODE_PATH=os.path.join(JS_DIR, "node_modules"))
        p = subprocess.run(["node", os.path.join(JS_DIR, "sasl_client.js"),
                            self.addr("SASL_PLAINTEXT"), topic, "5", json.dumps(opts)],
                           cwd=JS_DIR, env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        res = json.loads([ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")][0][7:])
        self.assertGreater(res["sent"], 20)
        self.assertEqual(sorted(set(res["values"]), key=lambda v: int(v[1:])),
                         ["v%d" % i for i in range(res["sent"])])



class InterBrokerSaslTest(cluster_harness.ClusterTestCase):
    """Three brokers whose only listener is SASL_PLAINTEXT: replica fetches authenticate with
    the JAAS config's username/password (sasl.mechanism.inter.broker.protocol=PLAIN), so an RF=3
    partition's followers reach the ISR and an acks=all write is replicated."""

    def test_replication_over_an_authenticated_inter_broker_listener(self):
        from confluent_kafka.admin import AdminClient, NewTopic
        etcd = self.track(cluster_harness.Etcd().start())
        jaas = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
                'username="broker" password="broker-secret" user_broker="broker-secret" '
                'user_alice="alice-secret";')
        c = self.track(cluster_harness.Cluster(3, etcd.endpoint, extra_props={
            "sasl.enabled.mechanisms": "PLAIN", "sasl.jaas.config": jaas,
            "security.inter.broker.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism.inter.broker.protocol": "PLAIN"}))
        for n in c.node_ids:
            c.brokers[n].overrides["listeners"] = "SASL_PLAINTEXT://127.0.0.1:%d" % c.ports[n]
        c.start().wait_ready()
        sec = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN",
               "sasl.username": "alice", "sasl.password": "alice-secret"}
        admin = AdminClient(dict({"bootstrap.servers": c.bootstrap()}, **sec))
        topic = itutil.unique_topic("ib-sasl")
        admin.create_topics([NewTopic(topic, 1, 3)])[topic].result(30)

        def isr():
            md = admin.list_topics(topic, timeout=10)
            p = md.topics[topic].partitions.get(0)
            return sorted(p.isrs) if p else []
        harness.wait_until(lambda: isr() == [1, 2, 3], 30, what="ISR [1, 2, 3]")
        from confluent_kafka import Producer
        p = Producer(dict({"bootstrap.servers": c.bootstrap(), "acks": "all"}, **sec))
        itutil.ck_produce_all(p, [{"topic": topic, "value": b"v%d" % i} for i in range(40)])
        msgs = itutil.ck_consume(c.bootstrap(), topic, [0], 40, **sec)
        self.assertEqual([m.value() for m in msgs], [b"v%d" % i for i in range(40)])
        self.assertEqual(isr(), [1, 2, 3])
        for n in c.node_ids:
            self.assertFalse(any("authentication failed" in ln for ln in c.brokers[n].log_lines))


if __name__ == "__main__":
    unittest.main()
