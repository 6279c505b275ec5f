"""The Schema Registry's security (docs/schema-registry.md, "Security"): one broker serves it over
HTTPS (schema.registry.ssl.*, certificates made by openssl in the test) with HTTP basic auth of the
broker's SCRAM users (schema.registry.authentication.method=basic) and the ACL authorizer, so a
subject is governed by the ACLs of its topic.

- credentials: none, a wrong password, an unknown user → 401 with Confluent's JSON error and
  WWW-Authenticate; plain HTTP to the TLS port fails for that connection only; the Kafka port
  keeps serving;
- confluent-kafka's SchemaRegistryClient (basic.auth.user.info, ssl.ca.location): the producer
  (WRITE on the topic) registers, the reader (READ) cannot (403, 40301) but reads the subject and
  its schema by id; listings leave out other topics' subjects; an ACL added with `strata acl add`
  applies to the next request;
- KafkaJS's registry client (auth, NODE_EXTRA_CA_CERTS) registers, encodes and decodes as the
  producer, and gets 403 / 401 as the reader / with a wrong password;
- the `strata schema` CLI over HTTPS (--registry-ca-file) with basic auth (--registry-user,
  --registry-password-file): registers and reads where the ACLs allow, the registry's 401 / 40301
  as exit 1, an untrusted certificate as exit 3;
- a password changed or a user deleted with `strata user` takes effect at the next request;
- bad settings stop the start with a message naming the key."""
import base64
import json
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import unittest
import urllib.error
import urllib.request

import harness
import itutil
import tls_util
from itutil import BrokerTestCase, unique_topic

CLI = os.environ.get("STRATA_CLI") or os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    "build", "tools", "cli", "strata")
CT = "application/vnd.schemaregistry.v1+json"
USERS = {"admin": "admin-pw", "producer": "producer-pw", "reader": "reader-pw"}
AVRO = json.dumps({"type": "record", "name": "Txn", "namespace": "strata.sec",
                   "fields": [{"name": "amount", "type": "double"}]})


class RegistrySecurityTest(BrokerTestCase):
    @classmethod
    def setUpClass(cls):
        cls.pki_root = tempfile.mkdtemp(prefix="strata-pki-")
        cls.pki = tls_util.make_pki(cls.pki_root)
        cls.overrides = {
            "schema.registry.listener": "https://127.0.0.1:0",
            "schema.registry.ssl.keystore.location": cls.pki["server"],
            "schema.registry.authentication.method": "basic",
            "authorizer.class.name": "strata",
            # ANONYMOUS: the plain Kafka listener this test administers ACLs and users through.
            "super.users": "User:admin;User:ANONYMOUS",
            "sasl.scram.bootstrap.users": ";".join(
                "SCRAM-SHA-512=[name=%s,password=%s]" % kv for kv in USERS.items()),
        }
        super().setUpClass()
        cls.url = itutil.registry_url(cls.broker)
        cls.ctx = ssl.create_default_context(cafile=cls.pki["ca"])

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        shutil.rmtree(cls.pki_root, ignore_errors=True)

    def call(self, method, path, auth=None, body=None):
        """(HTTP status, parsed JSON body, headers) of one request."""
        headers = {"Content-Type": CT, "Accept": CT}
        if auth is not None:
            headers["Authorization"] = "Basic " + base64.b64encode(
                ("%s:%s" % auth).encode()).decode()
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=10, context=self.ctx) as r:
                return r.status, json.loads(r.read().decode()), r.headers
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read().decode()), e.headers

    def as_user(self, user):
        return (user, USERS[user])

    def cli(self, *args):
        p = subprocess.run([CLI, "-b", self.broker.bootstrap] + list(args),
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout

    def grant(self, user, operation, topic):
        self.cli("acl", "add", "--allow-principal", "User:" + user, "--operation", operation,
                 "--topic", topic)

    def client(self, user, password=None):
        from confluent_kafka.schema_registry import SchemaRegistryClient
        # requests lets these variables override a session's CA file (psf/requests#3829), so
        # ssl.ca.location would be ignored on machines that set them.
        for var in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
            os.environ.pop(var, None)
        return SchemaRegistryClient({
            "url": self.url, "ssl.ca.location": self.pki["ca"],
            "basic.auth.user.info": "%s:%s" % (user, password or USERS[user])})

    def test_requests_without_valid_credentials_get_401(self):
        self.assertTrue(self.url.startswith("https://"), self.url)
        for auth in [None, ("producer", "wrong"), ("nobody", "producer-pw"),
                     ("producer", "producer-pw" + "x"), ("producer", "")]:
            status, body, headers = self.call("GET", "/subjects", auth=auth)
            self.assertEqual((status, body["error_code"]), (401, 401), auth)
            self.assertIn("Basic", headers.get("WWW-Authenticate", ""))
        status, body, _ = self.call("GET", "/subjects", auth=self.as_user("reader"))
        self.assertEqual(status, 200, body)
        # Plain HTTP to the TLS port: that connection fails, nothing else.
        port = int(self.url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"GET /subjects HTTP/1.1\r\nHost: x\r\n\r\n")
            try:
                got = s.recv(100)
            except OSError:
                got = b""
            self.assertNotIn(b"200", got)
        self.assertEqual(self.call("GET", "/subjects", auth=self.as_user("reader"))[0], 200)
        itutil.ck_create_topic(self.broker.bootstrap, unique_topic("regsec-kafka"))
        self.assertIn("basic auth", "\n".join(self.broker.log_lines))
        self.assertNotIn("producer-pw", "\n".join(self.broker.log_lines))

    def test_confluent_kafka_client_follows_the_topics_acls(self):
        from confluent_kafka.schema_registry import Schema
        from confluent_kafka.schema_registry.error import SchemaRegistryError
        topic, other = unique_topic("regsec-ck"), unique_topic("regsec-other")
        self.grant("producer", "Write", topic)
        self.grant("reader", "Read", topic)
        producer, reader = self.client("producer"), self.client("reader")
        sid = producer.register_schema(topic + "-value", Schema(AVRO, "AVRO"))
        self.client("admin").register_schema(other + "-value", Schema(AVRO, "AVRO"))
        with self.assertRaises(SchemaRegistryError) as e:
            reader.register_schema(topic + "-value", Schema(AVRO, "AVRO"))
        self.assertEqual((e.exception.http_status_code, e.exception.error_code), (403, 40301))
        with self.assertRaises(SchemaRegistryError) as e:
            producer.register_schema(other + "-value", Schema(AVRO, "AVRO"))
        self.assertEqual(e.exception.http_status_code, 403)
        latest = reader.get_latest_version(topic + "-value")
        self.assertEqual((latest.schema_id, latest.version), (sid, 1))
        self.assertEqual(json.loads(reader.get_schema(sid).schema_str), json.loads(AVRO))
        subjects = reader.get_subjects()
        self.assertIn(topic + "-value", subjects)
        self.assertNotIn(other + "-value", subjects)
        self.assertIn(other + "-value", self.client("admin").get_subjects())
        with self.assertRaises(SchemaRegistryError) as e:
            self.client("reader").get_latest_version(other + "-value")
        self.assertEqual(e.exception.http_status_code, 403)
        # An ACL added now applies to the next request.
        self.grant("reader", "Describe", other)
        self.assertEqual(self.client("reader").get_latest_version(other + "-value").version, 1)
        self.assertIn(other + "-value", self.client("reader").get_subjects())
        # Deleting needs DELETE on the topic.
        status, body, _ = self.call("DELETE", "/subjects/%s-value" % topic,
                                    auth=self.as_user("producer"))
        self.assertEqual((status, body["error_code"]), (403, 40301))
        self.assertIn("authorization denied: principal=User:producer",
                      "\n".join(self.broker.log_lines))

    def test_kafkajs_registry_client_with_auth_over_https(self):
        topic = unique_topic("regsec-js")
        self.grant("producer", "Write", topic)
        # On a subject's first registration KafkaJS's client also sets its compatibility level
        # (PUT /config/{subject}): a config change.
        self.grant("producer", "AlterConfigs", topic)
        js = os.path.join(os.path.dirname(os.path.abspath(__file__)), "js", "registry_auth.js")
        env = dict(os.environ, NODE_EXTRA_CA_CERTS=self.pki["ca"])

        def run(user, password):
            r = subprocess.run(["node", js, self.url, user, password, topic + "-value"],
                               capture_output=True, text=True, timeout=120, env=env)
            self.assertEqual(r.returncode, 0, r.stderr[-3000:])
            return json.loads(r.stdout.strip().splitlines()[-1])

        ok = run("producer", USERS["producer"])
        self.assertEqual(ok.get("decoded"), {"account": "a", "score": 1.5}, ok)
        status, body, _ = self.call("GET", "/schemas/ids/%d" % ok["id"],
                                    auth=self.as_user("producer"))
        self.assertEqual(status, 200, body)
        self.assertEqual(run("reader", USERS["reader"]).get("status"), 403)
        self.assertEqual(run("producer", "wrong").get("status"), 401)

    def test_strata_schema_cli_over_https_with_basic_auth(self):
        topic = unique_topic("regsec-cli")
        self.grant("producer", "Write", topic)
        d = self.broker.data_dir
        pwfile, schema_file = os.path.join(d, "producer.pw"), os.path.join(d, "txn.avsc")
        with open(pwfile, "w") as f:
            f.write(USERS["producer"] + "\n")
        with open(schema_file, "w") as f:
            f.write(AVRO)
        ca = ["--registry-ca-file", self.pki["ca"]]
        producer = ["--registry-user", "producer", "--registry-password-file", pwfile]

        def run(*args):
            p = subprocess.run([CLI, "-o", "json", "schema"] + list(args) +
                               ["--registry", self.url], capture_output=True, text=True,
                               timeout=60)
            return p.returncode, p.stdout + p.stderr

        rc, out = run("register", topic + "-value", "-f", schema_file, *producer, *ca)
        self.assertEqual(rc, 0, out)
        sid = json.loads(out)["id"]
        rc, out = run("get", topic + "-value", *producer, *ca)
        self.assertEqual((rc, json.loads(out)["id"]), (0, sid), out)
        rc, out = run("list", "--registry-user", "producer", "--registry-password", "wrong", *ca)
        self.assertEqual(rc, 1, out)
        self.assertIn("SCHEMA_REGISTRY_401", out)
        rc, out = run("list", *ca)
        self.assertEqual(rc, 1, out)
        self.assertIn("SCHEMA_REGISTRY_401", out)
        rc, out = run("get", topic + "-value", "--registry-user", "reader",
                      "--registry-password", USERS["reader"], *ca)
        self.assertEqual(rc, 1, out)
        self.assertIn("SCHEMA_REGISTRY_40301", out)
        rc, out = run("list", *producer)  # the system's CAs do not know the test CA
        self.assertEqual(rc, 3, out)
        self.assertIn("CONNECTION", out)
        rc, out = run("list", "--registry-user", "producer", *ca)
        self.assertEqual(rc, 1, out)
        self.assertIn("--registry-password", out)
        rc, out = run("list", *producer, "--registry-ca-file", os.path.join(d, "absent.pem"))
        self.assertEqual(rc, 2, out)  # a usage error, like any file option naming no file
        self.assertIn("absent.pem", out)

    def test_password_changes_and_deleted_users_apply_at_once(self):
        topic = unique_topic("regsec-pw")
        self.grant("carol", "Read", topic)
        self.cli("user", "create", "carol", "--password", "first")
        self.assertEqual(self.call("GET", "/subjects", auth=("carol", "first"))[0], 200)
        self.cli("user", "create", "carol", "--password", "second")
        self.assertEqual(self.call("GET", "/subjects", auth=("carol", "first"))[0], 401)
        self.assertEqual(self.call("GET", "/subjects", auth=("carol", "second"))[0], 200)
        self.cli("user", "delete", "carol")
        self.assertEqual(self.call("GET", "/subjects", auth=("carol", "second"))[0], 401)


class RegistrySecuritySettingsTest(unittest.TestCase):
    def test_bad_settings_stop_the_start_naming_the_key(self):
        for overrides, key in [
                ({"schema.registry.listener": "https://127.0.0.1:0"},
                 "schema.registry.ssl.keystore"),
                ({"schema.registry.authentication.method": "digest"},
                 "schema.registry.authentication.method")]:
            args = [harness.BROKER]
            for k, v in overrides.items():
                args += ["--override", "%s=%s" % (k, v)]
            d = tempfile.mkdtemp(prefix="strata-regsec-")
            try:
                p = subprocess.run(args + ["--override", "log.dirs=" + d,
                                           "--override", "listeners=PLAINTEXT://127.0.0.1:0",
                                           "--override", "metrics.listener="],
                                   capture_output=True, text=True, timeout=60)
            finally:
                shutil.rmtree(d, ignore_errors=True)
            self.assertNotEqual(p.returncode, 0, overrides)
            self.assertIn(key, p.stdout + p.stderr)


if __name__ == "__main__":
    unittest.main()
