"""The embedded Schema Registry on a 3-broker cluster (etcd; docs/schema-registry.md, "In a
cluster"): `_schemas` is replicated (replication factor 3) and its leader is the registry's one
writer; every broker serves the REST API, forwarding to the writer.

- Registrations sent to every broker (confluent-kafka's SchemaRegistryClient and plain HTTP)
  get one sequence of unique ids, and every broker answers every read the same;
- compatibility is enforced whichever broker receives the write (409 through a forwarding broker,
  with the writer's reason);
- the writer's broker is killed (kill -9): the registry keeps answering on the two others (a new
  leader of `_schemas` rebuilds the state from its replica), with every schema and id, and new
  registrations never reuse an id; after the killed broker returns, it answers the same.
One cluster for the whole file."""
import json
import os
import sys
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
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
        """The first registration waits for `_schemas` to be created and to elect a leader."""
        deadline = time.time() + DEADLINE
        while True:
            status, body = self.register(node, subject, schema)
            if status == 200 or time.time() > deadline:
                self.assertEqual(status, 200, body)
                return body["id"]
            time.sleep(0.2)

    def writer(self):
        md = cluster_admin(self.cluster.bootstrap()).list_topics("_schemas", timeout=10)
        return md.topics["_schemas"].partitions[0].leader

    def same_everywhere(self, nodes, expected_subjects):
        answers = {}
        for n in nodes:
            status, subjects = self.call(n, "GET", "/subjects")
            self.assertEqual(status, 200, subjects)
            self.assertEqual(sorted(subjects), sorted(expected_subjects), "broker %d" % n)
            versions = {}
            for s in subjects:
                status, v = self.call(n, "GET", "/subjects/%s/versions/latest" % s)
                self.assertEqual(status, 200, v)
                versions[s] = (v["id"], v["version"], json.loads(v["schema"]))
            answers[n] = versions
        first = answers[nodes[0]]
        for n in nodes[1:]:
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
        writer = self.writer()
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

        # kill -9 the writer: the two others go on with the same state, new ids above the old.
        self.cluster.kill(writer)
        survivors = [n for n in nodes if n != writer]
        new_id = self.until_registers(survivors[0], "after-value",
                                      record_schema("After", [("x", "int", None)]))
        self.assertNotIn(new_id, ids.values())
        self.assertGreater(new_id, max(ids.values()))
        ids["after-value"] = new_id
        after = self.same_everywhere(survivors, list(ids))
        for subject in before:
            self.assertEqual(after[subject], before[subject], subject)
        new_writer = self.writer()
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
            if (status == 200 and sorted(subjects) == sorted(ids)) or time.time() > deadline:
                break
            time.sleep(0.2)
        self.assertEqual(self.same_everywhere(nodes, list(ids)), after)


if __name__ == "__main__":
    unittest.main()
