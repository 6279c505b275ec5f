"""Transactions on primary-key tables (docs/transactions.md "Primary-key tables"), one broker:
- a confluent-kafka (librdkafka) transactional producer: rows reach Lookup only when the
  transaction commits, an aborted transaction changes nothing, and a read_committed consumer of the
  table's log sees exactly the applied changes with the right change kinds; the same transaction
  also writes a log topic;
- a key written by an open transaction holds back other writers: the broker refuses their batch
  with NOT_ENOUGH_REPLICAS (nothing appended) and librdkafka, kafka-python (retries > 0) and
  KafkaJS (default retry policy) each retry until the marker, after which their write lands on
  top of the committed row;
- kill -9 with a transaction open on a table: after the restart its key is still held and the
  producer's commit applies its rows."""
import os
import subprocess
import time
import unittest

import harness
import itutil
import test_pk_tables as pkt

CHANGE = "strata.change"


def rows(broker, topic, keys):
    conn = itutil.RawConn(broker.port)
    try:
        top, res = pkt.lookup(conn, topic, {0: [k.encode() for k in keys]})
        assert top == 0, top
        err, msg, found = res[0]
        assert err == 0, (err, msg)
        return {k: r[0].decode() for k, r in zip(keys, found) if r is not None}
    finally:
        conn.close()


def committed_changes(bootstrap, topic):
    """(key, value or None, change kind) of every record a read_committed consumer sees."""
    return [(m.key().decode(), m.value().decode() if m.value() else None,
             dict(m.headers() or []).get(CHANGE, b"").decode())
            for m in itutil.ck_consume_to_end(bootstrap, topic, isolation_level="read_committed")]


def txn_producer(bootstrap, tid):
    from confluent_kafka import Producer
    return Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "linger.ms": 5})


class PkTransactions(itutil.BrokerTestCase):
    overrides = {"transaction.max.timeout.ms": "300000"}

    def table(self, prefix):
        t = itutil.unique_topic(prefix)
        itutil.ck_create_topic(self.broker.bootstrap, t, 1, {"table.type": "primary-key",
                                                            "table.changelog.image": "full"})
        return t

    def test_rows_reach_the_table_only_on_commit(self):
        t = self.table("pktx")
        log_topic = itutil.unique_topic("pktxlog")
        itutil.ck_create_topic(self.broker.bootstrap, log_topic, 1)
        p = txn_producer(self.broker.bootstrap, itutil.unique_topic("tid"))
        p.init_transactions(30)
        p.begin_transaction()
        p.produce(t, key=b"a", value=b"a1", partition=0)
        p.produce(t, key=b"b", value=b"b1", partition=0)
        p.produce(log_topic, value=b"event-1", partition=0)
        p.flush(30)
        self.assertEqual(rows(self.broker, t, ["a", "b"]), {}, "an open transaction is invisible")
        p.commit_transaction(30)
        self.assertEqual(rows(self.broker, t, ["a", "b"]), {"a": "a1", "b": "b1"})

        p.begin_transaction()
        p.produce(t, key=b"a", value=b"a2", partition=0)
        p.produce(t, key=b"b", value=None, partition=0)
        p.produce(t, key=b"c", value=b"c1", partition=0)
        p.flush(30)  # else librdkafka's abort purges them unsent
        p.abort_transaction(30)
        self.assertEqual(rows(self.broker, t, ["a", "b", "c"]), {"a": "a1", "b": "b1"})

        p.begin_transaction()
        p.produce(t, key=b"a", value=b"a3", partition=0)
        p.produce(t, key=b"b", value=None, partition=0)
        p.commit_transaction(30)
        self.assertEqual(rows(self.broker, t, ["a", "b", "c"]), {"a": "a3"})
        self.assertEqual(committed_changes(self.broker.bootstrap, t),
                         [("a", "a1", "insert"), ("b", "b1", "insert"),
                          ("a", "a3", "update"), ("b", None, "delete")])
        self.assertBrokerAlive()

    def test_writers_blocked_by_an_open_transaction_retry_until_its_marker(self):
        from confluent_kafka import Producer
        t = self.table("pkblk")
        keys = ["ck", "kp", "js"]
        tp = txn_producer(self.broker.bootstrap, itutil.unique_topic("tid"))
        tp.init_transactions(30)
        tp.begin_transaction()
        for k in keys:
            tp.produce(t, key=k.encode(), value=("txn-" + k).encode(), partition=0)
        tp.flush(30)

        # KafkaJS first (node takes a while to start): it sends once connected and retries for
        # about 9 s (its default policy); then librdkafka (idempotent) and kafka-python.
        js_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "js")
        js = subprocess.Popen(["node", os.path.join(js_dir, "pk_blocked_writer.js"),
                               self.broker.bootstrap, t, "js", "plain-js"],
                              cwd=js_dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        kp = None
        try:
            line = js.stdout.readline().strip()  # (stderr only once it failed: read() waits)
            if line != "CONNECTED":
                self.fail("KafkaJS did not connect: %s %s" % (line, js.stderr.read()))
            delivered = []
            ck = Producer({"bootstrap.servers": self.broker.bootstrap, "enable.idempotence": True,
                           "retry.backoff.ms": 100})
            ck.produce(t, key=b"ck", value=b"plain-ck", partition=0,
                       on_delivery=lambda err, m: delivered.append(err))
            # kafka-python 2.0.2 retries nothing by default (retries=0): a user sets retries.
            kp = itutil.kp_producer(self.broker.bootstrap, retries=100, retry_backoff_ms=200)
            kp_future = kp.send(t, key=b"kp", value=b"plain-kp", partition=0)
            # All three are refused (and retrying) while the transaction is open.
            deadline = time.time() + 2.0
            while time.time() < deadline:
                ck.poll(0.1)
            self.assertEqual(delivered, [], "librdkafka's write landed under an open transaction")
            self.assertFalse(kp_future.is_done, "kafka-python's write ended under a transaction: %r"
                             % (kp_future.exception,))
            self.assertIsNone(js.poll(), "KafkaJS finished before the marker: %s" % (
                js.stderr.read() if js.poll() is not None else ""))
            self.assertEqual(rows(self.broker, t, keys), {})
            tp.commit_transaction(30)

            ck.flush(30)
            self.assertEqual(delivered, [None])
            kp_future.get(timeout=30)
            out, err = js.communicate(timeout=60)
            self.assertEqual(js.returncode, 0, "KafkaJS send failed:\n%s\n%s" % (out, err))
            self.assertIn("SENT", out)
        finally:
            if js.poll() is None:
                js.kill()
            if kp is not None:
                kp.close()
        # Each plain write came after the commit: an update of the committed row.
        self.assertEqual(rows(self.broker, t, keys),
                         {"ck": "plain-ck", "kp": "plain-kp", "js": "plain-js"})
        changes = committed_changes(self.broker.bootstrap, t)
        self.assertEqual(sorted(c for c in changes if c[2] == "insert"),
                         sorted((k, "txn-" + k, "insert") for k in keys))
        self.assertEqual(sorted(c for c in changes if c[2] == "update"),
                         sorted((k, "plain-" + k, "update") for k in keys))
        self.assertBrokerAlive()


class PkTransactionAcrossRestart(itutil.BrokerTestCase):
    overrides = {"transaction.max.timeout.ms": "300000"}

    def test_open_transaction_on_a_table_survives_kill_9_and_commits(self):
        t = itutil.unique_topic("pkcrash")
        itutil.ck_create_topic(self.broker.bootstrap, t, 1, {"table.type": "primary-key"})
        tid = itutil.unique_topic("tid")
        p = txn_producer(self.broker.bootstrap, tid)
        p.init_transactions(30)
        p.begin_transaction()
        p.produce(t, key=b"k", value=b"in-txn", partition=0)
        p.flush(30)
        # kill -9, then the same port, so that the producer finds the broker again.
        self.broker.overrides["listeners"] = "PLAINTEXT://127.0.0.1:%d" % self.broker.port
        self.broker.restart(clean=False)
        self.assertEqual(rows(self.broker, t, ["k"]), {})
        # Still held: a plain write is refused (acks=1, no retries: the error comes back).
        from confluent_kafka import Producer, KafkaError
        errs = []
        q = Producer({"bootstrap.servers": self.broker.bootstrap, "retries": 0, "acks": 1,
                      "enable.idempotence": False})
        q.produce(t, key=b"k", value=b"plain", partition=0, on_delivery=lambda e, m: errs.append(e))
        q.flush(30)
        self.assertEqual(len(errs), 1)
        self.assertIsNotNone(errs[0])
        self.assertEqual(errs[0].code(), KafkaError.NOT_ENOUGH_REPLICAS)
        p.commit_transaction(60)
        self.assertEqual(rows(self.broker, t, ["k"]), {"k": "in-txn"})
        self.assertBrokerAlive()


if __name__ == "__main__":
    unittest.main()
