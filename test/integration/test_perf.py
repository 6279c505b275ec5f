"""strata-perf (issue 6) against a live broker at a small scale: produce, consume, e2e, create and
lookup each print ONE parsable JSON summary line on stdout with the requested record counts and
ordered latency percentiles, cross-checked against the broker (partition high watermarks through
confluent-kafka; Lookup finds exactly the keys that were loaded, and about half when the key space
is twice the loaded one); the in-process pk-apply and pk-restart modes report both sides of their
comparison. The binary comes from $STRATA_PERF (set by meson), else build/."""
import json
import os
import subprocess
import sys
import time
import unittest

import itutil
from itutil import BrokerTestCase, unique_topic

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PERF = os.environ.get("STRATA_PERF", os.path.join(ROOT, "build", "tools", "perf", "strata-perf"))


def perf(*args, timeout=120, check=True):
    """Runs strata-perf; returns (summary dict or None, completed process)."""
    p = subprocess.run([PERF] + [str(a) for a in args], capture_output=True, text=True,
                       timeout=timeout)
    lines = [l for l in p.stdout.splitlines() if l.strip()]
    if check:
        assert p.returncode == 0, "strata-perf %s failed (%d): %s" % (args[0], p.returncode, p.stderr)
        assert len(lines) == 1, "want one stdout line, got %r" % (p.stdout,)
    return (json.loads(lines[0]) if len(lines) == 1 else None), p


class PerfTest(BrokerTestCase):

    def assertLatencyOrdered(self, lat, samples):
        self.assertEqual(lat["samples"], samples)
        self.assertGreater(lat["min_us"], 0)
        self.assertLessEqual(lat["min_us"], lat["p50_us"])
        self.assertLessEqual(lat["p50_us"], lat["p99_us"])
        self.assertLessEqual(lat["p99_us"], lat["p999_us"])
        self.assertLessEqual(lat["p999_us"], lat["max_us"])
        self.assertLessEqual(lat["mean_us"], lat["max_us"])

    def high_watermarks(self, topic, partitions):
        c = itutil.ck_consumer(self.broker.bootstrap)
        try:
            from confluent_kafka import TopicPartition
            return [c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                    for p in range(partitions)]
        finally:
            c.close()

    def create(self, topic, partitions, *configs):
        args = ["create", "--bootstrap", self.broker.bootstrap, "--topic", topic,
                "--partitions", partitions]
        for c in configs:
            args += ["--config", c]
        j, _ = perf(*args)
        self.assertEqual(j, {"mode": "create", "topic": topic, "partitions": partitions})

    def test_create_sends_the_replication_factor(self):
        # A single node refuses more than one replica: the flag reaches CreateTopics.
        j, p = perf("create", "--bootstrap", self.broker.bootstrap, "--topic", unique_topic("rf"),
                    "--partitions", 1, "--replication-factor", 2, check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIsNone(j)
        self.assertIn("Invalid replication factor", p.stderr)
        topic = unique_topic("rf")
        j, _ = perf("create", "--bootstrap", self.broker.bootstrap, "--topic", topic,
                    "--partitions", 2, "--replication-factor", 1)
        self.assertEqual(j, {"mode": "create", "topic": topic, "partitions": 2})

    def test_produce_then_consume(self):
        topic = unique_topic("perf")
        self.create(topic, 3)
        j, p = perf("produce", "--bootstrap", self.broker.bootstrap, "--topic", topic,
                    "--num-records", 20000, "--record-size", 100)
        self.assertEqual(j["mode"], "produce")
        self.assertEqual(j["records"], 20000)
        self.assertEqual(j["bytes"], 20000 * 100)
        self.assertGreater(j["records_per_s"], 0)
        self.assertAlmostEqual(j["records_per_s"], j["records"] / j["seconds"], delta=1)
        self.assertLatencyOrdered(j["latency"], 20000)
        self.assertEqual(sum(self.high_watermarks(topic, 3)), 20000)

        j, _ = perf("consume", "--bootstrap", self.broker.bootstrap, "--topic", topic,
                    "--num-records", 20000)
        self.assertEqual((j["mode"], j["records"], j["bytes"]), ("consume", 20000, 2000000))
        # Asking for more than the topic holds fails after the idle timeout, printing nothing.
        j, p = perf("consume", "--bootstrap", self.broker.bootstrap, "--topic", topic,
                    "--num-records", 20001, "--timeout", 1500, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIsNone(j)
        self.assertIn("after 20000 records", p.stderr)

    def test_produce_transactional(self):
        # 2,050 records in transactions of 500: 5 commits (the last one of 50 records); every
        # record is committed, so the read_committed end (the LSO) is the high watermark minus
        # one COMMIT marker per transaction and partition written.
        topic = unique_topic("perf-txn")
        self.create(topic, 2)
        j, _ = perf("produce", "--bootstrap", self.broker.bootstrap, "--topic", topic,
                    "--num-records", 2050, "--record-size", 50, "--transactional", 500)
        self.assertEqual((j["records"], j["transactions"], j["records_per_transaction"]),
                         (2050, 5, 500))
        self.assertLatencyOrdered(j["commit_latency"], 5)
        from confluent_kafka import TopicPartition
        c = itutil.ck_consumer(self.broker.bootstrap, isolation_level="read_committed")
        try:
            c.assign([TopicPartition(topic, p, 0) for p in range(2)])
            got, deadline = 0, time.time() + 30
            while got < 2050 and time.time() < deadline:
                m = c.poll(0.5)
                if m is not None and not m.error():
                    got += 1
        finally:
            c.close()
        self.assertEqual(got, 2050)
        hw = sum(self.high_watermarks(topic, 2))
        self.assertGreater(hw, 2050, "markers take offsets too")
        self.assertLessEqual(hw, 2050 + 5 * 2)

    def test_produce_rate_limit(self):
        topic = unique_topic("perf-rate")
        self.create(topic, 1)
        j, _ = perf("produce", "--bootstrap", self.broker.bootstrap, "--topic", topic,
                    "--num-records", 1000, "--record-size", 10, "--throughput", 2000)
        self.assertEqual(j["records"], 1000)
        # 1000 records at 2000/s: the last one is sent ~0.5 s after the first.
        self.assertGreaterEqual(j["seconds"], 0.45)
        self.assertLess(j["records_per_s"], 2300)

    def test_e2e(self):
        topic = unique_topic("perf-e2e")
        self.create(topic, 2)
        # Records already in the topic (another run) are ignored by the nonce check.
        perf("produce", "--bootstrap", self.broker.bootstrap, "--topic", topic,
             "--num-records", 100, "--record-size", 40)
        j, _ = perf("e2e", "--bootstrap", self.broker.bootstrap, "--topic", topic,
                    "--num-records", 600, "--throughput", 600, "--record-size", 64)
        self.assertEqual(j["mode"], "e2e")
        self.assertEqual(j["records"], 600)
        self.assertEqual(j["duplicates"], 0)
        self.assertGreaterEqual(j["seconds"], 0.9)
        self.assertLatencyOrdered(j["latency"], 600)
        self.assertLess(j["latency"]["p50_us"], 500000)
        self.assertEqual(sum(self.high_watermarks(topic, 2)), 700)

    def test_lookup(self):
        table = unique_topic("perf-pk")
        self.create(table, 4, "table.type=primary-key")
        j, _ = perf("produce", "--bootstrap", self.broker.bootstrap, "--topic", table,
                    "--num-records", 3000, "--record-size", 100, "--key-space", 2000,
                    "--producer-prop", "partitioner=murmur2")
        self.assertEqual(j["records"], 3000)
        # Every loaded key is found (2,000 keys, batches of 16 over 4 partitions).
        j, _ = perf("lookup", "--bootstrap", self.broker.bootstrap, "--table", table,
                    "--keys", 2000, "--batch-size", 16, "--concurrency", 2,
                    "--num-requests", 200, "--expect-found")
        self.assertEqual(j["mode"], "lookup")
        self.assertEqual(j["partitions"], 4)
        self.assertEqual(j["requests"], 200)
        self.assertEqual(j["keys"], 3200)
        self.assertEqual(j["found"], 3200)
        self.assertLatencyOrdered(j["latency"], 200)
        self.assertAlmostEqual(j["keys_per_s"], 16 * j["requests_per_s"], delta=1)
        # Key space twice the loaded one: about half the keys exist.
        j, _ = perf("lookup", "--bootstrap", self.broker.bootstrap, "--table", table,
                    "--keys", 4000, "--batch-size", 8, "--concurrency", 1, "--num-requests", 250)
        self.assertEqual(j["keys"], 2000)
        self.assertTrue(800 < j["found"] < 1200, j)
        _, p = perf("lookup", "--bootstrap", self.broker.bootstrap, "--table", table,
                    "--keys", 4000, "--num-requests", 20, "--expect-found", check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("were not found", p.stderr)
        # Zipf over the loaded keys; single-key requests for a short duration.
        j, _ = perf("lookup", "--bootstrap", self.broker.bootstrap, "--table", table,
                    "--keys", 2000, "--batch-size", 1, "--distribution", "zipf:1.1",
                    "--duration", 0.5, "--expect-found")
        self.assertEqual(j["distribution"], "zipf:1.1")
        self.assertGreater(j["requests"], 0)
        self.assertEqual(j["found"], j["keys"])
        self.assertGreaterEqual(j["seconds"], 0.5)

    def test_lookup_projection_on_a_typed_table(self):
        table = unique_topic("perf-typed")
        itutil.ck_create_topic(self.broker.bootstrap, table, 2,
                               {"table.type": "primary-key", "table.value.format": "json"})
        p = itutil.ck_producer(self.broker.bootstrap, partitioner="murmur2_random")
        rows = [{"topic": table, "key": b"key:%012d" % i,
                 "value": json.dumps({"c%02d" % c: c for c in range(50)}).encode()}
                for i in range(500)]
        itutil.ck_produce_all(p, rows)
        full, _ = perf("lookup", "--bootstrap", self.broker.bootstrap, "--table", table,
                       "--keys", 500, "--num-requests", 50, "--expect-found")
        proj, _ = perf("lookup", "--bootstrap", self.broker.bootstrap, "--table", table,
                       "--keys", 500, "--num-requests", 50, "--expect-found",
                       "--columns", "c07,c21,c42")
        self.assertEqual(proj["columns"], ["c07", "c21", "c42"])
        self.assertEqual(full["keys"], proj["keys"])
        per_key = len(json.dumps({"c07": 7, "c21": 21, "c42": 42}, separators=(",", ":")))
        self.assertEqual(proj["value_bytes"], per_key * proj["keys"])
        self.assertGreater(full["value_bytes"], 10 * proj["value_bytes"])

    def test_lookup_errors(self):
        log_topic = unique_topic("perf-log")
        self.create(log_topic, 1)
        for table in (log_topic, unique_topic("perf-missing")):
            j, p = perf("lookup", "--bootstrap", self.broker.bootstrap, "--table", table,
                        "--num-requests", 1, check=False)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIsNone(j)
            self.assertIn("DescribeTable", p.stderr)
        _, p = perf("lookup", "--distribution", "pareto", check=False)
        self.assertNotEqual(p.returncode, 0)
        _, p = perf("produce", "--bootstrap", self.broker.bootstrap, "--topic", log_topic,
                    "--producer-prop", "no.such.property=1", check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("no.such.property", p.stderr)

    def test_pk_apply_and_restart_in_process(self):
        j, _ = perf("pk-apply", "--records", 6000, "--keys", 4000, "--batch", 500,
                    "--read-variants", "--typed", "--history")
        self.assertEqual((j["records"], j["key_space"], j["batch"]), (6000, 4000, 500))
        s, r = j["strata"], j["rocksdb"]
        self.assertGreater(s["records_per_s"], 0)
        self.assertGreater(r["records_per_s"], 0)
        self.assertAlmostEqual(j["ratio"], s["records_per_s"] / r["records_per_s"], places=6)
        self.assertAlmostEqual(s["seconds"], s["compute_s"] + s["append_s"] + s["apply_s"], places=6)
        self.assertGreater(s["log_bytes"], 6000 * 100)
        # Raw Get-then-Put: records 4000..5999 rewrite keys written by records 0..1999.
        for v in ("get_put", "get_put_memtable_bloom"):
            self.assertEqual(j["rocksdb_variants"][v]["existing"], 2000)
            self.assertGreater(j["rocksdb_variants"][v]["records_per_s"], 0)
        # Typed tables: JSON rows through aggregation tables (json, and confluent with a JSON
        # Schema and an Avro table schema) and a last_row json table; raw rows through a table
        # keeping history.
        for t in ("aggregation", "confluent_json_aggregation", "confluent_avro_aggregation",
                  "json_last_row", "history_last_row"):
            typed = j["typed"][t]
            self.assertGreater(typed["records_per_s"], 0)
            self.assertAlmostEqual(typed["ratio_vs_strata_raw"],
                                   typed["records_per_s"] / s["records_per_s"], places=6)
        j, _ = perf("pk-restart", "--keys", 5000, "--crash")
        self.assertEqual(j["keys"], 5000)
        for k in ("clean", "crash"):
            self.assertGreater(j[k]["ready_s"], 0)
            self.assertGreaterEqual(j[k]["ready_s"], j[k]["open_s"])
        # History index layouts: each point (a key written at or before it) is answered, and the
        # answer's record is found in the log; rows in the index take more bytes than positions.
        j, _ = perf("history-layouts", "--records", 6000, "--keys", 2000, "--batch", 100,
                    "--reads", 3000)
        self.assertEqual((j["reads"]["points"], j["reads"]["found"]), (3000, 3000))
        self.assertGreater(j["reads"]["log_bytes_per_answer"], 100)
        w = j["writes"]
        self.assertLess(w["positions"]["sst_bytes"], w["rows"]["sst_bytes"])
        self.assertGreater(w["rows"]["records_per_s"], 0)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
