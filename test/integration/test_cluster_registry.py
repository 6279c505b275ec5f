"""The embedded Schema Registry on a 3-broker cluster (etcd; docs/schema-registry.md, "In a
cluster"): `_schemas` is replicated (replication factor 3) and its leader is the registry's one
writer; every broker serves the REST API, forwarding writes to the writer and answering reads
from a copy of its own replica.

- Registrations sent to every broker (confluent-kafka's SchemaRegistryClient and plain HTTP)
  get one sequence of unique ids, and every broker answers every read the same;
- compatibility is enforced whichever broker receives the write (409 through a forwarding broker,
  with the writer's reason);
- the writer's broker is killed (kill -9): reads are answered at once by the two others' copies,
  before a new writer is elected; the registry keeps answering on the two others (a new
  leader of `_schemas` rebuilds the state from its replica), with every schema and id, and new
  registrations never reuse an id; after the killed broker returns, it answers the same;
- a `confluent` table on the cluster: its Avro schema pinned at creation through any broker, writers
  (confluent-kafka's JSONSerializer) registering through others, every partition leader decoding
  their values; after the writer's broker is killed a new writer schema decodes too; the rows
  (read with the Python client) equal the model.
One cluster for the whole file."""
import json
import os
import sys
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "tools", "python"))  # the Python client, strata_client
import itutil  # noqa: E402
from cluster_clients import DEADLINE, SharedClusterCase  # noqa: E402
from cluster_clients import admin as cluster_admin  # noqa: E402

CT = "application/vnd.schemaregistry.v1+json"


def record_schema(name, fields):
    return json.dumps({"type": "record", "name": name,
                       "fields": [{"name": f, "type": t, **({"default": d} if d is not None
                                                            else {})}
                                  for f, t, d in fields]})


class ClusterRegistryTest(SharedClusterCase):
    cluster_props = {
        "schema.registry.listener": "http://127.0.0.1:0",
        "schema.registry.topic.replication.factor": "3",
        "default.replication.factor": "3",
    }

    def url(self, node):
        return itutil.registry_url(self.cluster.broker(node))

    def call(self, node, method, path, body=None, timeout=30):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url(node) + path, data=data, method=method,
                                     headers={"Content-Type": CT})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def register(self, node, subject, schema):
        return self.call(node, "POST", "/subjects/%s/versions" % subject, {"schema": schema})

    def until_registers(self, node, subject, schema):
        return self.until_registered(lambda: self.register(node, subject, schema))

    def same_everywhere(self, nodes, expected_subjects):
        """Every broker lists the same subjects (the expected ones among them) and answers the
        same latest version of each expected one; returns those. Brokers that are not the
        writer read from their copies, which learn a write with their next replica fetch: a
        few tries."""
        deadline = time.time() + 5
        while True:
            try:
                return self.same_everywhere_now(nodes, expected_subjects)
            except AssertionError:
                if time.time() > deadline:
                    raise
                time.sleep(0.1)

    def same_everywhere_now(self, nodes, expected_subjects):
        answers, listed = {}, {}
        for n in nodes:
            status, subjects = self.call(n, "GET", "/subjects")
            self.assertEqual(status, 200, subjects)
            self.assertLessEqual(set(expected_subjects), set(subjects), "broker %d" % n)
            listed[n] = sorted(subjects)
            versions = {}
            for s in expected_subjects:
                status, v = self.call(n, "GET", "/subjects/%s/versions/latest" % s)
                self.assertEqual(status, 200, v)
                versions[s] = (v["id"], v["version"], json.loads(v["schema"]))
            answers[n] = versions
        first = answers[nodes[0]]
        for n in nodes[1:]:
            self.assertEqual(listed[n], listed[nodes[0]])
            self.assertEqual(answers[n], first, "broker %d answers like broker %d" % (n, nodes[0]))
        return first

    def test_every_broker_serves_one_registry_that_survives_its_writer(self):
        from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
        nodes = self.cluster.node_ids
        ids = {}
        ids["s0-value"] = self.until_registers(nodes[0], "s0-value",
                                               record_schema("S0", [("a", "int", None)]))
        # Through each broker in turn, by two clients: forwarded or not, one id sequence.
        for i in range(1, 9):
            n = nodes[i % 3]
            subject = "s%d-value" % i
            schema = record_schema("S%d" % i, [("a", "int", None), ("n%d" % i, "string", None)])
            if i % 2:
                client = SchemaRegistryClient({"url": self.url(n)})
                ids[subject] = client.register_schema(subject, Schema(schema, "AVRO"))
            else:
                status, body = self.register(n, subject, schema)
                self.assertEqual(status, 200, body)
                ids[subject] = body["id"]
        self.assertEqual(len(set(ids.values())), len(ids), "ids are unique: %s" % ids)
        # The same schema under another subject keeps its id, whichever broker is asked.
        status, body = self.register(nodes[2], "copy-value", record_schema(
            "S1", [("a", "int", None), ("n1", "string", None)]))
        self.assertEqual((status, body), (200, {"id": ids["s1-value"]}))
        ids["copy-value"] = ids["s1-value"]

        # BACKWARD (the default) through a broker that is not the writer: the writer's 409.
        writer = self.registry_writer()
        other = next(n for n in nodes if n != writer)
        status, body = self.register(other, "s2-value", record_schema(
            "S2", [("a", "int", None), ("n2", "string", None), ("b", "long", None)]))
        self.assertEqual(status, 409, body)
        self.assertIn("b", body["message"])
        status, body = self.register(other, "s2-value", record_schema(
            "S2", [("a", "int", None), ("n2", "string", None), ("b", "long", 0)]))
        self.assertEqual(status, 200, body)
        ids["s2-value"] = body["id"]
        self.assertEqual(len(set(ids.values())), len(ids) - 1)

        before = self.same_everywhere(nodes, list(ids))
        for subject, (schema_id, _, _) in before.items():
            self.assertEqual(schema_id, ids[subject], subject)
            for n in nodes:
                status, body = self.call(n, "GET", "/schemas/ids/%d" % schema_id)
                self.assertEqual(status, 200, body)

        # kill -9 the writer. Reads go on at once from each survivor's copy of its replica —
        # well before the writer's 2 s lease can run out and a new one be elected, so nothing
        # was forwarded. (Each copy reads up to its replica's high watermark, which a leader
        # sends its followers as soon as it moves.)
        self.cluster.kill(writer)
        killed_at = time.monotonic()
        survivors = [n for n in nodes if n != writer]
        for n in survivors:
            for subject, (schema_id, version, schema) in before.items():
                status, body = self.call(n, "GET", "/schemas/ids/%d" % schema_id, timeout=5)
                self.assertEqual(status, 200, (n, subject, body))
                self.assertEqual(json.loads(body["schema"]), schema, subject)
        self.assertLess(time.monotonic() - killed_at, 1.5,
                        "reads during the failover were answered by the survivors' copies")
        new_id = self.until_registers(survivors[0], "after-value",
                                      record_schema("After", [("x", "int", None)]))
        self.assertNotIn(new_id, ids.values())
        self.assertGreater(new_id, max(ids.values()))
        ids["after-value"] = new_id
        after = self.same_everywhere(survivors, list(ids))
        for subject in before:
            self.assertEqual(after[subject], before[subject], subject)
        new_writer = self.registry_writer()
        self.assertIn(new_writer, survivors)
        self.assertTrue(any("this broker is the writer" in line
                            for line in self.cluster.broker(new_writer).log_lines),
                        "the new leader of _schemas rebuilt the registry and writes")

        # The killed broker comes back (a follower now) and answers the same.
        self.cluster.start(writer)
        self.cluster.wait_ready()
        deadline = time.time() + DEADLINE
        while True:
            status, subjects = self.call(writer, "GET", "/subjects")
            if (status == 200 and set(ids) <= set(subjects)) or time.time() > deadline:
                break
            time.sleep(0.2)
        self.assertEqual(self.same_everywhere(nodes, list(ids)), after)

    def test_a_confluent_table_on_the_cluster(self):
        """A `confluent` table over 3 partitions (replication factor 3): its Avro schema pinned
        through a broker that may not be the writer; JSONSerializer writers registering through another;
        every partition leader decodes the writers' values (schemas read from the registry's
        writer and cached by id); after the writer is killed, a writer schema registered with the
        new writer decodes too, and the rows equal the model."""
        from confluent_kafka.admin import ConfigResource
        from confluent_kafka.schema_registry import SchemaRegistryClient
        from confluent_kafka.schema_registry import topic_record_subject_name_strategy
        from confluent_kafka.schema_registry.json_schema import JSONSerializer
        from confluent_kafka.serialization import MessageField, SerializationContext
        from strata_client import Strata
        nodes = self.cluster.node_ids
        topic = itutil.unique_topic("accounts")
        # An Avro table schema: the changelog is Avro, so followers (the leaders after the
        # writer's loss) decode it with the schema pinned in the table's config.
        table_schema = {"type": "record", "name": "Account",
                        "fields": [{"name": "txn_count", "type": ["null", "long"], "default": None},
                                   {"name": "amount", "type": ["null", "double"],
                                    "default": None}]}
        body = {"schema": json.dumps(table_schema), "schemaType": "AVRO"}
        table_id = self.until_registered(
            lambda: self.call(nodes[1], "POST", "/subjects/%s-value/versions" % topic, body))
        config = {"table.type": "primary-key", "table.value.format": "confluent",
                  "table.value.schema.subject": topic + "-value",
                  "table.merge-engine": "aggregation", "table.fields.txn_count.agg": "sum",
                  "table.fields.amount.agg": "sum"}
        self.create_topic(topic, partitions=3, rf=3, config=config)
        admin = cluster_admin(self.cluster.bootstrap())
        res = ConfigResource(ConfigResource.Type.TOPIC, topic)
        entries = admin.describe_configs([res])[res].result(timeout=30)
        self.assertEqual(entries["table.value.schema.id"].value, str(table_id), "pinned")
        self.assertEqual(json.loads(entries["table.value.schema.avro"].value)["fields"],
                         table_schema["fields"])
        self.wait_metadata(topic, self.fully_in_sync(topic, 3), "the table in sync")
        accounts = ["acct-%02d" % i for i in range(24)]
        model = {}

        def write(node, title, fields, n):
            schema = {"title": title, "type": "object",
                      "properties": {f: {"type": "number"} for f in fields},
                      "required": list(fields)}
            client = SchemaRegistryClient({"url": self.url(node)})
            ser = JSONSerializer(json.dumps(schema), client,
                                 conf={"subject.name.strategy": topic_record_subject_name_strategy})
            ctx = SerializationContext(topic, MessageField.VALUE)
            producer = itutil.ck_producer(self.cluster.bootstrap(), partitioner="murmur2_random",
                                          acks="all")
            items = []
            for i in range(n):
                k = accounts[(i * 5) % len(accounts)]
                value = {f: (1 if f == "txn_count" else 0.5) for f in fields}
                row = model.setdefault(k, {"txn_count": None, "amount": None})
                for f, v in value.items():
                    row[f] = (row[f] or 0) + v
                items.append({"topic": topic, "key": k.encode(), "value": ser(value, ctx)})
            itutil.ck_produce_all(producer, items)

        def check():
            with Strata(self.cluster.bootstrap()) as s:
                rows = s.table(topic).get_many(accounts)
            got = {a: r["value"] for a, r in zip(accounts, rows) if r is not None}
            self.assertEqual(got, model)

        write(nodes[2], "Txn", ["txn_count", "amount"], 600)
        check()
        # An id nobody registered: INVALID_RECORD, whichever broker leads the key.
        from confluent_kafka import KafkaError
        producer = itutil.ck_producer(self.cluster.bootstrap(), acks="all")
        errors = []
        for a in accounts[:6]:
            producer.produce(topic, key=a.encode(), value=b"\x00\x00\x0f\x42\x3f{}",
                             on_delivery=lambda err, msg: errors.append(err))
        producer.flush(30)
        self.assertEqual([e.code() if e else None for e in errors],
                         [KafkaError.INVALID_RECORD] * 6)
        check()
        writer = self.registry_writer()
        self.cluster.kill(writer)
        survivor = next(n for n in nodes if n != writer)
        self.wait_metadata(topic, lambda md: all(
            p.leader not in (writer, -1) for p in self.partitions(md, topic).values()),
            "the table's leaders moved")
        write(survivor, "Count", ["txn_count"], 300)  # a new writer schema, a new id
        check()


if __name__ == "__main__":
    unittest.main()
