"""Typed (json) primary-key tables against one real broker (docs/typed-tables.md):

- the seed's scenario: table `account_state` (aggregation: txn_count sum, amount_total sum,
  risk_score last_value_ignore_nulls). A confluent-kafka producer streams transactions
  ({"txn_count": 1, "amount_total": x}) while kcat streams risk scores for the same accounts;
  every Lookup taken meanwhile is one consistent row, the final rows equal a model exactly, a
  kill -9 and restart keep them (replay uses after-images, never re-aggregates), and a plain
  consumer of the changelog ends on the same rows;
- configs: table.fields.<column>.agg is validated at creation, read-only afterwards, listed by
  DescribeConfigs, and DescribeTable reports the format and functions;
- a value that is not a JSON object fails its batch with INVALID_RECORD naming the record; a
  strata.columns header makes a partial update or a partial delete;
- projection: Lookup, PrefixLookup and Scan with `columns` return just those (null when absent),
  over the wire and through `strata table get|scan --columns`; a raw table refuses it.
"""
import json
import os
import subprocess
import threading
import unittest

import itutil
import test_pk_durability as pkd
import test_pk_tables as pkt
from itutil import BrokerTestCase, RawConn, unique_topic

KCAT = "/usr/bin/kcat"
CLI = os.environ.get("STRATA_CLI") or os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    "build", "tools", "cli", "strata")
INVALID_REQUEST = 42
INVALID_RECORD = 87
INVALID_CONFIG = 40
ACCOUNTS = [("acct-%03d" % i).encode() for i in range(40)]
AGG_CONFIG = {
    "table.type": "primary-key",
    "table.value.format": "json",
    "table.merge-engine": "aggregation",
    "table.fields.txn_count.agg": "sum",
    "table.fields.amount_total.agg": "sum",
    "table.fields.risk_score.agg": "last_value_ignore_nulls",
}


def amount(i):
    """The i-th (1-based) transaction's amount of any account: quarters add up exactly."""
    return i * 0.25


def total_after(n):
    return 0.25 * n * (n + 1) / 2


class TypedTablesTest(BrokerTestCase):
    P = 3

    def conn(self):
        c = RawConn(self.broker.port)
        self.addCleanup(c.close)
        return c

    def lookup_rows(self, conn, topic):
        got = pkd.lookup_all(conn, topic, self.P, ACCOUNTS)
        return {k: json.loads(v) for k, v in got.items() if v is not None}

    def check_consistent(self, rows, risk_written):
        for k, row in rows.items():
            n = row.get("txn_count", 0)
            if "amount_total" in row or n:
                self.assertEqual(row["amount_total"], total_after(n), (k, row))
            if row.get("risk_score") is not None:
                self.assertIn(row["risk_score"], risk_written[k], (k, row))

    def test_account_state_two_writers_lookups_and_kill(self):
        topic = unique_topic("account_state")
        itutil.ck_create_topic(self.broker.bootstrap, topic, self.P, AGG_CONFIG)
        # Transactions: account k's i-th transaction carries amount(i).
        txns = [ACCOUNTS[(i * 7) % len(ACCOUNTS)] for i in range(20000)]
        counts = {}
        txn_values = []
        for k in txns:
            counts[k] = counts.get(k, 0) + 1
            value = json.dumps({"txn_count": 1, "amount_total": amount(counts[k])})
            txn_values.append({"topic": topic, "key": k, "value": value})
        # Risk scores by kcat (one ordered stream); some nulls, which the column ignores.
        risk_lines, risk_written, last_risk = [], {k: set() for k in ACCOUNTS}, {}
        for i in range(5000):
            k = ACCOUNTS[(i * 3) % len(ACCOUNTS)]
            score = None if i % 11 == 0 else round((i % 97) / 97.0, 4)
            risk_lines.append(k.decode() + "\t" + json.dumps({"risk_score": score}))
            if score is not None:
                risk_written[k].add(score)
                last_risk[k] = score

        conn = self.conn()
        snapshots = []
        done = threading.Event()

        def watch():
            c = RawConn(self.broker.port)
            try:
                while not done.is_set():
                    snapshots.append(self.lookup_rows(c, topic))
            finally:
                c.close()

        watcher = threading.Thread(target=watch)
        watcher.start()
        kcat = subprocess.Popen(
            [KCAT, "-P", "-b", self.broker.bootstrap, "-t", topic, "-K", "\t",
             "-X", "partitioner=murmur2_random", "-X", "enable.idempotence=true"],
            stdin=subprocess.PIPE, stderr=subprocess.PIPE)
        producer = itutil.ck_producer(self.broker.bootstrap, partitioner="murmur2_random",
                                      **{"enable.idempotence": True})
        try:
            itutil.ck_produce_all(producer, txn_values)
            _, err = kcat.communicate(("\n".join(risk_lines) + "\n").encode(), timeout=120)
            self.assertEqual(kcat.returncode, 0, err.decode(errors="replace"))
        finally:
            if kcat.poll() is None:
                kcat.kill()
            done.set()
            watcher.join()

        self.assertGreater(len(snapshots), 3)
        for rows in snapshots:
            self.check_consistent(rows, risk_written)
        model = {}
        for k, n in counts.items():
            model[k] = {"txn_count": n, "amount_total": total_after(n)}
        for k, s in last_risk.items():
            model.setdefault(k, {})["risk_score"] = s
        self.assertEqual(self.lookup_rows(conn, topic), model)

        self.broker.restart(clean=False)
        conn = self.conn()
        self.assertEqual(self.lookup_rows(conn, topic), model,
                         "after kill -9: the after-images replayed, nothing summed twice")
        # A plain consumer of the changelog ends on the same rows (the newest record per key).
        _, replay = pkd.consume_log(self.broker.bootstrap, topic, self.P, conn)
        self.assertEqual({k: json.loads(v) for k, v in replay.items()}, model)

    def test_configs_and_describe(self):
        bad = dict(AGG_CONFIG)
        bad["table.fields.txn_count.agg"] = "median"
        with self.assertRaises(Exception) as cm:
            itutil.ck_create_topic(self.broker.bootstrap, unique_topic("badagg"), 1, bad)
        self.assertIn("table.fields.txn_count.agg", str(cm.exception))
        plain = {"table.type": "primary-key", "table.fields.x.agg": "sum"}
        with self.assertRaises(Exception) as cm:
            itutil.ck_create_topic(self.broker.bootstrap, unique_topic("badagg"), 1, plain)
        self.assertIn("requires table.merge-engine=aggregation", str(cm.exception))

        topic = unique_topic("typed")
        cfg = dict(AGG_CONFIG)
        cfg["table.fields.tags.agg"] = "listagg"
        cfg["table.fields.tags.listagg.delimiter"] = ";"
        itutil.ck_create_topic(self.broker.bootstrap, topic, 1, cfg)
        conn = self.conn()
        err, tables = pkt.describe_table(conn, [topic])
        self.assertEqual(err, 0)
        self.assertEqual(pkt.one(tables[0], 5), b"aggregation")
        self.assertEqual(pkt.one(tables[0], 13), b"json")
        aggs = {}
        for entry in tables[0].get(14, []):
            e = pkt.pb_parse(entry)
            aggs[pkt.one(e, 1).decode()] = pkt.one(e, 2).decode()
        self.assertEqual(aggs, {"txn_count": "sum", "amount_total": "sum",
                                "risk_score": "last_value_ignore_nulls", "tags": "listagg(;)"})
        # Read-only after creation, like every table.* key; listed by DescribeConfigs.
        (code, msg, _, _), = pkd.alter_topic(conn, topic, "table.fields.txn_count.agg", "max")
        self.assertEqual(code, INVALID_CONFIG, msg)
        self.assertIn("read-only", msg)
        from confluent_kafka.admin import ConfigResource
        res = ConfigResource(ConfigResource.Type.TOPIC, topic)
        admin = itutil.ck_admin(self.broker.bootstrap)
        fut = admin.describe_configs([res])[res]
        entries = fut.result(timeout=30)
        self.assertEqual(entries["table.fields.tags.listagg.delimiter"].value, ";")
        self.assertTrue(entries["table.fields.txn_count.agg"].is_read_only)
        self.assertEqual(entries["table.value.format"].value, "json")

    def test_bad_values_and_partial_writes(self):
        topic = unique_topic("typedlr")
        itutil.ck_create_topic(self.broker.bootstrap, topic, 1,
                               {"table.type": "primary-key", "table.value.format": "json"})
        conn = self.conn()
        err, _, rec_errs, msg = pkt.produce_v8(
            conn, topic, 0, [(b"k", b'{"a":1}', []), (b"k", b"[1,2]", [])])
        self.assertEqual(err, INVALID_RECORD)
        self.assertEqual(rec_errs, [(1, "value is a JSON array, not an object")])
        _, res = pkt.lookup(conn, topic, {0: [b"k"]})
        self.assertIsNone(res[0][2][0], "nothing of a refused batch is applied")

        err, _, _, _ = pkt.produce_v8(conn, topic, 0, [(b"k", b'{"a":1,"b":2,"c":3}', [])])
        self.assertEqual(err, 0)
        # strata.columns: only b and c are written (c absent -> null); a is left alone.
        err, _, _, _ = pkt.produce_v8(
            conn, topic, 0, [(b"k", b'{"a":9,"b":5}', [("strata.columns", b"b,c")])])
        self.assertEqual(err, 0)
        _, res = pkt.lookup(conn, topic, {0: [b"k"]})
        self.assertEqual(json.loads(res[0][2][0][0]), {"a": 1, "b": 5, "c": None})
        # A partial delete nulls a; the row goes when nothing non-null is left.
        err, _, _, _ = pkt.produce_v8(conn, topic, 0, [(b"k", None, [("strata.columns", b"a")])])
        self.assertEqual(err, 0)
        _, res = pkt.lookup(conn, topic, {0: [b"k"]})
        self.assertEqual(json.loads(res[0][2][0][0]), {"a": None, "b": 5, "c": None})
        err, _, _, _ = pkt.produce_v8(conn, topic, 0, [(b"k", None, [("strata.columns", b"b")])])
        self.assertEqual(err, 0)
        _, res = pkt.lookup(conn, topic, {0: [b"k"]})
        self.assertIsNone(res[0][2][0])
        # The header is consumed: no changelog record carries it.
        msgs = itutil.ck_consume(self.broker.bootstrap, topic, [0], 4, timeout=30)
        for m in msgs:
            self.assertNotIn("strata.columns", [h[0] for h in (m.headers() or [])])

    def test_projection(self):
        topic = unique_topic("proj")
        itutil.ck_create_topic(self.broker.bootstrap, topic, 1,
                               {"table.type": "primary-key", "table.value.format": "json"})
        raw = unique_topic("projraw")
        itutil.ck_create_topic(self.broker.bootstrap, raw, 1, {"table.type": "primary-key"})
        conn = self.conn()
        wide = {"c%02d" % i: i for i in range(50)}
        for k in (b"a", b"b"):
            err, _, _, _ = pkt.produce_v8(conn, topic, 0, [(k, json.dumps(wide).encode(), [])])
            self.assertEqual(err, 0)
        err, _, _, _ = pkt.produce_v8(conn, raw, 0, [(b"a", b"opaque", [])])
        self.assertEqual(err, 0)

        def lookup(t, keys, columns):
            body = pkt.pb_len(1, pkt.pb_len(1, t.encode()) + pkt.pb_len(
                2, pkt.pb_int(1, 0) + b"".join(pkt.pb_len(2, k) for k in keys)))
            body += b"".join(pkt.pb_len(4, c.encode()) for c in columns)
            r = conn.request(pkt.API_LOOKUP, 0, body, flexible=True)
            resp = pkt.pb_parse(r.data[r.pos:])
            part = pkt.pb_parse(pkt.pb_parse(resp[3][0])[2][0])
            rows = [pkt.pb_parse(row) for row in part.get(4, [])]
            return pkt.one(part, 2), pkt.one(part, 3, b"").decode(), [
                pkt.one(row, 2, b"") if pkt.one(row, 1) else None for row in rows]

        err, _, rows = lookup(topic, [b"a", b"zz"], ["c07", "c42", "missing"])
        self.assertEqual(err, 0)
        self.assertEqual(json.loads(rows[0]), {"c07": 7, "c42": 42, "missing": None})
        self.assertIsNone(rows[1])
        full = lookup(topic, [b"a"], [])[2][0]
        self.assertLess(len(rows[0]) * 10, len(full), "3 of 50 columns: a fraction of the bytes")
        err, msg, _ = lookup(raw, [b"a"], ["c07"])
        self.assertEqual(err, INVALID_REQUEST)
        self.assertIn("typed table", msg)
        err, msg, _ = lookup(topic, [b"a"], ["c07", "c07"])
        self.assertEqual(err, INVALID_REQUEST)

        def cli(*args):
            p = subprocess.run([CLI, "-b", self.broker.bootstrap, "-o", "json"] + list(args),
                               capture_output=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr.decode(errors="replace"))
            return json.loads(p.stdout)

        got = cli("table", "get", topic, "a", "--columns", "c01,c02")
        self.assertEqual(json.loads(got["rows"][0]["value"]), {"c01": 1, "c02": 2})
        got = cli("table", "scan", topic, "--columns", "c03")
        self.assertEqual(sorted(json.loads(r["value"])["c03"] for r in got["rows"]), [3, 3])
        got = cli("table", "scan", topic, "--prefix", "b", "--columns", "c04")
        self.assertEqual([json.loads(r["value"]) for r in got["rows"]], [{"c04": 4}])


if __name__ == "__main__":
    unittest.main()
