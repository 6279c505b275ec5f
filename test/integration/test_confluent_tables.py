"""Confluent-framed typed tables (table.value.format=confluent, docs/typed-tables.md) against one
real broker and its embedded Schema Registry — the seed's scenario with the clients users run:

- table `account_state` bound to a JSON Schema table schema (txn_count sum, amount_total sum,
  risk_score last_value_ignore_nulls); confluent-kafka's JSONSerializer streams transactions
  under its own schema (TopicRecordNameStrategy: subject TOPIC-Txn) while a KafkaJS producer
  with @kafkajs/confluent-schema-registry streams Avro risk scores (subject TOPIC-Risk) for the
  same accounts; Lookups return JSON rows equal to a model; the changelog's values are framed
  with the table schema's id and confluent-kafka's JSONDeserializer reads the rows from it; a
  kill -9 and restart keep every row (replay strips the framing, never re-aggregates);
- creation: the table schema is pinned (table.value.schema.id), must exist, be a JSON Schema
  object whose columns accept null; the id is the broker's to set;
- a Protobuf table schema (the first message, fields with presence): ProtobufDeserializer
  reads the changelog's rows;
- an Avro table schema: rows hold every column typed by it (an integer in a double column is a
  double), the changelog carries them Avro-encoded (KafkaJS's registry client decodes them),
  a value it cannot hold is INVALID_RECORD, kill -9 replays without the registry;
- an Avro table schema with a schema reference (a Money record of another subject): pinned with
  the referenced type inline, rows and replay after kill -9 without the registry;
- a Protobuf table schema importing a Money message of another subject: pinned with the
  imported file's text, rows and replay after kill -9 without the registry;
- a confluent *log* topic with column statistics: JSONSerializer and hand-framed writers of two
  schemas; ReadLog filters equal a Python evaluation of the writers' rows, selective ranges
  skip batches, values no writer schema decodes are INVALID_RECORD;
- Protobuf writers in each client's framing of the message indexes (confluent-kafka's plain
  varints, Java's zigzag, KafkaJS's none) feed the same table;
- a value that is not framed, names an unknown id, does not decode, does not match its JSON
  Schema, writes a field the table lacks, or would make a row the table's JSON Schema refuses
  fails its batch with INVALID_RECORD naming the record.
"""
import json
import os
import subprocess
import sys
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "tools", "python"))  # the Python client, strata_client
import itutil  # noqa: E402
import test_pk_durability as pkd  # noqa: E402
import test_pk_tables as pkt  # noqa: E402
from itutil import BrokerTestCase, RawConn, unique_topic  # noqa: E402

CT = "application/vnd.schemaregistry.v1+json"
CLI = os.environ.get("STRATA_CLI") or os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    "build", "tools", "cli", "strata")
INVALID_RECORD = 87
ACCOUNTS = ["acct-%03d" % i for i in range(30)]
TABLE_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#", "title": "AccountState",
    "type": "object",
    "properties": {"txn_count": {"type": ["integer", "null"]},
                   "amount_total": {"type": ["number", "null"]},
                   "risk_score": {"type": ["number", "null"]}},
}
TXN_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#", "title": "Txn", "type": "object",
    "properties": {"txn_count": {"type": "integer"}, "amount_total": {"type": "number"}},
    "required": ["txn_count", "amount_total"],
}

# The same columns as an Avro table schema: each a union with null first, default null.
AVRO_TABLE_SCHEMA = {
    "type": "record", "name": "AccountState", "namespace": "strata.seed",
    "fields": [{"name": "txn_count", "type": ["null", "long"], "default": None},
               {"name": "amount_total", "type": ["null", "double"], "default": None},
               {"name": "risk_score", "type": ["null", "double"], "default": None}],
}


def table_config(subject):
    return {"table.type": "primary-key", "table.value.format": "confluent",
            "table.value.schema.subject": subject, "table.merge-engine": "aggregation",
            "table.fields.txn_count.agg": "sum", "table.fields.amount_total.agg": "sum",
            "table.fields.risk_score.agg": "last_value_ignore_nulls"}


class ConfluentTablesTest(BrokerTestCase):
    P = 3

    def url(self):
        return itutil.registry_url(self.broker)

    def register(self, subject, schema, schema_type="JSON", references=None):
        text = schema if isinstance(schema, str) else json.dumps(schema)  # .proto text as is
        req = {"schema": text, "schemaType": schema_type}
        if references:
            req["references"] = references
        body = json.dumps(req).encode()
        req = urllib.request.Request(self.url() + "/subjects/%s/versions" % subject, data=body,
                                     method="POST", headers={"Content-Type": CT})
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read())["id"]

    def conn(self):
        c = RawConn(self.broker.port)
        self.addCleanup(c.close)
        return c

    def rows(self, conn, topic):
        keys = [a.encode() for a in ACCOUNTS]
        got = pkd.lookup_all(conn, topic, self.P, keys)
        return {k.decode(): json.loads(v) for k, v in got.items() if v is not None}

    def create_error(self, topic, config):
        with self.assertRaises(Exception) as cm:
            itutil.ck_create_topic(self.broker.bootstrap, topic, 1, config)
        return str(cm.exception)

    def test_creation_pins_and_checks_the_table_schema(self):
        subject = unique_topic("acct") + "-table"
        self.assertIn("not found", self.create_error(unique_topic("t"), table_config(subject)))
        required = dict(TABLE_SCHEMA, required=["txn_count"])
        self.register(subject, required)
        self.assertIn("must not require columns",
                      self.create_error(unique_topic("t"), table_config(subject)))
        strict = unique_topic("acct") + "-strict"
        self.register(strict, dict(TABLE_SCHEMA, properties={"n": {"type": "integer"}}))
        self.assertIn("column n must accept null",
                      self.create_error(unique_topic("t"), table_config(strict)))
        cfg = table_config(subject)
        cfg["table.value.schema.id"] = "1"
        self.assertIn("set by the broker", self.create_error(unique_topic("t"), cfg))
        cfg = table_config(subject)
        del cfg["table.value.schema.subject"]
        self.assertIn("requires table.value.schema.subject",
                      self.create_error(unique_topic("t"), cfg))

    def test_account_state_json_and_avro_writers_lookups_changelog_and_kill(self):
        from confluent_kafka.schema_registry import SchemaRegistryClient
        from confluent_kafka.schema_registry import topic_record_subject_name_strategy
        from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
        from confluent_kafka.serialization import MessageField, SerializationContext
        topic = unique_topic("account_state")
        table_id = self.register(topic + "-value", TABLE_SCHEMA)
        itutil.ck_create_topic(self.broker.bootstrap, topic, self.P, table_config(topic + "-value"))
        from confluent_kafka.admin import ConfigResource
        res = ConfigResource(ConfigResource.Type.TOPIC, topic)
        admin = itutil.ck_admin(self.broker.bootstrap)
        entries = admin.describe_configs([res])[res].result(timeout=30)
        self.assertEqual(entries["table.value.schema.id"].value, str(table_id), "pinned")
        from strata_client import Strata
        with Strata(self.broker.bootstrap) as s:
            self.assertEqual(s.table(topic).describe()["value_schema"],
                             {"subject": topic + "-value", "id": table_id, "type": "JSON",
                              "columns": ["amount_total", "risk_score", "txn_count"]})

        # Transactions through JSONSerializer, the writer's own schema and subject.
        client = SchemaRegistryClient({"url": self.url()})
        ser = JSONSerializer(json.dumps(TXN_SCHEMA), client,
                             conf={"subject.name.strategy": topic_record_subject_name_strategy})
        ctx = SerializationContext(topic, MessageField.VALUE)
        counts, model = {}, {}
        producer = itutil.ck_producer(self.broker.bootstrap, partitioner="murmur2_random",
                                      **{"enable.idempotence": True})
        items = []
        for i in range(3000):
            k = ACCOUNTS[(i * 7) % len(ACCOUNTS)]
            counts[k] = counts.get(k, 0) + 1
            items.append({"topic": topic, "key": k.encode(),
                          "value": ser({"txn_count": 1, "amount_total": counts[k] * 0.25}, ctx)})
        itutil.ck_produce_all(producer, items)
        self.assertIn(topic + "-Txn", client.get_subjects())
        for k, n in counts.items():
            model[k] = {"txn_count": n, "amount_total": 0.25 * n * (n + 1) / 2}

        # Risk scores through KafkaJS, Avro, its own subject; some nulls (ignored by the column).
        lines, last_risk = [], {}
        for i in range(1000):
            k = ACCOUNTS[(i * 3) % len(ACCOUNTS)]
            score = None if i % 11 == 0 else round((i % 97) / 97.0, 4)
            lines.append("%s\t%s" % (k, "null" if score is None else score))
            if score is not None:
                last_risk[k] = score
        js = os.path.join(os.path.dirname(os.path.abspath(__file__)), "js", "risk_writer.js")
        r = subprocess.run(["node", js, self.broker.bootstrap, self.url(), topic],
                           input="\n".join(lines) + "\n", capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        risk_id = json.loads(r.stdout.strip().splitlines()[-1])["id"]
        self.assertNotIn(risk_id, (table_id,))
        for k, s in last_risk.items():
            model.setdefault(k, {"txn_count": None, "amount_total": None})["risk_score"] = s
        for k in model:
            model[k].setdefault("risk_score", None)

        conn = self.conn()
        got = self.rows(conn, topic)
        self.assertEqual(len(got), len(ACCOUNTS))
        self.assertTrue(any(set(row) == {"txn_count", "amount_total", "risk_score"}
                            and row["risk_score"] is not None for row in got.values()),
                        "both writers' columns in one row")
        self.assertEqual({k: {c: v for c, v in row.items() if v is not None}
                          for k, row in got.items()},
                         {k: {c: v for c, v in row.items() if v is not None}
                          for k, row in model.items()})

        # The changelog is in the table schema's framing: JSONDeserializer reads the rows.
        _, replay = pkd.consume_log(self.broker.bootstrap, topic, self.P, conn)
        de = JSONDeserializer(json.dumps(TABLE_SCHEMA))
        for k, v in replay.items():
            self.assertEqual((v[0], int.from_bytes(v[1:5], "big")), (0, table_id))
        self.assertEqual({k.decode(): de(v, ctx) for k, v in replay.items()}, got)

        # The CLI shows a row, and the changelog's rows without the framing.
        def cli(*args):
            p = subprocess.run([CLI, "-b", self.broker.bootstrap, "-o", "json"] + list(args),
                               capture_output=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr.decode(errors="replace"))
            return json.loads(p.stdout)

        row = cli("table", "get", topic, ACCOUNTS[0])
        self.assertEqual(json.loads(row["rows"][0]["value"]), got[ACCOUNTS[0]])
        newest = {}
        changes = cli("table", "changelog", topic)["changes"]
        for c in sorted(changes, key=lambda c: (c["partition"], c["offset"])):
            newest[c["key"]] = json.loads(c["after"])
        self.assertEqual(newest, got)

        # Bad values fail their batch with INVALID_RECORD naming the record and why.
        key = ACCOUNTS[0].encode()
        part = pkt.murmur2_partition(key, self.P)
        txn_id = client.get_latest_version(topic + "-Txn").schema_id
        framed = lambda sid, body: b"\x00" + sid.to_bytes(4, "big") + body  # noqa: E731
        # A writer whose schema lets risk_score be a string: the merged row would not fit the
        # table schema, so JSONDeserializer could not read the changelog.
        loose_id = self.register(topic + "-Loose", {
            "type": "object", "properties": {"risk_score": {"type": "string"}}})
        for value, why in [(b'{"txn_count": 1}', "not in Confluent's framing"),
                           (framed(9999, b"{}"), "schema id 9999 is not registered"),
                           (framed(txn_id, b'{"txn_count": 1, "amount_total": 2, "fraud": true}'),
                            "field fraud of schema id"),
                           (framed(txn_id, b'{"txn_count": "1", "amount_total": 2}'),
                            "JSON value does not match its schema (id %d): expected \"integer\", "
                            "got string at #/txn_count" % txn_id),
                           (framed(txn_id, b'{"txn_count": 1}'),
                            "missing property amount_total (required) at #"),
                           (framed(loose_id, b'{"risk_score": "high"}'),
                            "the row does not fit the table schema (id %d): expected "
                            "[\"number\",\"null\"], got string at #/risk_score" % table_id),
                           (framed(txn_id, b"[1]"), "not an object")]:
            err, _, rec_errs, _ = pkt.produce_v8(conn, topic, part, [(key, value, [])])
            self.assertEqual(err, INVALID_RECORD, why)
            self.assertEqual(len(rec_errs), 1, rec_errs)
            self.assertIn(why, rec_errs[0][1])
        self.assertEqual(self.rows(conn, topic), got, "nothing of a refused batch is applied")

        self.broker.restart(clean=False)
        conn = self.conn()
        self.assertEqual(self.rows(conn, topic), got,
                         "after kill -9: the framed after-images replayed, nothing summed twice")

    def check_money_table(self, topic, table_id, bad_balance, why):
        """A table whose `balance` column is a referenced Money type: a JSON writer's balances and
        counts land as the model says, a balance Money cannot hold (`bad_balance`) fails the
        batch naming `why`, the changelog is framed with the table schema's id, and after kill -9
        replay decodes it with the pinned self-contained text alone."""
        writer_id = self.register(topic + "-Txn", {
            "type": "object", "properties": {
                "balance": {"type": "object", "properties": {"cents": {"type": "integer"},
                                                             "currency": {"type": "string"}}},
                "txn_count": {"type": "integer"}}})
        conn = self.conn()
        model = {}
        for i, k in enumerate(ACCOUNTS[:6]):
            key = k.encode()
            part = pkt.murmur2_partition(key, self.P)
            for n in range(1, 4):
                value = {"balance": {"cents": 100 * i + n, "currency": "EUR"}, "txn_count": 1}
                framed = b"\x00" + writer_id.to_bytes(4, "big") + json.dumps(value).encode()
                err, _, rec_errs, _ = pkt.produce_v8(conn, topic, part, [(key, framed, [])])
                self.assertEqual((err, rec_errs), (0, []))
            model[k] = {"balance": {"cents": 100 * i + 3, "currency": "EUR"}, "txn_count": 3}
        bad = b"\x00" + writer_id.to_bytes(4, "big") + json.dumps({"balance": bad_balance}).encode()
        key = ACCOUNTS[0].encode()
        err, _, rec_errs, _ = pkt.produce_v8(
            conn, topic, pkt.murmur2_partition(key, self.P), [(key, bad, [])])
        self.assertEqual(err, INVALID_RECORD)
        self.assertIn(why, rec_errs[0][1])
        got = {k: v for k, v in self.rows(conn, topic).items() if k in model}
        self.assertEqual(got, model)
        _, replay = pkd.consume_log(self.broker.bootstrap, topic, self.P, conn)
        for k in model:
            v = replay[k.encode()]
            self.assertEqual((v[0], int.from_bytes(v[1:5], "big")), (0, table_id))
        self.broker.restart(clean=False)
        conn = self.conn()
        got = {k: v for k, v in self.rows(conn, topic).items() if k in model}
        self.assertEqual(got, model, "after kill -9")

    def test_avro_table_schema_with_a_reference_is_pinned_self_contained(self):
        topic = unique_topic("account_ref")
        money = {"type": "record", "name": "Money", "namespace": "strata.seed",
                 "fields": [{"name": "cents", "type": "long"},
                            {"name": "currency", "type": "string"}]}
        self.register(topic + "-Money", money, "AVRO")
        table = {"type": "record", "name": "Account", "namespace": "strata.seed",
                 "fields": [{"name": "balance", "type": ["null", "Money"], "default": None},
                            {"name": "txn_count", "type": ["null", "long"], "default": None}]}
        table_id = self.register(topic + "-value", table, "AVRO", [
            {"name": "strata.seed.Money", "subject": topic + "-Money", "version": 1}])
        itutil.ck_create_topic(self.broker.bootstrap, topic, self.P, {
            "table.type": "primary-key", "table.value.format": "confluent",
            "table.value.schema.subject": topic + "-value", "table.merge-engine": "aggregation",
            "table.fields.txn_count.agg": "sum"})
        from confluent_kafka.admin import ConfigResource
        res = ConfigResource(ConfigResource.Type.TOPIC, topic)
        admin = itutil.ck_admin(self.broker.bootstrap)  # kept: a destroyed handle fails its futures
        entries = admin.describe_configs([res])[res].result(timeout=30)
        self.assertEqual(entries["table.value.schema.id"].value, str(table_id))
        pinned = json.loads(entries["table.value.schema.avro"].value)
        self.assertEqual(pinned["fields"][0]["type"][1],
                         {"type": "record", "name": "Money", "fields": money["fields"]},
                         "the referenced type written inline: replay needs no registry")

        # A balance the referenced record cannot hold (no currency) fails the batch.
        self.check_money_table(topic, table_id, {"cents": 5},
                               "does not fit the table schema (id %d)" % table_id)

    def test_protobuf_table_schema_with_a_reference_is_pinned_self_contained(self):
        topic = unique_topic("account_pref")
        self.register(topic + "-Money", 'syntax = "proto3";\npackage strata.seed;\n'
                      'message Money {\n  int64 cents = 1;\n  string currency = 2;\n}\n',
                      "PROTOBUF")
        table_id = self.register(
            topic + "-value",
            'syntax = "proto3";\npackage strata.seed;\nimport "strata/money.proto";\n'
            'message Account {\n  optional Money balance = 1;\n'
            '  optional int64 txn_count = 2;\n}\n', "PROTOBUF",
            [{"name": "strata/money.proto", "subject": topic + "-Money", "version": 1}])
        itutil.ck_create_topic(self.broker.bootstrap, topic, self.P, {
            "table.type": "primary-key", "table.value.format": "confluent",
            "table.value.schema.subject": topic + "-value", "table.merge-engine": "aggregation",
            "table.fields.txn_count.agg": "sum"})
        from confluent_kafka.admin import ConfigResource
        res = ConfigResource(ConfigResource.Type.TOPIC, topic)
        admin = itutil.ck_admin(self.broker.bootstrap)  # kept: a destroyed handle fails its futures
        entries = admin.describe_configs([res])[res].result(timeout=30)
        self.assertEqual(entries["table.value.schema.id"].value, str(table_id))
        pinned = json.loads(entries["table.value.schema.protobuf"].value)
        self.assertEqual([i["name"] for i in pinned["imports"]], ["strata/money.proto"],
                         "the imported file travels with the table schema: replay needs no "
                         "registry")
        self.assertIn("message Money", pinned["imports"][0]["schema"])
        self.assertIn('import "strata/money.proto"', pinned["schema"])

        # A balance the referenced message cannot hold (a field Money lacks) fails the batch.
        self.check_money_table(topic, table_id, {"cents": 5, "colour": 1}, "colour")

        # A pinned text past a Kafka string's 32767 bytes could not be answered in CreateTopics
        # or DescribeConfigs: such a table is refused at creation.
        big = unique_topic("big")
        self.register(big + "-Big", 'syntax = "proto3";\npackage strata.big;\nmessage Big {\n' +
                      "".join("  int64 field_number_%04d = %d;\n" % (i, i + 1)
                              for i in range(1200)) + "}\n", "PROTOBUF")
        self.register(big + "-value", 'syntax = "proto3";\nimport "big.proto";\n'
                      "message T {\n  optional strata.big.Big b = 1;\n}\n", "PROTOBUF",
                      [{"name": "big.proto", "subject": big + "-Big", "version": 1}])
        self.assertIn("holds at most 32767", self.create_error(big, {
            "table.type": "primary-key", "table.value.format": "confluent",
            "table.value.schema.subject": big + "-value"}))

    def test_confluent_log_topic_filters_writers_rows(self):
        from confluent_kafka.schema_registry import SchemaRegistryClient
        from confluent_kafka.schema_registry import topic_record_subject_name_strategy
        from confluent_kafka.schema_registry.json_schema import JSONSerializer
        from confluent_kafka.serialization import MessageField, SerializationContext
        from strata_client import Strata
        topic = unique_topic("events_cf")
        self.register(topic + "-value", {
            "type": "object", "properties": {"amount": {"type": ["integer", "null"]},
                                             "country": {"type": ["string", "null"]}}})
        b = self.broker.bootstrap
        self.assertIn("requires table.value.schema.subject", self.create_error(
            unique_topic("t"), {"table.value.format": "confluent"}))
        itutil.ck_create_topic(b, topic, 2, {
            "table.value.format": "confluent", "table.value.schema.subject": topic + "-value",
            "table.statistics.columns": "*"})

        client = SchemaRegistryClient({"url": self.url()})
        payment = JSONSerializer(json.dumps({
            "title": "Payment", "type": "object",
            "properties": {"amount": {"type": "integer"}, "country": {"type": "string"}},
            "required": ["amount", "country"]}), client,
            conf={"subject.name.strategy": topic_record_subject_name_strategy})
        ctx = SerializationContext(topic, MessageField.VALUE)
        refund_id = self.register(topic + "-Refund", {
            "type": "object", "properties": {"amount": {"type": "integer"}}})
        producer = itutil.ck_producer(b)
        rows = {}  # (partition, offset) -> the writer's row
        for rnd in range(24):  # one flush per round: batches of one round's amounts
            items = []
            for i in range(20):
                amount = rnd * 100 + i
                if i % 5 == 4:  # a refund: no country
                    row = {"amount": amount}
                    value = b"\x00" + refund_id.to_bytes(4, "big") + json.dumps(row).encode()
                else:
                    row = {"amount": amount, "country": ["DE", "FR", "NL"][i % 3]}
                    value = payment(row, ctx)
                items.append({"topic": topic, "key": b"k%d" % i, "value": value,
                              "partition": rnd % 2, "_row": row})
            sent = itutil.ck_produce_all(producer, [
                {k: v for k, v in it.items() if k != "_row"} for it in items])
            for it, m in zip(items, sent):
                rows[(m.partition(), m.offset())] = it["_row"]

        def holds(where, row):
            a, c = row.get("amount"), row.get("country")
            return {"amount >= 1000 AND amount < 1010": a is not None and 1000 <= a < 1010,
                    "country = 'DE'": c == "DE",
                    "country IS NULL OR amount < 50": c is None or (a is not None and a < 50),
                    }[where]

        with Strata(b) as s:
            log = s.log(topic)
            everything = list(log.read(0, follow=False))
            self.assertEqual(len(everything), len(rows))
            for r in everything:  # values stay the writers' bytes (framed, their schema ids)
                self.assertEqual(json.loads(r["value"][5:]), rows[(r["partition"], r["offset"])])
            for where in ("amount >= 1000 AND amount < 1010", "country = 'DE'",
                          "country IS NULL OR amount < 50"):
                stats = {}
                got = [(r["partition"], r["offset"]) for r in
                       log.read(0, follow=False, where=where, stats=stats)]
                want = sorted(pos for pos, row in rows.items() if holds(where, row))
                self.assertEqual(sorted(got), want, where)
                if where.startswith("amount >="):
                    self.assertGreater(stats["skipped_batches"], 10, stats)

        # Values no writer schema reads are refused, naming why; nothing is appended.
        conn = self.conn()
        for value, why in ((b"plain", "Confluent's framing"),
                           (b"\x00\x00\x01\x00\x00{}", "is not registered"),
                           (b"\x00" + refund_id.to_bytes(4, "big") + b'{"amount": "x"}',
                            "does not match its schema"),
                           (b"\x00" + self.register(topic + "-Odd", {
                               "type": "object", "properties": {"colour": {"type": "string"}}})
                            .to_bytes(4, "big") + b'{"colour": "red"}', "colour")):
            err, _, rec_errs, _ = pkt.produce_v8(conn, topic, 0, [(b"k", value, [])])
            self.assertEqual(err, INVALID_RECORD, value)
            self.assertIn(why, rec_errs[0][1])
        with Strata(b) as s:
            self.assertEqual(len(list(s.log(topic).read(0, follow=False))), len(rows))

    def test_avro_table_schema_rows_logged_in_avro(self):
        from confluent_kafka.schema_registry import SchemaRegistryClient
        from confluent_kafka.schema_registry import topic_record_subject_name_strategy
        from confluent_kafka.schema_registry.json_schema import JSONSerializer
        from confluent_kafka.serialization import MessageField, SerializationContext
        topic = unique_topic("account_avro")
        self.register(topic + "-strict", dict(AVRO_TABLE_SCHEMA, fields=[
            {"name": "txn_count", "type": "long"}]), "AVRO")
        self.assertIn("field txn_count must be a union with",
                      self.create_error(unique_topic("t"), table_config(topic + "-strict")))
        cfg = dict(table_config(topic + "-strict"))
        cfg["table.value.schema.avro"] = json.dumps(AVRO_TABLE_SCHEMA)
        self.assertIn("set by the broker", self.create_error(unique_topic("t"), cfg))

        table_id = self.register(topic + "-value", AVRO_TABLE_SCHEMA, "AVRO")
        itutil.ck_create_topic(self.broker.bootstrap, topic, self.P, table_config(topic + "-value"))
        from confluent_kafka.admin import ConfigResource
        res = ConfigResource(ConfigResource.Type.TOPIC, topic)
        admin = itutil.ck_admin(self.broker.bootstrap)
        entries = admin.describe_configs([res])[res].result(timeout=30)
        self.assertEqual(entries["table.value.schema.id"].value, str(table_id))
        pinned = json.loads(entries["table.value.schema.avro"].value)
        self.assertEqual([f["name"] for f in pinned["fields"]],
                         ["txn_count", "amount_total", "risk_score"])
        from strata_client import Strata
        with Strata(self.broker.bootstrap) as s:
            self.assertEqual(s.table(topic).describe()["value_schema"],
                             {"subject": topic + "-value", "id": table_id, "type": "AVRO",
                              "columns": ["txn_count", "amount_total", "risk_score"]},
                             "DescribeTable: the columns in the record's order")

        # A JSON Schema writer and KafkaJS's Avro writer, as in the JSON Schema table's test.
        client = SchemaRegistryClient({"url": self.url()})
        ser = JSONSerializer(json.dumps(TXN_SCHEMA), client,
                             conf={"subject.name.strategy": topic_record_subject_name_strategy})
        ctx = SerializationContext(topic, MessageField.VALUE)
        model = {k: {"txn_count": None, "amount_total": None, "risk_score": None}
                 for k in ACCOUNTS}
        items = []
        for i in range(600):
            k = ACCOUNTS[(i * 7) % len(ACCOUNTS)]
            m = model[k]
            m["txn_count"] = (m["txn_count"] or 0) + 1
            m["amount_total"] = (m["amount_total"] or 0) + 2  # an integer: logged as a double
            items.append({"topic": topic, "key": k.encode(),
                          "value": ser({"txn_count": 1, "amount_total": 2}, ctx)})
        producer = itutil.ck_producer(self.broker.bootstrap, partitioner="murmur2_random",
                                      **{"enable.idempotence": True})
        itutil.ck_produce_all(producer, items)
        lines = []
        for i in range(200):
            k = ACCOUNTS[(i * 3) % len(ACCOUNTS)]
            score = None if i % 11 == 0 else round((i % 97) / 97.0, 4)
            lines.append("%s\t%s" % (k, "null" if score is None else score))
            if score is not None:
                model[k]["risk_score"] = score
        js_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "js")
        r = subprocess.run(["node", os.path.join(js_dir, "risk_writer.js"), self.broker.bootstrap,
                            self.url(), topic], input="\n".join(lines) + "\n",
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])

        conn = self.conn()
        got = self.rows(conn, topic)
        self.assertEqual(got, model, "every column present, amount_total a double")
        self.assertTrue(all(isinstance(row["amount_total"], float) for row in got.values()))

        # The changelog's rows are Avro in the table schema: a plain consumer's deserializer
        # (KafkaJS's registry client, fetching the schema by the framed id) reads them.
        _, replay = pkd.consume_log(self.broker.bootstrap, topic, self.P, conn)
        keys = sorted(replay)
        for k in keys:
            self.assertEqual((replay[k][0], int.from_bytes(replay[k][1:5], "big")), (0, table_id))
        r = subprocess.run(["node", os.path.join(js_dir, "registry_decode.js"), self.url()],
                           input="".join(replay[k].hex() + "\n" for k in keys),
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        decoded = [json.loads(line) for line in r.stdout.splitlines()]
        self.assertEqual({k.decode(): v for k, v in zip(keys, decoded)}, got)
        # ReadChangelog serves the same rows as JSON (the CLI prints them).
        p = subprocess.run([CLI, "-b", self.broker.bootstrap, "-o", "json", "table", "changelog",
                            topic], capture_output=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr.decode(errors="replace"))
        newest = {}
        for c in sorted(json.loads(p.stdout)["changes"],
                        key=lambda c: (c["partition"], c["offset"])):
            newest[c["key"]] = json.loads(c["after"])
        self.assertEqual(newest, got)

        # A value the table schema cannot hold fails its batch; nothing of it applies.
        key = ACCOUNTS[0].encode()
        part = pkt.murmur2_partition(key, self.P)
        loose_id = self.register(topic + "-Loose", {
            "type": "object", "properties": {"risk_score": {"type": "string"}}})
        value = b"\x00" + loose_id.to_bytes(4, "big") + b'{"risk_score": "high"}'
        err, _, rec_errs, _ = pkt.produce_v8(conn, topic, part, [(key, value, [])])
        self.assertEqual(err, INVALID_RECORD)
        self.assertIn("does not fit the table schema", rec_errs[0][1])
        self.assertEqual(self.rows(conn, topic), got)

        self.broker.restart(clean=False)
        conn = self.conn()
        self.assertEqual(self.rows(conn, topic), got,
                         "after kill -9: replayed from the Avro after-images, no registry needed")

    PROTO = """syntax = "proto3";
package strata.it;
message Txn {
  int64 txn_count = 1;
  double amount_total = 2;
}
message Risk {
  optional double risk_score = 1;
}
message Profile {
  string nickname = 1;
}
"""

    _writer_pb = None

    def writer_pb(self):
        """The writers' messages (PROTO) compiled once: Python's descriptor pool refuses a
        second file defining the same message names."""
        import tempfile
        if ConfluentTablesTest._writer_pb is None:
            with tempfile.TemporaryDirectory() as d:
                ConfluentTablesTest._writer_pb = itutil.compile_proto(d, "acct_writers.proto",
                                                                      self.PROTO)
        return ConfluentTablesTest._writer_pb

    def test_protobuf_writers_in_every_clients_framing(self):
        """Protobuf writers: confluent-kafka's ProtobufSerializer (message indexes as plain
        varints, [0] as one zero byte), Java's zigzag indexes and KafkaJS's none, all into one
        aggregation table; a message with a field the table lacks, or bytes that parse as no
        message of the schema, fail their batch."""
        from confluent_kafka.schema_registry import SchemaRegistryClient
        from confluent_kafka.schema_registry import topic_record_subject_name_strategy
        from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
        from confluent_kafka.serialization import MessageField, SerializationContext
        pb = self.writer_pb()
        topic = unique_topic("account_state_pb")
        self.register(topic + "-value", TABLE_SCHEMA)
        itutil.ck_create_topic(self.broker.bootstrap, topic, self.P, table_config(topic + "-value"))
        client = SchemaRegistryClient({"url": self.url()})
        conf = {"subject.name.strategy": topic_record_subject_name_strategy}
        txn_ser = ProtobufSerializer(pb.Txn, client, conf=conf)
        risk_ser = ProtobufSerializer(pb.Risk, client, conf=conf)
        ctx = SerializationContext(topic, MessageField.VALUE)
        model = {k: {} for k in ACCOUNTS}  # the non-null columns of each row
        items = []
        for i in range(600):
            k = ACCOUNTS[i % len(ACCOUNTS)]
            m = model[k]
            if i % 3 == 2:
                score = round(i / 1000.0, 3)
                items.append({"topic": topic, "key": k.encode(),
                              "value": risk_ser(pb.Risk(risk_score=score), ctx)})
                m["risk_score"] = score
            else:
                items.append({"topic": topic, "key": k.encode(),
                              "value": txn_ser(pb.Txn(txn_count=1, amount_total=0.5), ctx)})
                m["txn_count"] = m.get("txn_count", 0) + 1
                m["amount_total"] = m.get("amount_total", 0) + 0.5
        itutil.ck_produce_all(itutil.ck_producer(self.broker.bootstrap,
                                                 partitioner="murmur2_random"), items)
        txn_id = client.get_latest_version(topic + "-strata.it.Txn").schema_id
        self.assertEqual(items[0]["value"][5], 0, "[0] as one zero byte")
        self.assertEqual(items[2]["value"][5:7], b"\x01\x01", "[1] as plain varints")

        # The same file's messages framed as Java (zigzag: [1] is 02 02) and KafkaJS (none) do.
        framed = lambda sid, body: b"\x00" + sid.to_bytes(4, "big") + body  # noqa: E731
        conn = self.conn()
        for k in ACCOUNTS[:10]:
            part = pkt.murmur2_partition(k.encode(), self.P)
            java = framed(txn_id, b"\x02\x02" + pb.Risk(risk_score=0.75).SerializeToString())
            kafkajs = framed(txn_id, pb.Txn(txn_count=2, amount_total=1.25).SerializeToString())
            err, _, rec_errs, _ = pkt.produce_v8(conn, topic, part,
                                                 [(k.encode(), java, []), (k.encode(), kafkajs, [])])
            self.assertEqual(err, 0, rec_errs)
            model[k]["risk_score"] = 0.75
            model[k]["txn_count"] = model[k].get("txn_count", 0) + 2
            model[k]["amount_total"] = model[k].get("amount_total", 0) + 1.25
        non_null = lambda rows: {k: {c: v for c, v in row.items() if v is not None}  # noqa: E731
                                 for k, row in rows.items()}
        self.assertEqual(non_null(self.rows(conn, topic)), model)

        key = ACCOUNTS[0].encode()
        part = pkt.murmur2_partition(key, self.P)
        profile = framed(txn_id, b"\x02\x04" + pb.Profile(nickname="x").SerializeToString())
        for value, why in [(profile, "field nickname of schema id"),
                           (framed(txn_id, b"\x02\x04\x08"), "does not decode"),
                           (framed(txn_id, b"\x0a\x02\xff\xfe"), "does not decode")]:
            err, _, rec_errs, _ = pkt.produce_v8(conn, topic, part, [(key, value, [])])
            self.assertEqual(err, INVALID_RECORD, why)
            self.assertIn(why, rec_errs[0][1])
        self.assertEqual(non_null(self.rows(conn, topic)), model,
                         "nothing of a refused batch is applied")

    PROTO_TABLE = """syntax = "proto3";
package strata.it;
message AccountState {
  optional int64 txn_count = 1;
  optional double amount_total = 2;
  optional double risk_score = 3;
}
"""

    def test_protobuf_table_schema_rows_logged_as_its_message(self):
        """A Protobuf table schema: its first message is the row (every field with presence);
        ProtobufSerializer writers feed it, the changelog carries AccountState messages that
        confluent-kafka's ProtobufDeserializer reads, kill -9 replays without the registry."""
        import tempfile
        from confluent_kafka.schema_registry import SchemaRegistryClient
        from confluent_kafka.schema_registry import topic_record_subject_name_strategy
        from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
        from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
        from confluent_kafka.serialization import MessageField, SerializationContext
        from strata_client import Strata
        pb = self.writer_pb()
        with tempfile.TemporaryDirectory() as d:
            table_pb = itutil.compile_proto(d, "account_state_table.proto", self.PROTO_TABLE)
        topic = unique_topic("account_state_pbt")
        self.register(topic + "-implicit", self.PROTO_TABLE.replace("optional int64", "int64"),
                      "PROTOBUF")
        self.assertIn("field txn_count of strata.it.AccountState must have presence",
                      self.create_error(unique_topic("t"), table_config(topic + "-implicit")))
        table_id = self.register(topic + "-value", self.PROTO_TABLE, "PROTOBUF")
        itutil.ck_create_topic(self.broker.bootstrap, topic, self.P, table_config(topic + "-value"))
        with Strata(self.broker.bootstrap) as s:
            self.assertEqual(s.table(topic).describe()["value_schema"],
                             {"subject": topic + "-value", "id": table_id, "type": "PROTOBUF",
                              "columns": ["txn_count", "amount_total", "risk_score"]})

        client = SchemaRegistryClient({"url": self.url()})
        conf = {"subject.name.strategy": topic_record_subject_name_strategy}
        txn_ser = ProtobufSerializer(pb.Txn, client, conf=conf)
        risk_ser = ProtobufSerializer(pb.Risk, client, conf=conf)
        ctx = SerializationContext(topic, MessageField.VALUE)
        model = {k: {} for k in ACCOUNTS}
        items = []
        for i in range(450):
            k = ACCOUNTS[i % len(ACCOUNTS)]
            m = model[k]
            if (i // len(ACCOUNTS)) % 3 == 2:  # every account: two rounds of txns, one of risk
                m["risk_score"] = round(i / 1000.0, 3)
                items.append({"topic": topic, "key": k.encode(),
                              "value": risk_ser(pb.Risk(risk_score=m["risk_score"]), ctx)})
            else:
                m["txn_count"] = m.get("txn_count", 0) + 1
                m["amount_total"] = m.get("amount_total", 0) + 2  # integral: typed as a double
                items.append({"topic": topic, "key": k.encode(),
                              "value": txn_ser(pb.Txn(txn_count=1, amount_total=2), ctx)})
        itutil.ck_produce_all(itutil.ck_producer(self.broker.bootstrap,
                                                 partitioner="murmur2_random"), items)
        conn = self.conn()
        got = self.rows(conn, topic)
        self.assertEqual(got, model)
        self.assertTrue(all(isinstance(r["amount_total"], float) for r in got.values()))

        _, replay = pkd.consume_log(self.broker.bootstrap, topic, self.P, conn)
        de = ProtobufDeserializer(table_pb.AccountState)
        for k, v in replay.items():
            self.assertEqual((v[0], int.from_bytes(v[1:5], "big"), v[5]), (0, table_id, 0))
            msg = de(v, ctx)
            self.assertEqual({f.name: val for f, val in msg.ListFields()}, got[k.decode()])

        self.broker.restart(clean=False)
        conn = self.conn()
        self.assertEqual(self.rows(conn, topic), got,
                         "after kill -9: replayed from the Protobuf after-images")


if __name__ == "__main__":
    unittest.main()
