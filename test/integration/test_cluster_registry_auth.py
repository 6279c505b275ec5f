"""The Schema Registry over HTTPS with basic auth on a 3-broker cluster (etcd;
docs/schema-registry.md, "Security"): brokers reach each other on a SASL_PLAINTEXT listener as a
SCRAM user, clients use a plain Kafka listener, and every broker's registry is https:// (one test
CA, certificates made by openssl in the test) and requires basic auth of a SCRAM user; brokers
forward to the writer over HTTPS, verifying its certificate.

- every broker refuses a request without valid credentials itself (401), writer or not, and one
  the topic's ACLs (in etcd) do not allow (403);
- a registration through each broker succeeds: the brokers that are not the writer forward the
  client's credentials, which the writer checks again;
- a `confluent` table whose partitions are led by every broker: a writer schema's values decode
  on each leader — the leaders that are not the registry's writer read the schema from it as the
  inter-broker user."""
import base64
import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import itutil  # noqa: E402
import tls_util  # noqa: E402
from cluster_clients import SharedClusterCase  # noqa: E402

CT = "application/vnd.schemaregistry.v1+json"
CLI = os.environ.get("STRATA_CLI") or os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    "build", "tools", "cli", "strata")
ALICE = ("alice", "alice-pw")
SCRAM_JAAS = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
              'username="broker" password="broker-pw";')


class ClusterRegistryAuthTest(SharedClusterCase):
    cluster_props = {
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_PLAINTEXT",
        "inter.broker.listener.name": "INTERNAL",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
        "listener.name.internal.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
        "sasl.scram.bootstrap.users": "SCRAM-SHA-512=[name=broker,password=broker-pw];"
                                      "SCRAM-SHA-512=[name=alice,password=alice-pw]",
        "schema.registry.listener": "https://127.0.0.1:0",
        "schema.registry.authentication.method": "basic",
        "schema.registry.topic.replication.factor": "3",
        "default.replication.factor": "3",
        # ACLs in etcd; brokers are super users (as Kafka expects), and so is ANONYMOUS, the
        # principal of this test's plain Kafka clients.
        "authorizer.class.name": "strata",
        "super.users": "User:broker;User:ANONYMOUS",
    }

    @classmethod
    def setUpClass(cls):
        import cluster_harness
        cls.pki_root = tempfile.mkdtemp(prefix="strata-pki-")
        cls.pki = tls_util.make_pki(cls.pki_root)
        cls.ctx = ssl.create_default_context(cafile=cls.pki["ca"])
        # requests lets these variables override a session's CA file (psf/requests#3829).
        for var in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
            os.environ.pop(var, None)
        props = dict(cls.cluster_props)
        props["schema.registry.ssl.keystore.location"] = cls.pki["server"]
        props["schema.registry.ssl.truststore.location"] = cls.pki["ca"]  # the writer's CA
        cls.etcd = cluster_harness.Etcd().start()
        cls.cluster = cluster_harness.Cluster(3, etcd_endpoints=cls.etcd.endpoint,
                                              extra_props=props)
        for n in cls.cluster.node_ids:  # the inter-broker listener beside the clients' one
            b = cls.cluster.broker(n)
            b.overrides["listeners"] += ",INTERNAL://127.0.0.1:0"
        cls.cluster.start()
        cls.cluster.wait_ready()
        # alice may do everything on topics named auth-*, nothing else.
        p = subprocess.run([CLI, "-b", cls.cluster.address(1), "acl", "add", "--allow-principal",
                            "User:alice", "--operation", "All", "--topic", "auth-",
                            "--resource-pattern-type", "prefixed"],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        shutil.rmtree(cls.pki_root, ignore_errors=True)

    def url(self, node):
        return itutil.registry_url(self.cluster.broker(node))

    def call(self, node, method, path, body=None, auth=ALICE):
        headers = {"Content-Type": CT}
        if auth is not None:
            headers["Authorization"] = "Basic " + base64.b64encode(
                ("%s:%s" % auth).encode()).decode()
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url(node) + path, data=data, method=method,
                                     headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=30, context=self.ctx) as resp:
                return resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def until_registers(self, node, subject, schema):
        return self.until_registered(lambda: self.call(
            node, "POST", "/subjects/%s/versions" % subject, {"schema": schema}))

    def test_credentials_are_checked_by_every_broker_and_forwarded_to_the_writer(self):
        schema = json.dumps({"type": "record", "name": "R",
                             "fields": [{"name": "a", "type": "long"}]})
        ids = {n: self.until_registers(n, "auth-%d-value" % n, schema)
               for n in self.cluster.node_ids}
        self.assertEqual(len(set(ids.values())), 1, "one schema, one id, whoever was asked")
        writer = self.registry_writer()
        self.assertIn(writer, self.cluster.node_ids)
        for n in self.cluster.node_ids:
            for auth in (None, ("alice", "wrong"), ("broker", "alice-pw")):
                status, body = self.call(n, "POST", "/subjects/refused-value/versions",
                                         {"schema": schema}, auth=auth)
                self.assertEqual((status, body["error_code"]), (401, 401), (n, auth))
            status, subjects = self.call(n, "GET", "/subjects")
            self.assertEqual(status, 200, subjects)
            self.assertNotIn("refused-value", subjects)
            # The topic's ACLs, whichever broker is asked (the first broker decides; the writer
            # checks a forwarded request again).
            status, body = self.call(n, "POST", "/subjects/other-%d-value/versions" % n,
                                     {"schema": schema})
            self.assertEqual((status, body["error_code"]), (403, 40301), n)
            status, body = self.call(n, "GET", "/schemas/ids/%d" % ids[n])
            self.assertEqual(status, 200, body)

    def test_every_table_leader_reads_writer_schemas_as_the_inter_broker_user(self):
        from confluent_kafka.schema_registry import SchemaRegistryClient
        from confluent_kafka.schema_registry import topic_record_subject_name_strategy
        from confluent_kafka.schema_registry.json_schema import JSONSerializer
        from confluent_kafka.serialization import MessageField, SerializationContext
        nodes = self.cluster.node_ids
        topic = itutil.unique_topic("auth-accounts")
        table_schema = {"type": "record", "name": "Account",
                        "fields": [{"name": "amount", "type": ["null", "double"],
                                    "default": None}]}
        self.until_registers(nodes[0], topic + "-value", json.dumps(table_schema))
        config = {"table.type": "primary-key", "table.value.format": "confluent",
                  "table.value.schema.subject": topic + "-value",
                  "table.merge-engine": "aggregation", "table.fields.amount.agg": "sum"}
        partitions = 6
        md = self.create_topic(topic, partitions=partitions, rf=3, config=config)
        leaders = {p: pm.leader for p, pm in self.partitions(md, topic).items()}
        writer = self.registry_writer()
        self.assertTrue(any(leader != writer for leader in leaders.values()),
                        "some partition is led by a broker that is not the registry's writer: "
                        "%s, writer %d" % (leaders, writer))
        other = next(n for n in nodes if n != writer)
        client = SchemaRegistryClient({"url": self.url(other), "ssl.ca.location": self.pki["ca"],
                                       "basic.auth.user.info": "%s:%s" % ALICE})
        ser = JSONSerializer(json.dumps({"title": "Txn", "type": "object",
                                         "properties": {"amount": {"type": "number"}},
                                         "required": ["amount"]}), client,
                             conf={"subject.name.strategy": topic_record_subject_name_strategy})
        ctx = SerializationContext(topic, MessageField.VALUE)
        # A PK table's keys are placed by Kafka's murmur2 partitioner (another partition is
        # refused), so many keys reach every partition.
        producer = itutil.ck_producer(self.cluster.bootstrap(), acks="all",
                                      partitioner="murmur2_random")
        delivered = []
        for i in range(120):
            producer.produce(topic, key=b"acct-%d" % i, value=ser({"amount": 1.5}, ctx),
                             on_delivery=lambda err, msg: delivered.append((err, msg.partition())))
        producer.flush(60)
        self.assertEqual(len(delivered), 120)
        self.assertEqual([e for e, _ in delivered if e is not None], [],
                         "every leader decoded the writer's values")
        self.assertEqual({p for _, p in delivered}, set(range(partitions)))


if __name__ == "__main__":
    unittest.main()
