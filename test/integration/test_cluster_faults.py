"""Cluster mode under faults: three strata-broker processes on real etcd (cluster_harness.py),
driven by confluent-kafka 1.7 (librdkafka 2.0.2), kafka-python and KafkaJS.

BrokerFaults (one etcd for the class, a cluster per test):
1. SIGSTOP of a partition leader past the lease TTL under a continuous idempotent acks=all
   producer: a new leader takes over, produce continues; after SIGCONT the old leader
   acknowledges nothing of its old epoch (every acknowledged record is read back exactly once, at
   its offset, in order), follows the new leader, truncates what it alone had (its log, read
   offline with strata-dump, equals the leader's) and rejoins the ISR.
2. Divergence: with both followers stopped, the leader takes acks=1 records no follower can have
   fetched and is killed; a follower leads, more is written; the old leader, restarted, truncates
   the lost records: its log (strata-dump) is exactly the new leader's.
3. A rolling clean restart (SIGTERM, start, back in every ISR) of all three brokers under a
   continuous idempotent acks=all producer: no failed send, every record read back exactly once.
4. Other clients: kafka-python creates an RF=3 topic and produces/consumes with acks=all; KafkaJS
   (test/integration/js, skipped when its node_modules are not installed, as test_kafkajs.py
   would fail without them) does the same for produce and admin.
EtcdRestart: kill -9 and restart of the only etcd member while the brokers serve: acks=all keeps
   working, no leader epoch changes, and the brokers' watches resume (a topic created afterwards
   is replicated on every broker).
EtcdMembers: three etcd members, brokers given all endpoints; kill -9 of one member: topic
   creation, acks=all and the failover of a killed leader still work.

Every wait is a deadline on an observable condition, except where a test needs an in-flight
follower long poll (replica.fetch.wait.max.ms) to expire, which no client can observe.

By hand, from the source root after `ninja -C build`:
    STRATA_BROKER=build/broker/strata-broker STRATA_DUMP=build/tools/dump/strata-dump \\
        /usr/bin/python3 test/integration/test_cluster_faults.py -v
"""
import collections
import json
import os
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_clients import DEADLINE, ClusterClientCase  # noqa: E402
from cluster_harness import Cluster, Etcd, EtcdCluster  # noqa: E402
from itutil import unique_topic  # noqa: E402

N = 3
JS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "js")
DUMP = os.environ.get("STRATA_DUMP") or os.path.join(
    os.path.dirname(os.environ.get("STRATA_BROKER", "")), "..", "tools", "dump", "strata-dump")
# Followers long-poll their leader for at most this long (test 2 waits for one to expire).
FETCH_WAIT_MS = 100


class BackgroundProducer:
    """An idempotent acks=all producer writing prefix + "%07d" % i to partition i % partitions from its own
    thread until finish(); keeps every delivery report."""

    def __init__(self, bootstrap, topic, partitions, prefix="", **conf):
        from confluent_kafka import Producer
        c = {"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
             "linger.ms": 5, "message.timeout.ms": 90000, "request.timeout.ms": 5000}
        c.update(conf)
        self.p = Producer(c)
        self.topic = topic
        self.partitions = partitions
        self.prefix = prefix
        self.lock = threading.Lock()
        self.acked, self.failed = [], []
        self.sent = 0
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _cb(self, err, msg):
        with self.lock:
            if err is None:
                self.acked.append((msg.partition(), msg.offset(), msg.value().decode()))
            else:
                self.failed.append((msg.value().decode(), str(err)))

    def _run(self):
        i = 0
        while not self._stop.is_set():
            try:
                self.p.produce(self.topic, value="%s%07d" % (self.prefix, i), partition=i % self.partitions,
                               on_delivery=self._cb)
                i += 1
                self.sent = i
            except BufferError:
                pass
            self.p.poll(0.002)

    def acked_count(self, partition=None):
        with self.lock:
            return sum(1 for a in self.acked if partition is None or a[0] == partition)

    def finish(self, timeout=DEADLINE * 3):
        self._stop.set()
        self.thread.join()
        left = self.p.flush(timeout)
        with self.lock:
            return left, list(self.acked), list(self.failed)


class FaultTestCase(ClusterClientCase):
    """Helpers over self.cluster."""

    def producer(self, **conf):
        from confluent_kafka import Producer
        c = {"bootstrap.servers": self.cluster.bootstrap(), "linger.ms": 5,
             "message.timeout.ms": 60000, "acks": "all", "enable.idempotence": True}
        c.update(conf)
        return Producer(c)

    def produce_acked(self, topic, values, partition=0, producer=None, **conf):
        """Produces values (str) to one partition (with `producer`, else a new one with `conf`);
        returns [(offset, value)] and asserts none failed."""
        p = producer if producer is not None else self.producer(**conf)  # (len() == queued)
        acked, failed = [], []

        def cb(err, msg):
            if err is None:
                acked.append((msg.offset(), msg.value().decode()))
            else:
                failed.append((msg.value().decode(), err))
        for v in values:
            p.produce(topic, value=v, partition=partition, on_delivery=cb)
            p.poll(0)
        self.assertEqual(p.flush(DEADLINE * 2), 0, "records still in flight")
        self.assertEqual(failed, [])
        return acked

    def assert_read_back_exactly_once(self, topic, partitions, acked):
        """Every acknowledged (partition, offset, value) is read back once, at its offset; each
        partition in order. Returns what was read."""
        until = collections.defaultdict(lambda: -1)
        for part, off, _ in acked:
            until[part] = max(until[part], off)
        got = self.consume_all(topic, partitions, until)
        values = [v for recs in got.values() for _, v in recs]
        dup = [v for v, n in collections.Counter(values).items() if n > 1]
        self.assertEqual(dup, [], "records read back more than once")
        at = {(part, off): v for part, recs in got.items() for off, v in recs}
        wrong = [(part, off, v, at.get((part, off))) for part, off, v in acked
                 if at.get((part, off)) != v]
        self.assertEqual(wrong[:20], [], "%d acknowledged records not read back at their offset "
                         "(partition, offset, acked value, read value)" % len(wrong))
        for part in range(partitions):  # per producer (a value's non-digit prefix)
            seqs = collections.defaultdict(list)
            for _, v in got[part]:
                seqs[v.rstrip("0123456789")].append(int(v[len(v.rstrip("0123456789")):]))
            for prefix, seq in seqs.items():
                self.assertEqual(seq, sorted(seq), "partition %d out of order (%r)" % (part, prefix))
        return got

    def partition_state(self, topic, p):
        v = self.etcd_member().get("%s/partitions/%s/%d" % (self.cluster.prefix, topic, p))
        return json.loads(v) if v else None

    def dumped_records(self, node, topic, partition):
        """[(offset, value)] of broker `node`'s local log of topic-partition, read offline by
        strata-dump (the broker must be stopped)."""
        d = os.path.join(self.cluster.broker(node).data_dir, "logs", "%s-%d" % (topic, partition))
        out = []
        for name in sorted(f for f in os.listdir(d) if f.endswith(".log")):
            p = subprocess.run([DUMP, "--output", "json", "segment", os.path.join(d, name),
                                "--records"], capture_output=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            doc = json.loads(p.stdout)
            self.assertEqual(doc["problems"], [], "broker %d %s" % (node, name))
            for b in doc["batches"]:
                out += [(r["offset"], r["value"]) for r in b["records"]]
        return out


class BrokerFaults(FaultTestCase):
    etcd = None

    @classmethod
    def setUpClass(cls):
        cls.etcd = Etcd().start()

    @classmethod
    def tearDownClass(cls):
        if cls.etcd is not None:
            cls.etcd.cleanup()

    def shared(self):
        return [self.etcd]

    def etcd_member(self):
        return self.etcd

    def start_cluster(self, extra=None):
        self.cluster = self.track(Cluster(N, self.etcd.endpoint, extra_props=extra))
        self.cluster.start().wait_ready()

    def test_paused_leader_acknowledges_nothing_of_its_old_epoch(self):
        self.start_cluster()
        topic = unique_topic("pause")
        md = self.create_topic(topic)
        old = self.partitions(md, topic)[0].leader
        epoch = self.partition_state(topic, 0)["leader_epoch"]
        others = ",".join(self.cluster.address(n) for n in self.cluster.node_ids if n != old)
        # "stuck" keeps its requests to the stopped leader open until it resumes, so the resumed
        # leader answers them; "moving" gives up on it after 4 s and continues on the new leader.
        stuck = BackgroundProducer(self.cluster.bootstrap(), topic, 3, prefix="s")
        moving = BackgroundProducer(self.cluster.bootstrap(), topic, 3, prefix="m",
                                    **{"socket.timeout.ms": 4000})
        try:
            self.wait_for(lambda: min(bp.acked_count(0) for bp in (stuck, moving)) >= 100,
                          "acknowledgements before the pause")
            self.cluster.pause(old)
            self.wait_metadata(topic, lambda md: self.partitions(md, topic)[0].leader not in
                               (-1, old), "a new leader of %s-0 while broker %d is stopped" %
                               (topic, old), via=others)
            self.assertGreater(self.partition_state(topic, 0)["leader_epoch"], epoch)
            # Produce continues on the new leader.
            n = moving.acked_count(0)
            self.wait_for(lambda: moving.acked_count(0) >= n + 100, "acknowledgements from the "
                          "new leader of partition 0")
            self.cluster.resume(old)
            self.wait_metadata(topic, self.fully_in_sync(topic, 3),
                               "broker %d back in every ISR" % old, timeout=DEADLINE * 2)
            for bp in (stuck, moving):
                n = bp.acked_count(0)
                self.wait_for(lambda: bp.acked_count(0) >= n + 50,
                              "acknowledgements after the resume")
        finally:
            results = [bp.finish() for bp in (stuck, moving)]
        acked = []
        for left, a, failed in results:
            self.assertEqual(left, 0, "records still in flight")
            self.assertEqual(failed, [])
            acked += a
        self.assertEqual([a for a in acked if a[1] is None][:10], [],
                         "acknowledged without an offset")
        got = self.assert_read_back_exactly_once(topic, 3, acked)
        # The old leader truncated what it alone had: offline, its log is the leader's.
        for n in self.cluster.node_ids:
            self.assertEqual(self.cluster.stop(n), 0, self.cluster.log_tail(n))
        for n in self.cluster.node_ids:
            self.assertEqual(self.dumped_records(n, topic, 0), got[0], "broker %d's log" % n)

    def test_diverged_old_leader_truncates_to_the_new_leaders_log(self):
        self.start_cluster({"replica.fetch.wait.max.ms": str(FETCH_WAIT_MS)})
        topic = unique_topic("diverge")
        md = self.create_topic(topic, partitions=1)
        old = self.partitions(md, topic)[0].leader
        followers = [n for n in self.cluster.node_ids if n != old]
        before = self.produce_acked(topic, ["before-%d" % i for i in range(50)])
        self.assertEqual([o for o, _ in before], list(range(50)))
        for n in followers:
            self.cluster.pause(n)
        # The followers' last long poll must have been answered (empty) before the acks=1
        # records arrive, or they would find them in their socket buffer when resumed.
        time.sleep(FETCH_WAIT_MS * 3 / 1000.0)
        lost = self.produce_acked(topic, ["lost-%d" % i for i in range(20)],
                                  **{"acks": "1", "enable.idempotence": False,
                                     "bootstrap.servers": self.cluster.address(old)})
        self.assertEqual([o for o, _ in lost], list(range(50, 70)))
        self.cluster.kill(old)
        for n in followers:
            self.cluster.resume(n)
        self.wait_metadata(topic, lambda md: self.partitions(md, topic)[0].leader in followers,
                           "a new leader among %s" % followers)
        after = self.produce_acked(topic, ["after-%d" % i for i in range(30)])
        self.assertEqual([o for o, _ in after], list(range(50, 80)))
        self.cluster.start(old).wait_ready([old])
        self.wait_metadata(topic, self.fully_in_sync(topic, 1),
                           "broker %d back in the ISR" % old, timeout=DEADLINE * 2)
        expected = [(o, v) for o, v in before + after]
        got = self.consume_all(topic, 1, {0: 79})
        self.assertEqual(got[0], expected)
        for n in self.cluster.node_ids:
            self.assertEqual(self.cluster.stop(n), 0, self.cluster.log_tail(n))
        for n in self.cluster.node_ids:
            self.assertEqual(self.dumped_records(n, topic, 0), expected, "broker %d's log" % n)

    def test_rolling_restart_fails_no_send(self):
        self.start_cluster()
        topic = unique_topic("rolling")
        self.create_topic(topic)
        bp = BackgroundProducer(self.cluster.bootstrap(), topic, 3)
        try:
            self.wait_for(lambda: bp.acked_count() >= 100, "acknowledgements before the restarts")
            for n in self.cluster.node_ids:
                self.assertEqual(self.cluster.stop(n), 0, self.cluster.log_tail(n))
                self.cluster.start(n).wait_ready([n])
                self.wait_metadata(topic, self.fully_in_sync(topic, 3),
                                   "broker %d back in every ISR" % n, timeout=DEADLINE * 2)
                k = bp.acked_count()
                self.wait_for(lambda: bp.acked_count() >= k + 30,
                              "acknowledgements after broker %d's restart" % n)
        finally:
            left, acked, failed = bp.finish()
        self.assertEqual(left, 0, "records still in flight")
        self.assertEqual(failed, [])
        self.assertEqual(len(acked), bp.sent)
        self.assert_read_back_exactly_once(topic, 3, acked)

    def test_kafka_python_rf3_acks_all(self):
        from kafka import KafkaConsumer, KafkaProducer, TopicPartition
        from kafka.admin import KafkaAdminClient, NewTopic
        self.start_cluster()
        topic = unique_topic("kp")
        a = KafkaAdminClient(bootstrap_servers=self.cluster.bootstrap(),
                             api_version_auto_timeout_ms=10000, request_timeout_ms=30000)
        try:
            a.create_topics([NewTopic(topic, num_partitions=3, replication_factor=3)])
        finally:
            a.close()
        self.wait_metadata(topic, self.fully_in_sync(topic, 3), "%s fully replicated" % topic)
        p = KafkaProducer(bootstrap_servers=self.cluster.bootstrap(), acks="all", linger_ms=5,
                          api_version_auto_timeout_ms=10000, request_timeout_ms=30000)
        try:
            futures = [p.send(topic, value=b"kp-%d" % i, partition=i % 3) for i in range(300)]
            metas = [f.get(timeout=DEADLINE) for f in futures]
        finally:
            p.close()
        for part in range(3):
            self.assertEqual(sorted(m.offset for m in metas if m.partition == part),
                             list(range(100)))
        c = KafkaConsumer(bootstrap_servers=self.cluster.bootstrap(), group_id=None,
                          enable_auto_commit=False, auto_offset_reset="earliest",
                          api_version_auto_timeout_ms=10000)
        try:
            tps = [TopicPartition(topic, q) for q in range(3)]
            c.assign(tps)
            c.seek_to_beginning(*tps)
            got = []
            deadline = time.time() + DEADLINE
            while len(got) < 300:
                self.assertLess(time.time(), deadline, "kafka-python read %d of 300" % len(got))
                for tp, recs in c.poll(timeout_ms=500).items():
                    got += [(tp.partition, r.offset, r.value) for r in recs]
        finally:
            c.close()
        self.assertEqual(sorted(got), sorted((m.partition, m.offset, b"kp-%d" % i)
                                             for i, m in enumerate(metas)))

    def test_kafkajs_rf3_acks_all(self):
        if not os.path.isdir(os.path.join(JS_DIR, "node_modules", "kafkajs")):
            self.skipTest("kafkajs not installed in test/integration/js/node_modules "
                          "(tools/setup.sh runs npm install there)")
        self.start_cluster()
        topic = unique_topic("kjs")
        env = dict(os.environ, NODE_PATH=os.path.join(JS_DIR, "node_modules"))
        p = subprocess.run(["node", os.path.join(JS_DIR, "cluster_rf3.js"),
                            self.cluster.bootstrap(), topic, "300"],
                           cwd=JS_DIR, env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, "node failed:\n%s\n%s" % (p.stdout, p.stderr))
        line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
        self.assertEqual(len(line), 1, p.stdout + p.stderr)
        res = json.loads(line[0][len("RESULT "):])
        self.assertIs(res["created"], True)
        self.assertEqual(sorted(x["partition"] for x in res["partitions"]), [0, 1, 2])
        for x in res["partitions"]:
            self.assertEqual(sorted(x["replicas"]), [1, 2, 3])
        self.assertEqual(sorted((int(o["partition"]), int(o["high"])) for o in res["offsets"]),
                         [(0, 100), (1, 100), (2, 100)])
        got = self.consume_all(topic, 3, {0: 99, 1: 99, 2: 99})
        for part in range(3):
            self.assertEqual([v for _, v in got[part]],
                             ["kjs-%d" % i for i in range(300) if i % 3 == part])


class EtcdRestart(FaultTestCase):
    def etcd_member(self):
        return self.etcd

    def shared(self):
        return []

    def test_etcd_kill_and_restart_changes_no_leadership(self):
        self.etcd = self.track(Etcd().start())
        self.cluster = self.track(Cluster(N, self.etcd.endpoint))
        self.cluster.start().wait_ready()
        topic = unique_topic("etcdrs")
        md = self.create_topic(topic)
        leaders = {p: x.leader for p, x in self.partitions(md, topic).items()}
        epochs = {p: self.partition_state(topic, p)["leader_epoch"] for p in range(3)}
        # Its producer id comes from etcd: taken before the outage.
        p = self.producer()
        self.produce_acked(topic, ["a%d" % i for i in range(50)], producer=p)
        self.etcd.kill()
        # While etcd is down the brokers keep serving with the roles they have.
        down = self.produce_acked(topic, ["b%d" % i for i in range(50)], producer=p)
        self.assertEqual([o for o, _ in down], list(range(50, 100)))
        # Down past the lease TTL: each broker must assume its lease is gone, and still serves.
        lost = "lost its etcd lease"
        self.wait_for(lambda: all(any(lost in ln for ln in self.cluster.broker(n).log_lines)
                                  for n in self.cluster.node_ids), "every broker: " + lost)
        down = self.produce_acked(topic, ["c%d" % i for i in range(50)], producer=p)
        self.assertEqual([o for o, _ in down], list(range(100, 150)))
        self.etcd.spawn().wait_healthy()
        # The restarted etcd renewed the leases: each broker keeps its own, so nothing moves.
        kept = "kept its lease"
        self.wait_for(lambda: all(any(kept in ln for ln in self.cluster.broker(n).log_lines)
                                  for n in self.cluster.node_ids), "every broker: " + kept)
        after = self.produce_acked(topic, ["d%d" % i for i in range(50)], producer=p)
        self.assertEqual([o for o, _ in after], list(range(150, 200)))
        md = self.wait_metadata(topic, self.fully_in_sync(topic, 3), "still fully in sync")
        self.assertEqual({p: x.leader for p, x in self.partitions(md, topic).items()}, leaders)
        self.assertEqual({p: self.partition_state(topic, p)["leader_epoch"] for p in range(3)},
                         epochs)
        self.assertEqual(len(self.etcd.get_prefix(self.cluster.prefix + "/brokers/")), 3)
        # The watches resumed: a topic created now reaches every broker.
        topic2 = unique_topic("etcdrs2")
        self.create_topic(topic2)
        for n in self.cluster.node_ids:  # each broker's own Metadata has it, fully in sync
            self.wait_metadata(topic2, self.fully_in_sync(topic2, 3),
                               "%s in broker %d's view" % (topic2, n),
                               via=self.cluster.address(n))
        acked = self.produce_acked(topic2, ["e%d" % i for i in range(30)], partition=1)
        self.assertEqual([o for o, _ in acked], list(range(30)))


class EtcdMembers(FaultTestCase):
    ec = None

    @classmethod
    def setUpClass(cls):
        cls.ec = EtcdCluster(3).start()

    @classmethod
    def tearDownClass(cls):
        if cls.ec is not None:
            cls.ec.cleanup()

    def shared(self):
        return [self.ec]

    def etcd_member(self):
        return self.ec.any_alive()

    def test_one_etcd_member_killed(self):
        self.cluster = self.track(Cluster(N, self.ec.endpoints))
        self.cluster.start().wait_ready()
        topic = unique_topic("members")
        self.create_topic(topic)
        # The brokers use the first listed member until it fails: kill that one.
        self.ec[0].kill()
        self.ec[1].wait_healthy()
        topic2 = unique_topic("members2")
        md = self.create_topic(topic2)
        self.produce_acked(topic2, ["a%d" % i for i in range(50)])
        victim = self.partitions(md, topic2)[0].leader
        self.cluster.kill(victim)
        self.wait_metadata(topic2, lambda md: victim not in md.brokers and all(
            x.leader not in (-1, victim) and victim not in x.isrs
            for x in self.partitions(md, topic2).values()),
            "new leaders away from broker %d" % victim)
        acked = self.produce_acked(topic2, ["b%d" % i for i in range(50)])
        self.assertEqual([o for o, _ in acked], list(range(50, 100)))
        self.ec[0].spawn().wait_healthy()


if __name__ == "__main__":
    unittest.main()
