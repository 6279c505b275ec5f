"""Integration tests of the `strata` admin CLI (issues 5 + 6) against a live broker.

Every command runs with `--output json` and the parsed JSON is checked against what real Kafka
clients (kafka-python, confluent-kafka) wrote or read. Binary: $STRATA_CLI (default
build/tools/cli/strata). Exit codes: 0 ok, 1 Kafka error, 2 usage, 3 connection.
"""
import json
import os
import socket
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import itutil  # noqa: E402

CLI = os.environ.get("STRATA_CLI") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "tools", "cli", "strata")


class CliTestCase(itutil.BrokerTestCase):
    """One broker per test file (harness.BrokerProcess) and CLI helpers."""

    def run_cli(self, *args, stdin=None, expect=0):
        """Runs `strata --bootstrap-server B --output json ARGS`; returns (rc, stdout, stderr)."""
        cmd = [CLI, "--bootstrap-server", self.broker.bootstrap, "--output", "json"] + list(args)
        p = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=60)
        if expect is not None:
            self.assertEqual(p.returncode, expect, "%s\nstdout: %s\nstderr: %s" %
                             (cmd, p.stdout, p.stderr))
        return p.returncode, p.stdout, p.stderr

    def cli_json(self, *args, stdin=None, expect=0):
        _, out, _ = self.run_cli(*args, stdin=stdin, expect=expect)
        return json.loads(out)

    def cli_lines(self, *args, stdin=None):
        _, out, _ = self.run_cli(*args, stdin=stdin)
        return [json.loads(line) for line in out.splitlines() if line.strip()]


class CliCommands(CliTestCase):
    """topic, config, cluster, produce/consume and table commands on one broker."""

    def test_topic_lifecycle(self):
        t = itutil.unique_topic("cli-topic")
        created = self.cli_json("topic", "create", t, "--partitions", "2",
                                "--config", "retention.ms=3600000")
        self.assertEqual(created["topic"], t)
        self.assertEqual(created["partitions"], 2)
        self.assertTrue(created["topic_id"])

        names = [x["name"] for x in self.cli_json("topic", "list")["topics"]]
        self.assertIn(t, names)

        d = self.cli_json("topic", "describe", t)
        self.assertEqual([p["partition"] for p in d["partitions"]], [0, 1])
        self.assertEqual(d["topic_id"], created["topic_id"])
        cfg = {c["name"]: c for c in d["configs"]}
        self.assertEqual(cfg["retention.ms"]["value"], "3600000")
        self.assertEqual(cfg["retention.ms"]["source"], "TOPIC_CONFIG")
        self.assertEqual(cfg["cleanup.policy"]["source"], "DEFAULT_CONFIG")

        # Offsets in describe follow produced records.
        self.run_cli("produce", t, "--partition", "1", stdin="a\nb\nc\n")
        d = self.cli_json("topic", "describe", t)
        ends = {p["partition"]: p["log_end_offset"] for p in d["partitions"]}
        self.assertEqual(ends, {0: 0, 1: 3})

        # alter: more partitions and a config change, both visible in describe.
        self.cli_json("topic", "alter", t, "--partitions", "4", "--config", "retention.ms=7200000")
        d = self.cli_json("topic", "describe", t)
        self.assertEqual(len(d["partitions"]), 4)
        cfg = {c["name"]: c for c in d["configs"]}
        self.assertEqual(cfg["retention.ms"]["value"], "7200000")

        deleted = self.cli_json("topic", "delete", t)
        self.assertTrue(deleted["deleted"])
        names = [x["name"] for x in self.cli_json("topic", "list")["topics"]]
        self.assertNotIn(t, names)

    def test_exit_codes(self):
        missing = itutil.unique_topic("cli-missing")
        err = self.cli_json("topic", "describe", missing, expect=1)
        self.assertEqual(err["error"]["name"], "UNKNOWN_TOPIC_OR_PARTITION")
        rc, _, stderr = self.run_cli("consume", missing, expect=1)
        self.assertIn("UNKNOWN_TOPIC_OR_PARTITION", stderr)
        self.assertEqual(len(stderr.strip().splitlines()), 1)  # one-line error

        t = itutil.unique_topic("cli-dup")
        self.cli_json("topic", "create", t)
        err = self.cli_json("topic", "create", t, expect=1)
        self.assertEqual(err["error"]["name"], "TOPIC_ALREADY_EXISTS")

        # A dead bootstrap server: exit 3.
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        dead = "127.0.0.1:%d" % s.getsockname()[1]
        s.close()
        p = subprocess.run([CLI, "--bootstrap-server", dead, "--output", "json", "topic", "list"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertEqual(json.loads(p.stdout)["error"]["name"], "CONNECTION")

        # Usage errors: exit 2.
        p = subprocess.run([CLI, "topic", "create"], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        for bad in ("h:abc", "127.0.0.1:1x", "127.0.0.1:70000", ":9092", "[::1"):
            p = subprocess.run([CLI, "--bootstrap-server", bad, "--output", "json", "topic",
                                "list"], capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 2, (bad, p.stderr))
            self.assertEqual(json.loads(p.stdout)["error"]["name"], "USAGE")
        p = subprocess.run([CLI, "--bootstrap-server", self.broker.bootstrap, "group",
                            "reset-offsets", "g", "--topic", t], capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(p.returncode, 2, p.stderr)

    def test_cluster_describe(self):
        c = self.cli_json("cluster", "describe")
        self.assertTrue(c["cluster_id"])
        self.assertEqual(len(c["brokers"]), 1)
        self.assertEqual(c["brokers"][0]["port"], self.broker.port)
        self.assertEqual(c["controller_id"], c["brokers"][0]["node_id"])

    def test_config_set_is_visible_and_effective(self):
        t = itutil.unique_topic("cli-config")
        self.cli_json("topic", "create", t)
        big = "x" * 5000
        self.run_cli("produce", t, stdin=big + "\n")  # accepted with the default limit

        r = self.cli_json("config", "set", "--topic", t, "max.message.bytes=2000")
        self.assertEqual(r["set"], {"max.message.bytes": "2000"})
        cfg = {c["name"]: c for c in self.cli_json("config", "describe", "--topic", t)["configs"]}
        self.assertEqual(cfg["max.message.bytes"]["value"], "2000")
        self.assertEqual(cfg["max.message.bytes"]["source"], "TOPIC_CONFIG")
        err = self.cli_json("produce", t, stdin=big + "\n", expect=1)
        self.assertEqual(err["error"]["name"], "MESSAGE_TOO_LARGE")
        ok = self.cli_json("produce", t, stdin="small\n")
        self.assertEqual(ok["count"], 1)

        self.cli_json("config", "delete", "--topic", t, "max.message.bytes")
        cfg = {c["name"]: c for c in self.cli_json("config", "describe", "--topic", t)["configs"]}
        self.assertNotEqual(cfg["max.message.bytes"]["source"], "TOPIC_CONFIG")
        self.cli_json("produce", t, stdin=big + "\n")  # accepted again

        # Broker configs: the default broker is the controller; an explicit id works too.
        b = self.cli_json("config", "describe", "--broker")
        self.assertEqual(b["resource"]["type"], "broker")
        names = {c["name"] for c in b["configs"]}
        self.assertIn("compression.type", names)
        bid = b["resource"]["name"]
        b2 = self.cli_json("config", "describe", "--broker", bid)
        self.assertEqual({c["name"] for c in b2["configs"]}, names)
        # A dynamic broker config: set, visible with its source, deleted again.
        self.cli_json("config", "set", "--broker", bid, "compression.type=gzip")
        cfg = {c["name"]: c for c in self.cli_json("config", "describe", "--broker", bid,
                                                   "compression.type")["configs"]}
        self.assertEqual(cfg["compression.type"]["value"], "gzip")
        self.assertEqual(cfg["compression.type"]["source"], "DYNAMIC_BROKER_CONFIG")
        self.cli_json("config", "delete", "--broker", bid, "compression.type")
        cfg = {c["name"]: c for c in self.cli_json("config", "describe", "--broker",
                                                   bid)["configs"]}
        self.assertEqual(cfg["compression.type"]["value"], "producer")
        # `--broker` right before a key: the key is not taken as the broker id (the controller
        # is used), for set, describe and delete.
        r = self.cli_json("config", "set", "--broker", "compression.type=gzip")
        self.assertEqual((r["resource"], r["set"]),
                         ({"type": "broker", "name": bid}, {"compression.type": "gzip"}))
        d = self.cli_json("config", "describe", "--broker", "compression.type")
        self.assertEqual(d["resource"], {"type": "broker", "name": bid})
        self.assertEqual([(c["name"], c["value"]) for c in d["configs"]],
                         [("compression.type", "gzip")])
        r = self.cli_json("config", "delete", "--broker", "compression.type")
        self.assertEqual((r["resource"]["name"], r["deleted"]), (bid, ["compression.type"]))
        d = self.cli_json("config", "describe", "--broker", "compression.type", "log.retention.ms")
        self.assertEqual({c["name"]: c["value"] for c in d["configs"]}["compression.type"],
                         "producer")
        self.assertEqual(sorted(c["name"] for c in d["configs"]),
                         ["compression.type", "log.retention.ms"])
        # A broker id that is not a number: usage error (not "broker 1").
        for bad in (["describe", "--broker", "1abc"], ["set", "--broker", "1abc", "a=b"],
                    ["delete", "--broker", "-1", "k"], ["set", "--broker", "abc"]):
            err = self.cli_json("config", *bad, expect=2)
            self.assertEqual(err["error"]["name"], "USAGE", bad)
        # Neither or both resources: usage error.
        self.run_cli("config", "describe", expect=2)
        # A config key the topic does not have: the Kafka error, exit 1.
        err = self.cli_json("config", "set", "--topic", t, "no.such.key=1", expect=1)
        self.assertIn(err["error"]["name"], ("INVALID_CONFIG", "INVALID_REQUEST"))

    def test_produce_consume_round_trip(self):
        t = itutil.unique_topic("cli-records")
        self.cli_json("topic", "create", t, "--partitions", "3")
        lines = ["k%d|value-%d" % (i, i) for i in range(30)]
        before = int(time.time() * 1000)
        r = self.cli_json("produce", t, "--key-separator", "|", "--header", "src=cli",
                          "--header", "n=1", stdin="\n".join(lines) + "\n")
        self.assertEqual(r["count"], 30)
        self.assertEqual(sum(p["count"] for p in r["partitions"]), 30)

        recs = self.cli_lines("consume", t)
        self.assertEqual(len(recs), 30)
        got = {x["key"]: x for x in recs}
        for i in range(30):
            x = got["k%d" % i]
            self.assertEqual(x["value"], "value-%d" % i)
            self.assertEqual(x["headers"], [{"key": "src", "value": "cli"},
                                            {"key": "n", "value": "1"}])
            self.assertGreaterEqual(x["timestamp"], before)

        # The same records through confluent-kafka (keys routed by murmur2 like Java).
        msgs = itutil.ck_consume(self.broker.bootstrap, t, [0, 1, 2], 30)
        ck = {m.key().decode(): (m.partition(), m.value().decode(), m.headers()) for m in msgs}
        for x in recs:
            self.assertEqual(ck[x["key"]][0], x["partition"])
            self.assertEqual(ck[x["key"]][1], x["value"])
            self.assertEqual(ck[x["key"]][2], [("src", b"cli"), ("n", b"1")])

        # Records written by a Kafka client come back through the CLI.
        p = itutil.ck_producer(self.broker.bootstrap)
        itutil.ck_produce_all(p, [{"topic": t, "partition": 2, "key": b"ext", "value": b"v",
                                   "headers": [("h", b"x")]}])
        last = self.cli_lines("consume", t, "--partition", "2")[-1]
        self.assertEqual((last["key"], last["value"], last["headers"]),
                         ("ext", "v", [{"key": "h", "value": "x"}]))

        # --partition / --offset / --limit / --timestamp.
        p1 = [x for x in recs if x["partition"] == 1]
        sub = self.cli_lines("consume", t, "--partition", "1", "--offset", "2", "--limit", "3")
        self.assertEqual([x["offset"] for x in sub], [2, 3, 4][:max(0, len(p1) - 2)])
        future = self.cli_lines("consume", t, "--timestamp", str(int(time.time() * 1000) + 60000))
        self.assertEqual(future, [])
        all_ts = self.cli_lines("consume", t, "--timestamp", str(before - 1000))
        self.assertEqual(len(all_ts), 31)
        # --follow long-polls and prints a record produced after it started. It starts at the
        # partition's end offset read beforehand, so the produce may land before or after the
        # consumer's first Fetch (no timing assumption).
        desc = self.cli_json("topic", "describe", t)
        end1 = next(p["log_end_offset"] for p in desc["partitions"] if p["partition"] == 1)
        proc = subprocess.Popen([CLI, "-b", self.broker.bootstrap, "-o", "json", "consume", t,
                                 "--follow", "--limit", "1", "--partition", "1",
                                 "--offset", str(end1)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            self.run_cli("produce", t, "--partition", "1", "--key-separator", "|",
                         stdin="late|news\n")
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        self.assertEqual(proc.returncode, 0, err)
        late = json.loads(out)
        self.assertEqual((late["partition"], late["key"], late["value"]), (1, "late", "news"))
        # Text formats.
        _, out, _ = self.run_cli_text("consume", t, "--partition", "1", "--format", "kv",
                                      "--limit", "1")
        first = min(p1, key=lambda x: x["offset"])
        self.assertEqual(out, "%s\t%s\n" % (first["key"], first["value"]))

    def run_cli_text(self, *args, stdin=None):
        cmd = [CLI, "--bootstrap-server", self.broker.bootstrap] + list(args)
        p = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.returncode, p.stdout, p.stderr

    def test_table_commands_against_a_model(self):
        t = itutil.unique_topic("cli-pk")
        created = self.cli_json("table", "create", t, "--partitions", "4")
        self.assertEqual(created["configs"]["table.type"], "primary-key")
        model = {}
        changes = []  # (kind, key, before, after) in write order per key

        def write(key, value):
            old = model.get(key)
            if value is None:
                if old is not None:
                    changes.append(("delete", key, old, None))
                    del model[key]
            elif old is None:
                changes.append(("insert", key, None, value))
                model[key] = value
            elif old != value:
                changes.append(("update", key, old, value))
                model[key] = value

        # kafka-python (murmur2 partitioner) writes upserts and deletes.
        prod = itutil.kp_producer(self.broker.bootstrap)
        for i in range(40):
            k, v = "user-%02d" % i, "row-%d" % i
            prod.send(t, key=k.encode(), value=v.encode()).get(timeout=30)
            write(k, v)
        for i in range(0, 40, 5):
            k = "user-%02d" % i
            prod.send(t, key=k.encode(), value=None).get(timeout=30)
            write(k, None)
        for i in range(1, 40, 7):
            k, v = "user-%02d" % i, "row-%d-v2" % i
            prod.send(t, key=k.encode(), value=v.encode()).get(timeout=30)
            write(k, v)
        prod.close()
        # librdkafka (confluent-kafka) with Java's partitioner writes to the same table.
        ck = itutil.ck_producer(self.broker.bootstrap, partitioner="murmur2_random")
        items = []
        for i in range(30, 45):
            k, v = "user-%02d" % i, "ck-%d" % i
            items.append({"topic": t, "key": k.encode(), "value": v.encode()})
            write(k, v)
        itutil.ck_produce_all(ck, items)

        # The CLI's own writes.
        put = self.cli_json("table", "put", t, "cli-key", "cli-value")
        write("cli-key", "cli-value")
        self.cli_json("table", "put", t, "user-03", "from-cli")
        write("user-03", "from-cli")
        d = self.cli_json("table", "delete", t, "user-04")
        write("user-04", None)
        self.assertTrue(d["deleted"])
        self.assertIn(put["partition"], range(4))

        # get: latest rows and absent keys, in argument order.
        keys = ["user-%02d" % i for i in range(45)] + ["cli-key", "never"]
        got = self.cli_json("table", "get", t, *keys)["rows"]
        self.assertEqual([r["key"] for r in got], keys)
        for r in got:
            self.assertEqual(r["found"], r["key"] in model, r)
            self.assertEqual(r["value"], model.get(r["key"]), r)
        # Text form: KEY<TAB>VALUE / KEY<TAB>(absent).
        p = subprocess.run([CLI, "-b", self.broker.bootstrap, "table", "get", t, "user-03",
                            "user-00"], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.stdout, "user-03\tfrom-cli\nuser-00\t(absent)\n")

        # scan: every row exactly once; --limit; --prefix.
        s = self.cli_json("table", "scan", t)
        self.assertEqual(sorted((r["key"], r["value"]) for r in s["rows"]), sorted(model.items()))
        self.assertEqual(len(s["rows"]), len(model))
        self.assertEqual(len(self.cli_json("table", "scan", t, "--limit", "5")["rows"]), 5)
        pref = self.cli_json("table", "scan", t, "--prefix", "user-1")["rows"]
        self.assertEqual(sorted(r["key"] for r in pref),
                         sorted(k for k in model if k.startswith("user-1")))

        # changelog: exactly the model's changes (per key in order; kinds, before/after).
        log = self.cli_json("table", "changelog", t)["changes"]
        self.assertEqual(len(log), len(changes))
        by_key = {}
        for c in sorted(log, key=lambda c: (c["partition"], c["offset"])):
            by_key.setdefault(c["key"], []).append((c["kind"], c["key"], c["before"], c["after"]))
        want = {}
        for c in changes:
            want.setdefault(c[1], []).append(c)
        self.assertEqual(by_key, want)
        limited = self.cli_json("table", "changelog", t, "--limit", "3")["changes"]
        self.assertEqual(len(limited), 3)
        # Paging with --limit: next_offsets of a page cut short point right after the last change
        # printed in each partition, so resuming partition by partition from them yields exactly
        # the remaining changes (none skipped, none repeated).
        page = self.cli_json("table", "changelog", t, "--limit", "7")
        seen = [(c["partition"], c["offset"]) for c in page["changes"]]
        self.assertEqual(len(seen), 7)
        nxt = page["next_offsets"]
        self.assertEqual(sorted(nxt), ["0", "1", "2", "3"])
        for part, off in nxt.items():
            printed = [o for (p_, o) in seen if p_ == int(part)]
            if printed:
                self.assertGreaterEqual(off, max(printed) + 1, (part, nxt, seen))
        rest = []
        for part, off in sorted(nxt.items()):
            got = self.cli_json("table", "changelog", t, "--from", str(off))["changes"]
            rest.extend((c["partition"], c["offset"]) for c in got if c["partition"] == int(part))
        self.assertEqual(sorted(seen + rest), sorted((c["partition"], c["offset"]) for c in log))
        self.assertEqual(len(seen) + len(rest), len(log))
        later = self.cli_json("table", "changelog", t, "--from", "5")["changes"]
        self.assertEqual(sorted((c["partition"], c["offset"]) for c in later),
                         sorted((c["partition"], c["offset"]) for c in log if c["offset"] >= 5))

        # --follow prints JSON lines and sees a later write.
        # It reads every partition from its log start, so the put may land before or after the
        # follower's first poll (no timing assumption).
        proc = subprocess.Popen([CLI, "-b", self.broker.bootstrap, "-o", "json", "table",
                                 "changelog", t, "--follow", "--limit", str(len(changes) + 1)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            self.cli_json("table", "put", t, "late", "arrival")
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        self.assertEqual(proc.returncode, 0, err)
        lines = [json.loads(x) for x in out.splitlines() if x.strip()]
        self.assertEqual(len(lines), len(changes) + 1)
        self.assertEqual((lines[-1]["kind"], lines[-1]["key"], lines[-1]["after"]) if
                         lines[-1]["key"] == "late" else
                         next((c["kind"], c["key"], c["after"]) for c in lines
                              if c["key"] == "late"),
                         ("insert", "late", "arrival"))

        # describe.
        desc = self.cli_json("table", "describe", t)
        self.assertEqual(desc["table_type"], "primary-key")
        self.assertEqual(desc["merge_engine"], "last_row")
        self.assertEqual(desc["partitioner"], "murmur2")
        self.assertEqual(desc["partition_count"], 4)
        self.assertEqual(sum(p["high_watermark"] for p in desc["partitions"]),
                         40 + 8 + 6 + 15 + 3 + 1)

        # A plain consume shows the change kinds and before-images.
        recs = self.cli_lines("consume", t)
        kinds = [r.get("change") for r in recs]
        self.assertEqual(kinds.count("update"), sum(1 for c in changes if c[0] == "update"))
        upd = next(r for r in recs if r["key"] == "user-03" and r.get("change") == "update")
        self.assertEqual((upd["before"], upd["value"]), ("row-3", "from-cli"))
        _, out, _ = self.run_cli_text("consume", t, "--partition", str(upd["partition"]),
                                      "--offset", str(upd["offset"]), "--limit", "1",
                                      "--format", "change")
        self.assertEqual(out, "%d\t%d\tupdate\tuser-03\trow-3\tfrom-cli\n" %
                         (upd["partition"], upd["offset"]))

    def test_table_errors(self):
        log_topic = itutil.unique_topic("cli-log")
        self.cli_json("topic", "create", log_topic)
        err = self.cli_json("table", "get", log_topic, "k", expect=1)
        self.assertEqual(err["error"]["name"], "INVALID_REQUEST")
        err = self.cli_json("table", "describe", itutil.unique_topic("nope"), expect=1)
        self.assertEqual(err["error"]["name"], "UNKNOWN_TOPIC_OR_PARTITION")
        crc = itutil.unique_topic("cli-crc")
        self.cli_json("table", "create", crc, "--partitions", "3", "--config",
                      "table.partitioner=crc32")
        # put routes with the table's partitioner (a misrouted record would be INVALID_RECORD).
        for i in range(10):
            self.cli_json("table", "put", crc, "k%d" % i, "v%d" % i)
        rows = self.cli_json("table", "get", crc, *["k%d" % i for i in range(10)])["rows"]
        self.assertEqual([r["value"] for r in rows], ["v%d" % i for i in range(10)])
        # produce picks the table's partitioner by itself; forcing murmur2 misroutes some keys.
        lines = "".join("p%d=w%d\n" % (i, i) for i in range(20))
        self.cli_json("produce", crc, "--key-separator", "=", stdin=lines)
        rows = self.cli_json("table", "get", crc, *["p%d" % i for i in range(20)])["rows"]
        self.assertEqual([r["value"] for r in rows], ["w%d" % i for i in range(20)])
        err = self.cli_json("produce", crc, "--key-separator", "=", "--partitioner", "murmur2",
                            stdin=lines, expect=1)
        self.assertEqual(err["error"]["name"], "INVALID_RECORD")


    def test_table_changelog_where(self):
        # --where: only the changes whose row matches (the same filter as the Python client's,
        # tested against a model in it_python_client); a malformed text exits 1 naming it.
        t = itutil.unique_topic("cli-where")
        self.cli_json("table", "create", t, "--partitions", "1", "--config",
                      "table.value.format=json", "--config", "table.statistics.columns=*")
        for i in range(40):
            self.cli_json("table", "put", t, "k%02d" % i,
                          json.dumps({"amount": i, "country": "DE" if i % 3 else None}))
        got = self.cli_json("table", "changelog", t, "--where",
                            "amount >= 30 AND (country = 'DE' OR country IS NULL)")["changes"]
        self.assertEqual(sorted(c["key"] for c in got), ["k%02d" % i for i in range(30, 40)])
        got = self.cli_json("table", "changelog", t, "--where", "country IS NULL AND amount < 9")
        self.assertEqual(sorted(c["key"] for c in got["changes"]), ["k00", "k03", "k06"])
        err = self.cli_json("table", "changelog", t, "--where", "amount >", expect=1)
        self.assertIn("where", err["error"]["message"])

class CliClusterHealth(CliTestCase):
    """`cluster describe` on a single node: its broker (a node id we chose) and a clean bill of
    partition health, in text and JSON."""
    overrides = {"node.id": "7"}

    def run_text(self, *args):
        p = subprocess.run([CLI, "--bootstrap-server", self.broker.bootstrap] + list(args),
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout

    def test_cluster_describe_health(self):
        t = itutil.unique_topic("cli-health")
        self.cli_json("topic", "create", t, "--partitions", "3")

        out = self.run_text("cluster", "describe")
        self.assertIn("controller 7", out)
        rows = [line.split() for line in out.splitlines()]
        self.assertIn(["7", "127.0.0.1:%d" % self.broker.port, "-"], rows)
        self.assertIn("0 under-replicated", out)
        self.assertIn("0 offline", out)
        self.assertNotIn("TOPIC", out)  # no partition table when every partition is healthy
        forced = self.run_text("cluster", "describe", "--partitions")
        self.assertIn("no under-replicated or offline partitions", forced)

        c = self.cli_json("cluster", "describe")
        self.assertEqual(c["controller_id"], 7)
        self.assertEqual([(b["node_id"], b["host"], b["port"]) for b in c["brokers"]],
                         [(7, "127.0.0.1", self.broker.port)])
        self.assertGreaterEqual(c["health"]["partitions"], 3)
        self.assertGreaterEqual(c["health"]["topics"], 1)
        self.assertEqual((c["health"]["under_replicated"], c["health"]["offline"]), (0, 0))
        self.assertEqual(c["unhealthy_partitions"], [])
        self.assertEqual(c["topic_errors"], [])

        # A broker that cannot be reached is the only failure: exit 3.
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        dead = "127.0.0.1:%d" % s.getsockname()[1]
        s.close()
        p = subprocess.run([CLI, "--bootstrap-server", dead, "cluster", "describe"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 3, p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
