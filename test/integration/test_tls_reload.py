"""Certificate reload without a restart, as Kafka's dynamic listener SSL update: an
IncrementalAlterConfigs of `listener.name.ssl.ssl.keystore.location` (or of the trust store)
on BROKER <id> swaps the TLS listener's context. New connections get the new certificate; open
ones keep theirs and keep working. Naming a key again with its current value reloads the file
behind it. Material that does not load, or a certificate whose subject or SANs differ (without
ssl.allow.dn.changes / ssl.allow.san.changes), is refused with INVALID_CONFIG and the old
certificate stays. The change is durable: a restarted broker serves the new certificate."""
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import unittest

import harness
import itutil
import tls_util

CLI = os.environ.get("STRATA_CLI") or os.path.join(harness.ROOT, "build", "tools", "cli", "strata")
KEY = "listener.name.ssl.ssl.keystore.location"


def der_of(pem_path):
    """The DER bytes of the (last) certificate in a PEM file."""
    with open(pem_path) as f:
        text = f.read()
    begin = text.rindex("-----BEGIN CERTIFICATE-----")
    return ssl.PEM_cert_to_DER_cert(text[begin:])


class TlsReloadTest(itutil.BrokerTestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="strata-reload-")
        cls.pki = tls_util.make_pki(cls.dir, clients=())
        cls.overrides = {
            "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
            "ssl.keystore.location": cls.pki["server"],
        }
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def tls_port(self):
        return self.broker.ports["SSL"]

    def served_cert(self, cafile=None):
        """DER of the certificate a new TLS connection to the SSL listener is shown."""
        ctx = ssl.create_default_context(cafile=cafile or self.pki["ca"])
        with socket.create_connection(("127.0.0.1", self.tls_port()), timeout=10) as raw:
            with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
                return s.getpeercert(binary_form=True)

    def cli(self, *args):
        return subprocess.run([CLI, "-b", "127.0.0.1:%d" % self.broker.ports["PLAINTEXT"], *args],
                              capture_output=True, text=True, timeout=60)

    def set_keystore(self, path, key=KEY):
        return self.cli("config", "set", "--broker", "1", "%s=%s" % (key, path))

    def assert_refused(self, res, why):
        self.assertNotEqual(res.returncode, 0, res.stdout)
        self.assertIn("INVALID_CONFIG", res.stderr)
        self.assertIn(why, res.stderr)

    def ck_roundtrip(self, cafile):
        from confluent_kafka import Producer
        topic = itutil.unique_topic("reload")
        conf = {"bootstrap.servers": "127.0.0.1:%d" % self.tls_port(), "acks": "all",
                "security.protocol": "SSL", "ssl.ca.location": cafile,
                "message.timeout.ms": 20000}
        itutil.ck_produce_all(Producer(conf), [{"topic": topic, "value": b"v%d" % i}
                                               for i in range(10)], timeout=30)
        msgs = itutil.ck_consume("127.0.0.1:%d" % self.tls_port(), topic, [0], 10, timeout=30,
                                 **{"security.protocol": "SSL", "ssl.ca.location": cafile})
        self.assertEqual(len(msgs), 10)

    def test_1_new_certificate_reaches_new_connections_only(self):
        before = self.served_cert()
        self.assertEqual(before, der_of(self.pki["server"]))
        # An open TLS connection made before the reload.
        ctx = ssl.create_default_context(cafile=self.pki["ca"])
        raw = socket.create_connection(("127.0.0.1", self.tls_port()), timeout=10)
        held = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
        try:
            rotated = tls_util.server_pem(self.dir, "rotated")
            res = self.set_keystore(rotated)
            self.assertEqual(res.returncode, 0, res.stderr)
            self.assertEqual(self.served_cert(), der_of(rotated))
            self.assertEqual(held.getpeercert(binary_form=True), before)
            # The held connection still speaks Kafka.
            held.sendall(itutil.request_frame(18, 0, 7, b""))
            head = held.recv(8)
            self.assertEqual(len(head), 8)
        finally:
            held.close()
        self.ck_roundtrip(self.pki["ca"])
        self.assertBrokerAlive()

    def test_2_same_path_again_rereads_the_file(self):
        path = tls_util.server_pem(self.dir, "inplace")
        self.assertEqual(self.set_keystore(path).returncode, 0)
        self.assertEqual(self.served_cert(), der_of(path))
        # The file is replaced in place (as cert-manager or certbot do), then named again.
        fresh = tls_util.server_pem(self.dir, "inplace-next")
        shutil.copyfile(fresh, path)
        res = self.set_keystore(path)
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(self.served_cert(), der_of(fresh))

    def test_3_bad_material_is_refused_and_the_old_certificate_stays(self):
        current = self.served_cert()
        missing = os.path.join(self.dir, "no-such.pem")
        self.assert_refused(self.set_keystore(missing), "ssl.keystore.location")
        garbage = os.path.join(self.dir, "garbage.pem")
        with open(garbage, "w") as f:
            f.write("-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n")
        self.assert_refused(self.set_keystore(garbage), "ssl.keystore.location")
        self.assertEqual(self.served_cert(), current)

    def test_4_identity_changes_are_refused(self):
        current = self.served_cert()
        other_dn = tls_util.server_pem(self.dir, "other-dn", subject="/CN=somebody-else")
        self.assert_refused(self.set_keystore(other_dn), "ssl.allow.dn.changes")
        other_san = tls_util.server_pem(self.dir, "other-san", san="IP:127.0.0.1")
        self.assert_refused(self.set_keystore(other_san), "ssl.allow.san.changes")
        self.assertEqual(self.served_cert(), current)

    def test_5_only_tls_listeners_and_only_their_stores(self):
        path = tls_util.server_pem(self.dir, "anywhere")
        self.assert_refused(self.set_keystore(path, "listener.name.plaintext.ssl.keystore.location"),
                            "not a TLS listener")
        # Keys that are not a key or trust store stay read-only per listener.
        res = self.cli("config", "set", "--broker", "1", "listener.name.ssl.ssl.client.auth=required")
        self.assertNotEqual(res.returncode, 0)
        self.assertIn("dynamically", res.stderr)

    def test_6_a_certificate_from_a_new_ca(self):
        ca2 = tls_util.make_ca(self.dir, "ca2", "/CN=Second CA")
        moved = tls_util.server_pem(self.dir, "under-ca2", ca="ca2")
        res = self.set_keystore(moved)
        self.assertEqual(res.returncode, 0, res.stderr)
        with self.assertRaises(ssl.SSLError):
            self.served_cert(cafile=self.pki["ca"])
        self.assertEqual(self.served_cert(cafile=ca2), der_of(moved))
        self.ck_roundtrip(ca2)

    def test_7_describe_and_restart(self):
        path = tls_util.server_pem(self.dir, "durable")
        self.assertEqual(self.set_keystore(path).returncode, 0)
        res = self.cli("-o", "json", "config", "describe", "--broker", "1", KEY)
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertIn(path, res.stdout)
        self.assertIn("DYNAMIC_BROKER_CONFIG", res.stdout)
        self.broker.restart()
        self.assertEqual(self.served_cert(), der_of(path))


if __name__ == "__main__":
    unittest.main()
