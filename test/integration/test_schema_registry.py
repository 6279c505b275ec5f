"""The embedded Schema Registry (docs/schema-registry.md) on one broker, over HTTP as clients use
it: confluent-kafka's SchemaRegistryClient and plain requests for the rest of Confluent's API.

- Avro schemas register with global ids (the same schema keeps its id across subjects, a second
  registration in a subject adds nothing), versions, /schema and /versions reads;
- BACKWARD (the default) refuses a new field without a default (409) and takes one with a default;
  FORWARD/FULL/NONE and the transitive levels per subject; the compatibility endpoint says why;
- soft and permanent deletes of versions and subjects with Confluent's error codes
  (40401-40408, 42201-42206), READONLY mode, invalid schemas and unsupported types;
- references: `referencedby` lists the schemas naming a version, which cannot be deleted while
  one does (42206);
- kill -9 and restart: everything comes back from `_schemas` and new ids never reuse old ones;
- KafkaJS with @kafkajs/confluent-schema-registry: register, produce Avro and JSON Schema records
  in Confluent's framing, consume and decode them; a librdkafka consumer sees the framing with the
  same id;
- JSON Schemas: confluent-kafka's JSONSerializer registers and writes, its JSONDeserializer reads;
  Confluent's compatibility rules for open and closed content models decide 409s;
- Protobuf: confluent-kafka's ProtobufSerializer registers its file (a base64 descriptor) and the
  well-known file it imports as a reference, writes, its ProtobufDeserializer reads; the same
  file as .proto text is the same schema; Confluent's rules decide 409s; KafkaJS registers .proto
  text and round-trips records;
- the `strata schema` CLI: register (file and stdin), list, get, id, soft and permanent delete,
  the registry's error codes and an unreachable registry as exit codes."""
import json
import os
import subprocess
import time
import unittest
import urllib.error
import urllib.request

import itutil

CLI = os.environ.get("STRATA_CLI") or os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    "build", "tools", "cli", "strata")

CT = "application/vnd.schemaregistry.v1+json"


def avro_record(name, fields):
    return json.dumps({"type": "record", "name": name, "namespace": "strata.test",
                       "fields": fields})


V1 = avro_record("User", [{"name": "id", "type": "long"}, {"name": "name", "type": "string"}])
V2 = avro_record("User", [{"name": "id", "type": "long"}, {"name": "name", "type": "string"},
                          {"name": "email", "type": ["null", "string"], "default": None}])
V3_NO_DEFAULT = avro_record("User", [{"name": "id", "type": "long"},
                                     {"name": "name", "type": "string"},
                                     {"name": "age", "type": "int"}])


class SchemaRegistryTest(itutil.BrokerTestCase):

    def url(self):
        return itutil.registry_url(self.broker)

    def call(self, method, path, body=None):
        """(HTTP status, parsed JSON body) of one request."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url() + path, data=data, method=method,
                                     headers={"Content-Type": CT, "Accept": CT})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                text = r.read().decode()
                self.assertEqual(r.headers.get("Content-Type"), CT)
                try:
                    return r.status, json.loads(text)
                except ValueError:
                    return r.status, text
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read().decode())

    def expect_error(self, status, code, method, path, body=None):
        got_status, got = self.call(method, path, body)
        self.assertEqual((got_status, got.get("error_code")), (status, code), got)
        self.assertTrue(got.get("message"))

    def client(self):
        from confluent_kafka.schema_registry import SchemaRegistryClient
        return SchemaRegistryClient({"url": self.url()})

    def cli(self, *args, stdin=None, registry=None):
        """(exit code, stdout, stderr) of `strata -o json schema ... --registry URL`."""
        p = subprocess.run([CLI, "-o", "json", "schema"] + list(args) +
                           ["--registry", registry or self.url()],
                           input=stdin, capture_output=True, timeout=60, text=True)
        return p.returncode, p.stdout, p.stderr

    def test_cli(self):
        subject = "cli-" + itutil.unique_topic("s")
        path = os.path.join(self.broker.data_dir, "v1.avsc")
        with open(path, "w") as f:
            f.write(V1)
        rc, out, err = self.cli("register", subject, "-f", path)
        self.assertEqual(rc, 0, err)
        sid = json.loads(out)["id"]
        rc, out, _ = self.cli("register", subject, "-f", "-", stdin=V2)
        self.assertEqual(rc, 0)
        rc, out, _ = self.cli("list")
        self.assertIn(subject, json.loads(out))
        rc, out, _ = self.cli("get", subject, "--version", "1")
        got = json.loads(out)
        self.assertEqual((got["version"], got["id"]), (1, sid))
        rc, out, _ = self.cli("id", str(sid))
        self.assertEqual(json.loads(json.loads(out)["schema"]), json.loads(V1))
        # BACKWARD refuses a field without a default: the registry's code, exit 1.
        rc, out, err = self.cli("register", subject, "-f", "-", stdin=V3_NO_DEFAULT)
        self.assertEqual(rc, 1)
        self.assertIn("SCHEMA_REGISTRY_409", err)
        self.assertEqual(json.loads(out)["error"]["name"], "SCHEMA_REGISTRY_409")
        rc, out, _ = self.cli("delete", subject, "--version", "2")
        self.assertEqual((rc, json.loads(out)), (0, 2))
        rc, out, _ = self.cli("delete", subject)
        self.assertEqual(rc, 0)
        self.assertIn(1, json.loads(out))
        rc, out, _ = self.cli("delete", subject, "--permanent")
        self.assertEqual(rc, 0)
        rc, _, err = self.cli("get", subject)
        self.assertEqual(rc, 1)
        self.assertIn("SCHEMA_REGISTRY_40401", err)
        rc, _, err = self.cli("list", registry="http://127.0.0.1:1")
        self.assertEqual(rc, 3, err)

    def test_register_read_and_ids_with_confluent_kafkas_client(self):
        from confluent_kafka.schema_registry import Schema
        # Schemas of their own: the broker (and its registry) is shared by the class.
        V1 = avro_record("Reader", [{"name": "id", "type": "long"}])
        V2 = avro_record("Reader", [{"name": "id", "type": "long"},
                                    {"name": "x", "type": "int", "default": 0}])
        c = self.client()
        sid = c.register_schema("users-value", Schema(V1, "AVRO"))
        self.assertEqual(c.register_schema("users-value", Schema(V1, "AVRO")), sid,
                         "registering the same schema again adds nothing")
        self.assertEqual(c.register_schema("users-copy", Schema(V1, "AVRO")), sid,
                         "the same schema keeps its id under another subject")
        fetched = c.get_schema(sid)
        self.assertEqual(json.loads(fetched.schema_str), json.loads(V1))
        latest = c.get_latest_version("users-value")
        self.assertEqual((latest.schema_id, latest.version), (sid, 1))
        self.assertIn("users-value", c.get_subjects())
        self.assertEqual(self.call("GET", "/subjects/users-value/versions"), (200, [1]))
        st, raw = self.call("GET", "/subjects/users-value/versions/1/schema")
        self.assertEqual((st, raw), (200, json.loads(V1)))
        st, vs = self.call("GET", "/schemas/ids/%d/versions" % sid)
        self.assertEqual(sorted((v["subject"], v["version"]) for v in vs),
                         [("users-copy", 1), ("users-value", 1)])
        self.assertEqual(self.call("GET", "/schemas/types"), (200, ["JSON", "PROTOBUF", "AVRO"]))
        st, found = self.call("POST", "/subjects/users-value", {"schema": V1})
        self.assertEqual((st, found["id"], found["version"]), (200, sid, 1))
        self.expect_error(404, 40403, "POST", "/subjects/users-value", {"schema": V2})
        self.expect_error(404, 40401, "GET", "/subjects/nobody/versions")
        self.expect_error(404, 40402, "GET", "/subjects/users-value/versions/7")
        self.expect_error(422, 42202, "GET", "/subjects/users-value/versions/zero")
        self.expect_error(404, 40403, "GET", "/schemas/ids/9999")

    def test_backward_compatibility_and_levels(self):
        subject = "compat-value"
        self.assertEqual(self.call("POST", "/subjects/%s/versions" % subject,
                                   {"schema": V1})[0], 200)
        self.expect_error(409, 409, "POST", "/subjects/%s/versions" % subject,
                          {"schema": V3_NO_DEFAULT})
        st, verdict = self.call("POST", "/compatibility/subjects/%s/versions/latest?verbose=true" %
                                subject, {"schema": V3_NO_DEFAULT})
        self.assertEqual((st, verdict["is_compatible"]), (200, False))
        self.assertTrue(any("age" in m for m in verdict["messages"]), verdict)
        st, body = self.call("POST", "/subjects/%s/versions" % subject, {"schema": V2})
        self.assertEqual(st, 200, body)
        self.assertEqual(self.call("GET", "/subjects/%s/versions" % subject), (200, [1, 2]))
        # FORWARD: the old schema must read new data; dropping a field without default is fine for
        # the old reader only if it has a default there: `name` has none.
        self.assertEqual(self.call("PUT", "/config/%s" % subject, {"compatibility": "FORWARD"}),
                         (200, {"compatibility": "FORWARD"}))
        only_id = avro_record("User", [{"name": "id", "type": "long"},
                                       {"name": "email", "type": ["null", "string"],
                                        "default": None}])
        self.expect_error(409, 409, "POST", "/subjects/%s/versions" % subject, {"schema": only_id})
        self.assertEqual(self.call("GET", "/config/%s" % subject),
                         (200, {"compatibilityLevel": "FORWARD"}))
        self.expect_error(404, 40408, "GET", "/config/never-configured")
        self.assertEqual(self.call("GET", "/config/never-configured?defaultToGlobal=true"),
                         (200, {"compatibilityLevel": "BACKWARD"}))
        self.expect_error(422, 42203, "PUT", "/config/%s" % subject, {"compatibility": "SIDEWAYS"})
        self.assertEqual(self.call("PUT", "/config/%s" % subject, {"compatibility": "NONE"})[0],
                         200)
        self.assertEqual(self.call("POST", "/subjects/%s/versions" % subject,
                                   {"schema": only_id})[0], 200, "NONE takes anything valid")
        self.assertEqual(self.call("DELETE", "/config/%s" % subject),
                         (200, {"compatibilityLevel": "NONE"}))
        self.assertEqual(self.call("GET", "/config"), (200, {"compatibilityLevel": "BACKWARD"}))
        # Transitive: v1 (id, name) -> v2 (id, age with default) is BACKWARD, and a v3 reading
        # only v2 is fine, but not v1's data if it drops the default.
        t = "transitive-value"
        self.assertEqual(self.call("PUT", "/config/%s" % t,
                                   {"compatibility": "BACKWARD_TRANSITIVE"})[0], 200)
        a = avro_record("T", [{"name": "x", "type": "int"}])
        b = avro_record("T", [{"name": "x", "type": "int"},
                              {"name": "y", "type": "int", "default": 1}])
        c = avro_record("T", [{"name": "x", "type": "int"}, {"name": "y", "type": "int"}])
        for s in (a, b):
            self.assertEqual(self.call("POST", "/subjects/%s/versions" % t, {"schema": s})[0], 200)
        self.expect_error(409, 409, "POST", "/subjects/%s/versions" % t, {"schema": c})

    def test_references_and_referencedby(self):
        addr_subject = "addr-" + itutil.unique_topic("r")
        user_subject = "user-" + itutil.unique_topic("r")
        address = json.dumps({"type": "record", "name": "Address", "namespace": "strata.ref",
                              "fields": [{"name": "city", "type": "string"}]})
        user = json.dumps({"type": "record", "name": "Person", "namespace": "strata.ref",
                           "fields": [{"name": "home", "type": "strata.ref.Address"}]})
        st, got = self.call("POST", "/subjects/%s/versions" % addr_subject, {"schema": address})
        self.assertEqual(st, 200, got)
        refs = [{"name": "strata.ref.Address", "subject": addr_subject, "version": 1}]
        st, got = self.call("POST", "/subjects/%s/versions" % user_subject,
                            {"schema": user, "references": refs})
        self.assertEqual(st, 200, got)
        user_id = got["id"]
        st, got = self.call("GET", "/subjects/%s/versions/1/referencedby" % addr_subject)
        self.assertEqual((st, got), (200, [user_id]))
        st, got = self.call("GET", "/subjects/%s/versions/latest/referencedby" % user_subject)
        self.assertEqual((st, got), (200, []))
        self.expect_error(404, 40401, "GET", "/subjects/nope-%s/versions/1/referencedby" % user_id)
        # A referenced schema cannot be deleted while a live schema references it.
        self.expect_error(422, 42206, "DELETE", "/subjects/%s/versions/1" % addr_subject)
        self.expect_error(422, 42206, "DELETE", "/subjects/%s" % addr_subject)
        st, _ = self.call("DELETE", "/subjects/%s/versions/1" % user_subject)
        self.assertEqual(st, 200)
        st, got = self.call("GET", "/subjects/%s/versions/1/referencedby" % addr_subject)
        self.assertEqual((st, got), (200, []))
        st, got = self.call("DELETE", "/subjects/%s/versions/1" % addr_subject)
        self.assertEqual((st, got), (200, 1))

    def test_deletes_modes_and_bad_input(self):
        s = "del-value"
        for schema in (V1, V2):
            self.assertEqual(self.call("POST", "/subjects/%s/versions" % s,
                                       {"schema": schema})[0], 200)
        self.expect_error(404, 40407, "DELETE", "/subjects/%s/versions/1?permanent=true" % s)
        self.assertEqual(self.call("DELETE", "/subjects/%s/versions/1" % s), (200, 1))
        self.expect_error(404, 40406, "DELETE", "/subjects/%s/versions/1" % s)
        self.assertEqual(self.call("GET", "/subjects/%s/versions" % s), (200, [2]))
        self.assertEqual(self.call("GET", "/subjects/%s/versions?deleted=true" % s), (200, [1, 2]))
        self.assertEqual(self.call("DELETE", "/subjects/%s/versions/1?permanent=true" % s),
                         (200, 1))
        self.assertEqual(self.call("GET", "/subjects/%s/versions?deleted=true" % s), (200, [2]))
        self.expect_error(404, 40405, "DELETE", "/subjects/%s?permanent=true" % s)
        self.assertEqual(self.call("DELETE", "/subjects/%s" % s), (200, [2]))
        self.expect_error(404, 40404, "DELETE", "/subjects/%s" % s)
        self.assertNotIn(s, self.call("GET", "/subjects")[1])
        self.assertIn(s, self.call("GET", "/subjects?deleted=true")[1])
        self.assertEqual(self.call("DELETE", "/subjects/%s?permanent=true" % s), (200, [2]))
        self.assertNotIn(s, self.call("GET", "/subjects?deleted=true")[1])

        self.expect_error(422, 42201, "POST", "/subjects/bad-value/versions",
                          {"schema": '{"type": "record", "name": "1bad", "fields": []}'})
        self.expect_error(422, 42201, "POST", "/subjects/bad-value/versions",
                          {"schema": '{"type": "nosuchtype"}'})
        self.expect_error(422, 42201, "POST", "/subjects/bad-value/versions",
                          {"schema": '{"type": "objekt"}', "schemaType": "JSON"})
        self.expect_error(422, 42201, "POST", "/subjects/bad-value/versions",
                          {"schema": 'syntax = "proto3"; message M { int32 x = ; }',
                           "schemaType": "PROTOBUF"})
        self.expect_error(422, 42201, "POST", "/subjects/bad-value/versions", {"schema": ""})
        self.expect_error(400, 400, "POST", "/subjects/bad-value/versions", ["not", "an object"])

        self.assertEqual(self.call("PUT", "/mode", {"mode": "READONLY"}),
                         (200, {"mode": "READONLY"}))
        try:
            self.expect_error(422, 42205, "POST", "/subjects/ro-value/versions", {"schema": V1})
        finally:
            self.assertEqual(self.call("PUT", "/mode", {"mode": "READWRITE"})[0], 200)
        self.expect_error(422, 42204, "PUT", "/mode", {"mode": "SOMETIMES"})
        self.assertEqual(self.call("POST", "/subjects/ro-value/versions", {"schema": V1})[0], 200)

    def run_kafkajs(self, fmt):
        topic = itutil.unique_topic("sr-js")
        js = os.path.join(os.path.dirname(os.path.abspath(__file__)), "js", "schema_registry.js")
        r = subprocess.run(["node", js, self.broker.bootstrap, self.url(), topic, fmt],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        out = json.loads(r.stdout.strip().splitlines()[-1])
        self.assertEqual(out["again"], out["id"], "the same schema registered twice: one id")
        # (Protobuf's proto3 decoders leave a default-valued field out.)
        self.assertEqual(sorted((d["account"], d.get("score", 0)) for d in out["decoded"]),
                         sorted(("acct-%d" % (i % 5), i / 4) for i in range(20)))
        self.assertTrue(out["refused"], "a new required field is not BACKWARD compatible")
        self.assertIn("incompatible", out["message"].lower())
        # What KafkaJS wrote is Confluent's framing: magic 0, the schema id, the body.
        values = [m.value() for m in itutil.ck_consume_to_end(self.broker.bootstrap, topic)]
        self.assertEqual(len(values), 20)
        for v in values:
            self.assertEqual(v[0], 0)
            self.assertEqual(int.from_bytes(v[1:5], "big"), out["id"])
        st, by_id = self.call("GET", "/schemas/ids/%d" % out["id"])
        self.assertEqual(st, 200)
        return out, by_id, values

    def test_kafkajs_avro_round_trip_through_the_registry(self):
        _, by_id, _ = self.run_kafkajs("AVRO")
        self.assertEqual(json.loads(by_id["schema"])["name"], "Risk")
        self.assertNotIn("schemaType", by_id)

    def test_kafkajs_json_schema_round_trip_through_the_registry(self):
        _, by_id, values = self.run_kafkajs("JSON")
        self.assertEqual(by_id["schemaType"], "JSON")
        self.assertFalse(json.loads(by_id["schema"])["additionalProperties"])
        self.assertEqual(json.loads(values[0][5:])["account"], "acct-0", "a JSON body")

    def test_json_schemas_with_confluent_kafkas_serializers(self):
        from confluent_kafka import Producer
        from confluent_kafka.schema_registry import Schema
        from confluent_kafka.schema_registry.error import SchemaRegistryError
        from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
        from confluent_kafka.serialization import MessageField, SerializationContext
        topic = itutil.unique_topic("sr-json")
        subject = topic + "-value"
        txn = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Txn",
               "type": "object",
               "properties": {"account": {"type": "string"}, "amount": {"type": "number"},
                              "txn_count": {"type": "integer", "minimum": 0}},
               "required": ["account", "amount"]}
        c = self.client()
        ser = JSONSerializer(json.dumps(txn), c)
        ctx = SerializationContext(topic, MessageField.VALUE)
        p = Producer({"bootstrap.servers": self.broker.bootstrap})
        sent = [{"account": "a%d" % (i % 3), "amount": i * 1.5, "txn_count": 1} for i in range(12)]
        for v in sent:
            p.produce(topic, key=v["account"].encode(), value=ser(v, ctx))
        self.assertEqual(p.flush(30), 0)
        latest = c.get_latest_version(subject)
        self.assertEqual(latest.schema.schema_type, "JSON")
        self.assertEqual(json.loads(latest.schema.schema_str), txn, "kept as registered")
        de = JSONDeserializer(json.dumps(txn))
        msgs = itutil.ck_consume_to_end(self.broker.bootstrap, topic)
        self.assertEqual([de(m.value(), ctx) for m in msgs], sent)
        self.assertTrue(all(int.from_bytes(m.value()[1:5], "big") == latest.schema_id
                            for m in msgs))
        # Open content model (no additionalProperties): adding a typed property is refused,
        # removing one and widening integer -> number are not.
        added = dict(txn, properties=dict(txn["properties"], risk={"type": "number"}))
        with self.assertRaises(SchemaRegistryError) as cm:
            c.register_schema(subject, Schema(json.dumps(added), "JSON"))
        self.assertEqual(cm.exception.error_code, 409)
        self.assertIn("PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL at #/properties/risk",
                      cm.exception.error_message)
        st, why = self.call("POST", "/compatibility/subjects/%s/versions/latest?verbose=true"
                            % subject, {"schema": json.dumps(added), "schemaType": "JSON"})
        self.assertEqual((st, why["is_compatible"]), (200, False))
        widened = dict(txn, properties={"account": {"type": "string"},
                                        "amount": {"type": "number"},
                                        "txn_count": {"type": "number"}})
        v2 = c.register_schema(subject, Schema(json.dumps(widened), "JSON"))
        self.assertNotEqual(v2, latest.schema_id)
        self.assertEqual(self.call("GET", "/subjects/%s/versions" % subject), (200, [1, 2]))
        # Lookup compares the normalized text: whitespace and indentation do not matter.
        st, found = self.call("POST", "/subjects/" + subject,
                              {"schema": json.dumps(widened, indent=4), "schemaType": "JSON"})
        self.assertEqual((st, found["id"], found["version"]), (200, v2, 2))
        self.expect_error(422, 42201, "POST", "/subjects/" + subject,
                          {"schema": json.dumps(widened)})  # read as AVRO: not a valid schema

    def test_kafkajs_protobuf_round_trip_through_the_registry(self):
        _, by_id, values = self.run_kafkajs("PROTOBUF")
        self.assertEqual(by_id["schemaType"], "PROTOBUF")
        self.assertIn("message Risk {", by_id["schema"], "served as .proto text")
        # KafkaJS writes no message indexes: the body starts with field 1's tag.
        self.assertEqual(values[1][5], 0x0A)

    PROTO_TXN = """syntax = "proto3";
package strata.it;
import "google/protobuf/wrappers.proto";
message Txn {
  string account = 1;
  double amount = 2;
  google.protobuf.Int64Value txn_count = 3;
}
message Note {
  string text = 1;
}
"""

    def test_protobuf_with_confluent_kafkas_serializers(self):
        import tempfile
        from confluent_kafka import Producer
        from confluent_kafka.schema_registry import Schema, SchemaReference
        from confluent_kafka.schema_registry.error import SchemaRegistryError
        from confluent_kafka.schema_registry.protobuf import (ProtobufDeserializer,
                                                              ProtobufSerializer)
        from confluent_kafka.serialization import MessageField, SerializationContext
        with tempfile.TemporaryDirectory() as d:
            pb = itutil.compile_proto(d, "txn_%s.proto" % itutil.unique_topic("p")[-10:],
                                      self.PROTO_TXN)
        topic = itutil.unique_topic("sr-proto")
        subject = topic + "-value"
        c = self.client()
        ser = ProtobufSerializer(pb.Txn, c)
        ctx = SerializationContext(topic, MessageField.VALUE)
        p = Producer({"bootstrap.servers": self.broker.bootstrap})
        sent = []
        for i in range(12):
            m = pb.Txn(account="a%d" % (i % 3), amount=i * 1.5)
            m.txn_count.value = i
            sent.append(m)
            p.produce(topic, key=m.account.encode(), value=ser(m, ctx))
        self.assertEqual(p.flush(30), 0)
        latest = c.get_latest_version(subject)
        self.assertEqual(latest.schema.schema_type, "PROTOBUF")
        self.assertIn("message Txn {", latest.schema.schema_str, "stored as .proto text")
        refs = [SchemaReference(r["name"], r["subject"], r["version"])
                for r in latest.schema.references]
        self.assertEqual([(r.name, r.subject) for r in refs],
                         [("google/protobuf/wrappers.proto", "google/protobuf/wrappers.proto")])
        de = ProtobufDeserializer(pb.Txn)
        msgs = itutil.ck_consume_to_end(self.broker.bootstrap, topic)
        self.assertEqual([de(m.value(), ctx) for m in msgs], sent)
        self.assertEqual({m.value()[5] for m in msgs}, {0}, "message index [0] as one zero byte")
        # The file as .proto text is the schema the descriptor registered.
        st, found = self.call("POST", "/subjects/" + subject, {
            "schema": self.PROTO_TXN, "schemaType": "PROTOBUF",
            "references": [{"name": r.name, "subject": r.subject, "version": r.version}
                           for r in refs]})
        self.assertEqual((st, found.get("id")), (200, latest.schema_id), found)
        # Confluent's rules: a field's scalar kind changed is refused, a field added is not.
        changed = self.PROTO_TXN.replace("double amount", "string amount")
        with self.assertRaises(SchemaRegistryError) as cm:
            c.register_schema(subject, Schema(changed, "PROTOBUF", refs))
        self.assertEqual(cm.exception.error_code, 409)
        self.assertIn("FIELD_SCALAR_KIND_CHANGED at #/Txn/2", cm.exception.error_message)
        added = self.PROTO_TXN.replace("  string text = 1;", "  string text = 1;\n  int32 n = 2;")
        v2 = c.register_schema(subject, Schema(added, "PROTOBUF", refs))
        self.assertNotEqual(v2, latest.schema_id)
        # The imported well-known file is a referenced version: it cannot go while used.
        self.expect_error(422, 42206, "DELETE", "/subjects/google%2Fprotobuf%2Fwrappers.proto"
                          "/versions/1")
        self.expect_error(422, 42201, "POST", "/subjects/" + subject + "/versions",
                          {"schema": "message {", "schemaType": "PROTOBUF"})
        self.assertEqual(self.call("DELETE", "/subjects/" + subject), (200, [1, 2]))
        self.assertEqual(self.call("DELETE", "/subjects/%s?permanent=true" % subject),
                         (200, [1, 2]))

    def test_state_survives_kill_9_and_ids_are_never_reused(self):
        s = "durable-value"
        ids = [self.call("POST", "/subjects/%s/versions" % s, {"schema": x})[1]["id"]
               for x in (V1, V2)]
        self.assertEqual(self.call("PUT", "/config/%s" % s, {"compatibility": "FULL"})[0], 200)
        self.assertEqual(self.call("DELETE", "/subjects/%s/versions/2" % s), (200, 2))
        before = {path: self.call("GET", path) for path in (
            "/subjects", "/subjects?deleted=true", "/subjects/%s/versions?deleted=true" % s,
            "/subjects/%s/versions/1" % s, "/schemas/ids/%d" % ids[1], "/config/%s" % s)}
        self.broker.kill()
        self.broker.start()
        deadline = time.time() + 20
        while True:
            try:
                after = {path: self.call("GET", path) for path in before}
                break
            except OSError:
                self.assertLess(time.time(), deadline, "the registry did not come back")
                time.sleep(0.2)
        self.assertEqual(after, before)
        fresh = avro_record("Other", [{"name": "z", "type": "string"}])
        st, body = self.call("POST", "/subjects/other-value/versions", {"schema": fresh})
        self.assertEqual(st, 200, body)
        self.assertGreater(body["id"], max(ids), "a new schema after the restart gets a new id")


if __name__ == "__main__":
    unittest.main()
