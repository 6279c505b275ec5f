"""Partition reassignment, the replication throttle and preferred-leader elections end to end:
three strata-broker processes and a real etcd (cluster_harness.py), one cluster for the whole
file, driven through the `strata` CLI ($STRATA_CLI) and confluent-kafka.

1. A topic with one replica on broker 1 gets records, is reassigned to [2, 3] (with a throttle set
   through `--throttle`), `strata cluster reassign --list` shows it until the controller finished
   it, Metadata then names replicas [2, 3]; broker 1 is killed and every record is read back
   from the new leader.
2. An RF=3 topic led by its preferred replica 1: broker 1 is killed (leadership moves), started
   again and back in sync; `strata cluster elect` moves leadership back to 1 (epoch bump), and a
   second election is not needed.
3. Kafka's errors: unknown broker ids, duplicates, an unknown partition, a cancel of nothing.

By hand, from the source root after `ninja -C build`:
    STRATA_BROKER=build/broker/strata-broker STRATA_CLI=build/tools/cli/strata \\
        /usr/bin/python3 test/integration/test_reassign.py -v
"""
import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_clients import DEADLINE, ClusterClientCase, admin  # noqa: E402
from cluster_harness import Cluster, Etcd  # noqa: E402
import itutil  # noqa: E402
import test_pk_durability as pkdur  # noqa: E402
from itutil import unique_topic  # noqa: E402

CLI = os.environ.get("STRATA_CLI") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "tools", "cli", "strata")
N = 3


class ReassignTest(ClusterClientCase):
    etcd = None
    shared_cluster = None

    @classmethod
    def setUpClass(cls):
        cls.etcd = Etcd().start()
        # Tiny segments and frequent retention passes: retention moves a PK log's start in
        # seconds (test_reassign_pk_table_whose_log_start_moved_by_retention).
        cls.shared_cluster = Cluster(N, cls.etcd.endpoint, {
            "log.segment.bytes.min": "1024", "log.retention.check.interval.ms": "300"})
        cls.shared_cluster.start().wait_ready()

    @classmethod
    def tearDownClass(cls):
        if cls.shared_cluster is not None:
            cls.shared_cluster.cleanup()
        if cls.etcd is not None:
            cls.etcd.cleanup()

    def shared(self):
        return [self.etcd, self.shared_cluster]

    def setUp(self):
        super().setUp()
        self.cluster = self.shared_cluster
        for node in self.cluster.node_ids:  # a test may have left one down
            if not self.cluster.alive(node):
                self.cluster.start(node)
        self.cluster.wait_ready()

    # ------------------------------------------------------------ helpers

    def cli(self, *args, expect=0):
        live = [n for n in self.cluster.node_ids if self.cluster.alive(n)]
        cmd = [CLI, "--bootstrap-server", self.cluster.address(live[-1]), "--output", "json"] + \
            list(args)
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, expect, "%s: rc %d\nstdout %s\nstderr %s" % (
            " ".join(args), p.returncode, p.stdout, p.stderr))
        return json.loads(p.stdout) if p.stdout.strip() else None

    def create_assigned(self, topic, assignment, config=None):
        from confluent_kafka.admin import NewTopic
        a = admin(self.cluster.bootstrap())  # alive until the future is answered
        fs = a.create_topics(
            [NewTopic(topic, len(assignment), replica_assignment=assignment,
                      config=dict(config or {}))],
            request_timeout=DEADLINE)
        fs[topic].result(DEADLINE)

        def in_sync(md):
            ps = self.partitions(md, topic)
            return len(ps) == len(assignment) and all(
                sorted(ps[i].isrs) == sorted(a) and ps[i].leader == a[0]
                for i, a in enumerate(assignment))
        md = self.wait_metadata(topic, in_sync, "%s created as %s" % (topic, assignment))
        # Every running broker knows it before the CLI asks one of them (each answers from its
        # own view of etcd, which may be a moment behind the broker Metadata came from).
        for n in self.cluster.node_ids:
            if self.cluster.alive(n):
                self.wait_metadata(topic, lambda m: len(self.partitions(m, topic)) == len(assignment),
                                   "broker %d knows %s" % (n, topic), via=self.cluster.address(n))
        return md

    def produce(self, topic, values):
        from confluent_kafka import Producer
        p = Producer({"bootstrap.servers": self.cluster.bootstrap(), "acks": "all",
                      "linger.ms": 5, "message.timeout.ms": 60000})
        failed = []
        for v in values:
            p.produce(topic, v.encode(), partition=0,
                      on_delivery=lambda err, m: err and failed.append(err))
        self.assertEqual(p.flush(DEADLINE), 0)
        self.assertEqual(failed, [])

    def reassignments(self, topic):
        return [r for r in self.cli("cluster", "reassign", "--list")["reassignments"]
                if r["topic"] == topic]

    # ------------------------------------------------------------ tests

    def test_reassign_single_replica_then_lose_the_old_broker(self):
        topic = unique_topic("moved")
        self.create_assigned(topic, [[1]])
        values = ["record-%04d" % i for i in range(300)]
        self.produce(topic, values)

        out = self.cli("cluster", "reassign", "--topic", topic, "--partition", "0",
                       "--replicas", "2,3", "--throttle", "50000000")
        self.assertEqual(out["status"], "started")
        self.assertEqual(out["replicas"], [2, 3])
        # Ongoing (or already finished: two small catch-ups can beat the first --list).
        ongoing = self.reassignments(topic)
        if ongoing:
            self.assertEqual(ongoing[0]["adding"], [2, 3])
            self.assertEqual(ongoing[0]["removing"], [1])
            self.assertEqual(sorted(ongoing[0]["replicas"]), [1, 2, 3])
        self.wait_for(lambda: not self.reassignments(topic), "the reassignment to finish")

        def moved(md):
            ps = self.partitions(md, topic)
            return (0 in ps and list(ps[0].replicas) == [2, 3] and
                    sorted(ps[0].isrs) == [2, 3] and ps[0].leader in (2, 3))
        self.wait_metadata(topic, moved, "replicas [2, 3] in sync")
        # The throttle was set on every broker through IncrementalAlterConfigs.
        from confluent_kafka.admin import ConfigResource
        res = ConfigResource("broker", "2")
        a = admin(self.cluster.bootstrap())
        cfg = a.describe_configs([res])[res].result(DEADLINE)
        self.assertEqual(cfg["follower.replication.throttled.rate"].value, "50000000")

        self.cluster.kill(1)
        self.wait_metadata(topic, lambda md: 1 not in md.brokers and moved(md),
                           "broker 1 gone, partition still on [2, 3]")
        got = self.consume_all(topic, 1, {0: len(values) - 1})
        self.assertEqual([v for _, v in got[0]], values)
        self.assertEqual([o for o, _ in got[0]], list(range(len(values))))

    def test_reassign_pk_table_whose_log_start_moved(self):
        """A PK table on broker 1 whose log no longer starts at 0 (DeleteRecords after a
        checkpoint) gets a new replica on broker 2 under load: broker 2 copies the leader's newest
        checkpoint (ReplicaCheckpoint, throttled), replays the log from it, joins the ISR, and
        after broker 1 is killed serves every key with its newest value."""
        from confluent_kafka import Producer
        topic = unique_topic("pkmove")
        self.create_assigned(topic, [[1]], {"table.type": "primary-key",
                                            "table.kv.snapshot.interval.ms": "300"})
        p = Producer({"bootstrap.servers": self.cluster.bootstrap(), "acks": "all",
                      "linger.ms": 5, "message.timeout.ms": 60000})
        model = {}

        def upserts(rnd, n=300):
            for i in range(n):
                k, v = "k%03d" % (i % 200), "v%d-%d" % (rnd, i)
                p.produce(topic, key=k, value=v, partition=0)
                model[k] = v
            self.assertEqual(p.flush(DEADLINE), 0)
        for rnd in range(3):
            upserts(rnd)

        def describe(node):
            return self.cli_on(node, "table", "describe", topic)["partitions"][0]
        hw = describe(1)["high_watermark"]
        self.wait_for(lambda: describe(1)["checkpoint_offset"] >= hw - 1, "a checkpoint at the hw")
        with itutil.RawConn(self.cluster.ports[1]) as c:
            part, low, err = pkdur.delete_records(c, topic, 0, hw)
        self.assertEqual(err, 0)
        self.assertGreater(low, 0, "the log start moved past 0")
        upserts(3)  # past the checkpoint: the new replica replays these from its log
        out = self.cli("cluster", "reassign", "--topic", topic, "--partition", "0",
                       "--replicas", "1,2", "--throttle", "20000000")
        self.assertEqual(out["status"], "started")
        upserts(4, 100)  # under load while it catches up
        self.wait_for(lambda: not self.reassignments(topic), "the reassignment to finish",
                      timeout=DEADLINE * 2)
        self.wait_metadata(topic, lambda md: 0 in self.partitions(md, topic) and sorted(
            self.partitions(md, topic)[0].isrs) == [1, 2], "ISR [1, 2]")
        self.assertTrue(any("copied state checkpoint" in line
                            for line in self.cluster.broker(2).log_lines),
                        "broker 2 restored its state from the leader's checkpoint")
        hw = describe(1)["high_watermark"]
        self.check_moved_state(topic, model, hw)

    def test_reassign_pk_table_whose_log_start_moved_by_retention(self):
        """The same move, but the log start is moved by retention alone: a PK table with the
        default cleanup.policy (delete), tiny segments and a small retention.bytes, under a
        continuous librdkafka upsert stream. Retention deletes segments up to the newest
        checkpoint + 1 (docs/pk-tables.md, "Retention vs state"); the partition then gets a new
        replica on broker 2 while the stream goes on, which must copy the checkpoint. Broker 1 is
        killed and broker 2 serves every key with the newest value that was acknowledged."""
        import threading
        from confluent_kafka import Producer
        topic = unique_topic("pkretmove")
        self.create_assigned(topic, [[1]], {
            "table.type": "primary-key", "table.kv.snapshot.interval.ms": "300",
            "segment.bytes": "8192", "retention.bytes": "16384"})
        acked, failed = [], []  # (offset, key, value) of every acknowledged upsert
        stop = threading.Event()

        def on_delivery(err, m):
            if err:
                failed.append(err)
            else:
                acked.append((m.offset(), m.key().decode(), m.value().decode()))

        def load():
            p = Producer({"bootstrap.servers": self.cluster.bootstrap(), "acks": "all",
                          "enable.idempotence": True, "linger.ms": 5,
                          "message.timeout.ms": 60000})
            i = 0
            while not stop.is_set():
                for _ in range(20):  # ~400 upserts/s of 300 keys
                    p.produce(topic, key="k%03d" % (i % 300), value="v%06d-%s" % (i, "x" * 24),
                              partition=0, on_delivery=on_delivery)
                    i += 1
                p.poll(0.05)
            if p.flush(DEADLINE) != 0:
                failed.append("flush left messages undelivered")
        loader = threading.Thread(target=load)
        loader.start()
        try:
            def log_start():  # DescribeTable's changelog_gap_below is the log start
                return self.cli_on(1, "table", "describe", topic)["partitions"][0][
                    "changelog_gap_below"]
            self.wait_for(lambda: log_start() > 0, "retention to move the log start")
            start_before = log_start()
            copies = self.copied_checkpoints(2, topic)
            out = self.cli("cluster", "reassign", "--topic", topic, "--partition", "0",
                           "--replicas", "1,2", "--throttle", "20000000")
            self.assertEqual(out["status"], "started")
            self.wait_for(lambda: not self.reassignments(topic), "the reassignment to finish",
                          timeout=DEADLINE * 2)
            self.wait_metadata(topic, lambda md: 0 in self.partitions(md, topic) and sorted(
                self.partitions(md, topic)[0].isrs) == [1, 2], "ISR [1, 2]")
            time.sleep(0.5)  # the stream goes on past the move for a moment
        finally:
            stop.set()
            loader.join(DEADLINE * 2)
        self.assertFalse(loader.is_alive())
        self.assertEqual(failed, [])
        self.assertGreater(self.copied_checkpoints(2, topic), copies,
                           "broker 2 restored its state from the leader's checkpoint")
        model = {}
        for _, k, v in sorted(acked):
            model[k] = v
        self.assertEqual(len(model), 300)
        hw = max(o for o, _, _ in acked) + 1
        self.assertGreater(start_before, 0)
        self.check_moved_state(topic, model, hw)

    def copied_checkpoints(self, node, topic):
        return sum(1 for line in self.cluster.broker(node).log_lines
                   if "copied state checkpoint" in line and " of %s-0:" % topic in line)

    def table_rows(self, node, topic, keys, *extra):
        r = subprocess.run([CLI, "-b", self.cluster.address(node), "-o", "json", "table", "get",
                            topic] + keys + list(extra), capture_output=True, text=True,
                           timeout=60)
        return ({row["key"]: row["value"] for row in json.loads(r.stdout)["rows"]}
                if r.returncode == 0 else r.stderr)

    def check_moved_state(self, topic, model, hw):
        """Broker 2 (the new replica) holds `model` key by key, first as a follower read at the
        leader's high watermark `hw`, then as the leader once broker 1 is killed."""
        keys = sorted(model)
        self.wait_for(lambda: self.table_rows(2, topic, keys, "--follower-read", "--min-offset",
                                              str(hw)) == model,
                      "the new replica's rows equal the leader's, key by key")
        self.cluster.kill(1)
        self.wait_metadata(topic, lambda md: 0 in self.partitions(md, topic) and
                           self.partitions(md, topic)[0].leader == 2, "broker 2 leads")
        self.wait_for(lambda: self.table_rows(2, topic, keys) == model,
                      "every key from the new leader")

    def cli_on(self, node, *args):
        p = subprocess.run([CLI, "--bootstrap-server", self.cluster.address(node), "--output",
                            "json"] + list(args), capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)

    def test_preferred_leader_election_after_failover(self):
        topic = unique_topic("preferred")
        self.create_assigned(topic, [[1, 2, 3]])
        self.produce(topic, ["before-%d" % i for i in range(20)])
        self.cluster.kill(1)
        self.wait_metadata(topic, lambda md: self.partitions(md, topic)[0].leader in (2, 3),
                           "a new leader after broker 1 died")
        self.cluster.start(1)
        self.cluster.wait_ready()

        def back_in_sync(md):
            p = self.partitions(md, topic)[0]
            return sorted(p.isrs) == [1, 2, 3] and p.leader in (2, 3)
        self.wait_metadata(topic, back_in_sync, "broker 1 back in the ISR, not leading")

        out = self.cli("cluster", "elect", "--topic", topic, "--partition", "0")
        self.assertEqual(out["results"], [{"topic": topic, "partition": 0, "error": None,
                                           "message": ""}])
        self.wait_metadata(topic, lambda md: self.partitions(md, topic)[0].leader == 1,
                           "the preferred replica leading again")
        again = self.cli("cluster", "elect", "--topic", topic, "--partition", "0")
        self.assertEqual(again["results"][0]["error"], "ELECTION_NOT_NEEDED")
        # Every partition: this one needs nothing now, so it is not in the answer.
        every = self.cli("cluster", "elect")
        self.assertNotIn(topic, [r["topic"] for r in every["results"]])
        # Records written before and after are all there.
        self.produce(topic, ["after-%d" % i for i in range(20)])
        got = self.consume_all(topic, 1, {0: 39})
        self.assertEqual(len(got[0]), 40)

    def test_kafka_errors(self):
        topic = unique_topic("errors")
        self.create_assigned(topic, [[2]])

        def error_of(*args):
            out = self.cli("cluster", "reassign", "--topic", topic, *args, expect=1)
            return out["error"]["name"]
        self.assertEqual(error_of("--partition", "0", "--replicas", "1,9"),
                         "INVALID_REPLICA_ASSIGNMENT")
        self.assertEqual(error_of("--partition", "0", "--replicas", "1,1"),
                         "INVALID_REPLICA_ASSIGNMENT")
        self.assertEqual(error_of("--partition", "5", "--replicas", "1"),
                         "UNKNOWN_TOPIC_OR_PARTITION")
        self.assertEqual(error_of("--partition", "0", "--cancel"), "NO_REASSIGNMENT_IN_PROGRESS")
        out = self.cli("cluster", "elect", "--topic", topic, "--partition", "3", expect=1)
        self.assertEqual(out["results"][0]["error"], "UNKNOWN_TOPIC_OR_PARTITION")
        # Usage errors never reach a broker.
        self.cli("cluster", "reassign", "--topic", topic, "--partition", "0", expect=2)
        self.assertEqual(self.reassignments(topic), [])


if __name__ == "__main__":
    unittest.main()
