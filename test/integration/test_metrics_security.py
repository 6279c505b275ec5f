"""HTTPS and HTTP basic auth on the metrics endpoint (metrics.ssl.*, metrics.basic.auth.*;
docs/security.md, "Metrics endpoint"), with certificates made by openssl in the test (SAN
IP:127.0.0.1, so Python checks the host name).

One broker serves /metrics over HTTPS with basic auth; a plain broker is the reference for the
metric families. An HTTPS scrape verified against the test CA returns a valid exposition with the
same families as plain HTTP; plain HTTP, a TLS client that does not trust the certificate and raw
garbage to the TLS port fail for that connection only; no, wrong and right credentials get
401 / 401 / 200; the secrets are neither logged nor described. Another broker requires client
certificates (metrics.ssl.client.auth=required). Bad settings stop the start with a message
naming the key. The Kafka port is checked after every abuse of the HTTP port."""
import base64
import http.client
import re
import shutil
import socket
import ssl
import subprocess
import tempfile
import unittest

import harness
import itutil
import tls_util
from itutil import BrokerTestCase, RawConn, unique_topic
from test_metrics import parse_exposition

ENDPOINT_RE = re.compile(r"metrics listening on (https?)://([0-9.]+):(\d+)/metrics")
USER, PASSWORD = "prometheus", "scrape-s3cret:with-colon"


def endpoint(broker):
    for line in broker.log_lines:
        m = ENDPOINT_RE.search(line)
        if m:
            return m.group(1), m.group(2), int(m.group(3))
    return None


def request(ep, path="/metrics", auth=None, ctx=None, method="GET", scheme=None):
    """-> (status, headers, body text). `scheme` overrides the endpoint's (plain HTTP to TLS)."""
    scheme = scheme or ep[0]
    if scheme == "https":
        conn = http.client.HTTPSConnection(ep[1], ep[2], context=ctx, timeout=10)
    else:
        conn = http.client.HTTPConnection(ep[1], ep[2], timeout=10)
    headers = {}
    if auth is not None:
        token = base64.b64encode(("%s:%s" % auth).encode()).decode()
        headers["Authorization"] = "Basic " + token
    try:
        conn.request(method, path, headers=headers)
        r = conn.getresponse()
        return r.status, r.headers, r.read().decode()
    finally:
        conn.close()


def kafka_round_trip(test, broker):
    """ApiVersions, a produce and a fetch on the Kafka port."""
    topic = unique_topic("msec")
    itutil.ck_create_topic(broker.bootstrap, topic)
    with RawConn(broker.port) as c:
        test.assertEqual(itutil.api_versions(c)[0], 0)
        batch = itutil.build_batch([(b"k", b"v", ())])
        test.assertEqual(itutil.produce(c, 3, {topic: {0: batch}})[(topic, 0)][0], 0)
        got = itutil.fetch_v4(c, topic, 0, 0, max_wait_ms=0)
        test.assertEqual(got["error"], 0)
        test.assertEqual(len(got["records"]), len(batch))


class SecureMetricsCase(BrokerTestCase):
    @classmethod
    def extra(cls, pki):
        return {}

    @classmethod
    def setUpClass(cls):
        cls.pki_root = tempfile.mkdtemp(prefix="strata-pki-")
        cls.pki = tls_util.make_pki(cls.pki_root)
        cls.overrides = dict({
            "metrics.ssl.enabled": "true",
            "metrics.ssl.keystore.location": cls.pki["server"],
        }, **cls.extra(cls.pki))
        super().setUpClass()
        cls.ep = endpoint(cls.broker)
        cls.ctx = ssl.create_default_context(cafile=cls.pki["ca"])

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        shutil.rmtree(cls.pki_root, ignore_errors=True)

    def scrape(self, **kw):
        status, headers, body = request(self.ep, ctx=self.ctx, **kw)
        self.assertEqual(status, 200, body)
        return headers, parse_exposition(body)


class MetricsHttpsBasicAuthTest(SecureMetricsCase):
    @classmethod
    def extra(cls, pki):
        return {"metrics.basic.auth.user": USER, "metrics.basic.auth.password": PASSWORD}

    def test_https_scrape_has_the_families_of_plain_http(self):
        self.assertEqual(self.ep[0], "https")
        headers, (types, samples) = self.scrape(auth=(USER, PASSWORD))
        self.assertIn("text/plain", headers.get("Content-Type", ""))
        self.assertIn("strata_requests_total", types)
        plain = harness.BrokerProcess()
        try:
            plain.start()
            pep = endpoint(plain)
            self.assertEqual(pep[0], "http")
            status, _, body = request(pep)
            self.assertEqual(status, 200)
            plain_types, _ = parse_exposition(body)
        finally:
            plain.stop()
            plain.cleanup()
        self.assertEqual(types, plain_types)
        self.assertEqual(samples[("strata_metrics_http_refusals_total",
                                  frozenset({("reason", "connection_limit")}))], 0)

    def test_credentials(self):
        status, headers, _ = request(self.ep, ctx=self.ctx)
        self.assertEqual(status, 401)
        self.assertRegex(headers.get("WWW-Authenticate", ""), r'^Basic realm="[^"]+"')
        for wrong in [(USER, "nope"), ("someone", PASSWORD), (USER, PASSWORD + "x"),
                      (USER, PASSWORD.split(":")[0])]:
            status, headers, body = request(self.ep, ctx=self.ctx, auth=wrong)
            self.assertEqual(status, 401, wrong)
            self.assertIn("Basic", headers.get("WWW-Authenticate", ""))
            self.assertNotIn("strata_", body)
        _, (_, samples) = self.scrape(auth=(USER, PASSWORD))
        self.assertGreaterEqual(samples[("strata_metrics_http_refusals_total",
                                         frozenset({("reason", "unauthorized")}))], 5)
        status, _, _ = request(self.ep, path="/other", ctx=self.ctx, auth=(USER, PASSWORD))
        self.assertEqual(status, 404)
        status, _, _ = request(self.ep, ctx=self.ctx, auth=(USER, PASSWORD), method="POST")
        self.assertEqual(status, 405)
        kafka_round_trip(self, self.broker)

    def test_plain_http_and_garbage_on_the_tls_port_fail_alone(self):
        before = self.scrape(auth=(USER, PASSWORD))[1][1]
        key = ("strata_metrics_http_refusals_total", frozenset({("reason", "tls_handshake")}))
        with self.assertRaises((http.client.HTTPException, ConnectionError, OSError)):
            request(self.ep, scheme="http", auth=(USER, PASSWORD))
        # A TLS client that does not trust the certificate (the system CAs only).
        with self.assertRaises(ssl.SSLCertVerificationError):
            request(self.ep, ctx=ssl.create_default_context(), auth=(USER, PASSWORD))
        with socket.create_connection(self.ep[1:], timeout=10) as s:
            s.sendall(b"\x16\x03\x01\xff\xff" + b"\x00" * 64)
            try:
                self.assertIn(s.recv(4096)[:1], (b"", b"\x15"))  # closed, or an alert first
            except ConnectionResetError:
                pass
        harness.wait_until(
            lambda: self.scrape(auth=(USER, PASSWORD))[1][1][key] >= before[key] + 3,
            what="three failed handshakes counted")
        self.assertTrue(self.broker.alive())
        self.assertTrue(any("metrics endpoint: TLS handshake failed" in ln
                            for ln in self.broker.log_lines))
        kafka_round_trip(self, self.broker)

    def test_secrets_are_not_described_or_logged(self):
        from confluent_kafka.admin import AdminClient, ConfigResource
        a = AdminClient({"bootstrap.servers": self.broker.bootstrap})
        res = ConfigResource("broker", "1")
        cfg = a.describe_configs([res])[res].result(30)
        for k in ("metrics.basic.auth.user", "metrics.basic.auth.password"):
            self.assertTrue(cfg[k].is_sensitive, k)
            self.assertIsNone(cfg[k].value, k)
        self.assertEqual(cfg["metrics.ssl.enabled"].value, "true")
        self.assertEqual(cfg["metrics.ssl.keystore.location"].value, self.pki["server"])
        self.assertFalse(any(PASSWORD in ln for ln in self.broker.log_lines))


class MetricsMutualTlsTest(SecureMetricsCase):
    @classmethod
    def extra(cls, pki):
        return {"metrics.ssl.client.auth": "required",
                "metrics.ssl.truststore.location": pki["ca"]}

    def test_a_client_certificate_is_required(self):
        with self.assertRaises((ssl.SSLError, ConnectionError, http.client.HTTPException)):
            request(self.ep, ctx=self.ctx)  # no certificate
        untrusted = ssl.create_default_context(cafile=self.pki["ca"])
        untrusted.load_cert_chain(self.pki["mallory_crt"], self.pki["mallory_key"])
        with self.assertRaises((ssl.SSLError, ConnectionError, http.client.HTTPException)):
            request(self.ep, ctx=untrusted)
        good = ssl.create_default_context(cafile=self.pki["ca"])
        good.load_cert_chain(self.pki["alice_crt"], self.pki["alice_key"])
        status, _, body = request(self.ep, ctx=good)
        self.assertEqual(status, 200)
        self.assertIn("strata_requests_total", parse_exposition(body)[0])
        kafka_round_trip(self, self.broker)


class MetricsSecurityConfigTest(unittest.TestCase):
    def assert_start_fails(self, overrides, *expected):
        """The broker exits at once (2: a bad config value, 1: the TLS context failed to build)
        with a message holding every `expected` part."""
        data = tempfile.mkdtemp(prefix="strata-it-")
        try:
            args = [harness.BROKER, "--override", "listeners=PLAINTEXT://127.0.0.1:0",
                    "--override", "metrics.listener=127.0.0.1:0",
                    "--override", "log.dirs=" + data]
            for k, v in overrides.items():
                args += ["--override", "%s=%s" % (k, v)]
            p = subprocess.run(args, capture_output=True, text=True, timeout=30)
        finally:
            shutil.rmtree(data, ignore_errors=True)
        self.assertIn(p.returncode, (1, 2), p.stdout + p.stderr)
        out = p.stdout + p.stderr
        for part in expected:
            self.assertIn(part, out)
        return out

    def test_bad_settings_stop_the_start_naming_the_key(self):
        self.assert_start_fails({"metrics.ssl.enabled": "true"},
                                "metrics.ssl.keystore.location")
        self.assert_start_fails({"metrics.ssl.enabled": "true",
                                 "metrics.ssl.keystore.location": "/nonexistent/metrics.pem"},
                                "metrics.ssl.keystore.location /nonexistent/metrics.pem")
        out = self.assert_start_fails({"metrics.basic.auth.password": "lonely-secret"},
                                      "metrics.basic.auth.user")
        self.assertNotIn("lonely-secret", out)
        self.assert_start_fails({"metrics.basic.auth.user": "prom"}, "metrics.basic.auth.password")

    def test_tls_off_ignores_the_tls_keys(self):
        b = harness.BrokerProcess(overrides={
            "metrics.ssl.keystore.location": "/nonexistent/metrics.pem"})
        try:
            b.start()
            ep = endpoint(b)
            self.assertEqual(ep[0], "http")
            self.assertEqual(request(ep)[0], 200)
        finally:
            b.stop()
            b.cleanup()


if __name__ == "__main__":
    unittest.main()
