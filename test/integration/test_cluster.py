"""Cluster mode end to end: three strata-broker processes coordinated by a real etcd
(cluster_harness.py), driven by confluent-kafka 1.7 (librdkafka 2.0.2).

1. An RF=3 topic with 3 partitions: Metadata shows 3 brokers, every partition 3 replicas, all in
   sync, and a leader.
2. An idempotent acks=all producer keeps producing while the leader of partition 0 is killed with
   SIGKILL: every acknowledged record is read back exactly once, at its acknowledged offset, in
   order per partition, from the new leaders.
3. min.insync.replicas=2 with 2 of 3 brokers stopped: acks=all gets NOT_ENOUGH_REPLICAS, acks=1
   is written.
4. A killed broker, started again, catches up and rejoins the ISR of every partition.
HarnessSelfTest checks the harness itself without cluster mode (etcd put/get through the gateway
and etcdctl, kill/restart of etcd members, brokers started, killed, stopped, paused and restarted
as single nodes), so a failure above is not the harness's.

Every wait is a deadline on an observable condition (Metadata, delivery reports), not a sleep.

By hand, from the source root after `ninja -C build`:
    STRATA_BROKER=build/broker/strata-broker /usr/bin/python3 test/integration/test_cluster.py -v
(STRATA_ETCD overrides /usr/bin/etcd; STRATA_IT_VERBOSE=1 echoes broker logs.)
"""
import collections
import json
import os
import subprocess
import sys
import re
import struct
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_clients import DEADLINE, ClusterClientCase, admin  # noqa: E402
from cluster_harness import Cluster, ClusterTestCase, Etcd, EtcdCluster  # noqa: E402
from harness import wait_until  # noqa: E402
import itutil  # noqa: E402
from itutil import RawConn, unique_topic  # noqa: E402

N = 3


METRICS_RE = re.compile(r"metrics listening on http://([0-9.]+):(\d+)/metrics")


def scrape_sum(broker, name):
    """Sum of every sample of metric `name` on one broker (its latest metrics port)."""
    found = [m for m in (METRICS_RE.search(line) for line in broker.log_lines) if m]
    host, port = found[-1].group(1), int(found[-1].group(2))
    with urllib.request.urlopen("http://%s:%d/metrics" % (host, port), timeout=10) as r:
        text = r.read().decode()
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            total += float(line.rsplit(" ", 1)[1])
    return total


class ClusterTest(ClusterClientCase):
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

    def setUp(self):
        super().setUp()
        # A cluster per test under its own prefix of the shared etcd.
        self.cluster = self.track(Cluster(N, self.etcd.endpoint))
        self.cluster.start().wait_ready()

    # ------------------------------------------------------------ helpers

    def producer(self, **conf):
        from confluent_kafka import Producer
        c = {"bootstrap.servers": self.cluster.bootstrap(False), "linger.ms": 5,
             "message.timeout.ms": 60000}
        c.update(conf)
        return Producer(c)

    def produce_acked(self, topic, values, partitions=3, **conf):
        """Produces values (str) round-robin over partitions; returns [(partition, offset, value)]
        of the acknowledged ones and asserts none failed."""
        p = self.producer(**conf)
        acked, failed = [], []

        def cb(err, msg):
            if err is None:
                acked.append((msg.partition(), msg.offset(), msg.value().decode()))
            else:
                failed.append((msg.value().decode(), err))
        for i, v in enumerate(values):
            p.produce(topic, value=v, partition=i % partitions, on_delivery=cb)
            p.poll(0)
        self.assertEqual(p.flush(DEADLINE * 2), 0, "records still in flight")
        self.assertEqual(failed, [])
        return acked

    # ------------------------------------------------------------ tests

    def test_transaction_requests_are_served_by_the_coordinator_only(self):
        # A transactional id's coordinator is the leader of its __transaction_state partition
        # (docs/transactions.md): FindCoordinator answers COORDINATOR_NOT_AVAILABLE (15) while the
        # topic is being created, then names it on every broker; the other brokers answer
        # NOT_COORDINATOR (16) to the transaction's requests, which clients take as "find it again".
        import itutil
        topic = unique_topic("txn-target")
        self.create_topic(topic, partitions=1)
        deadline = time.time() + DEADLINE

        def find_coordinator():
            while True:
                with itutil.RawConn(self.cluster.broker(1).port) as conn:
                    r = conn.request(10, 1, itutil.str16("tid") + struct.pack(">b", 1))
                    r.i32()
                    err = r.i16()
                    r.str16()
                    node = r.i32()
                self.assertIn(err, (0, 15))
                if err == 0:
                    self.assertIn(node, self.cluster.node_ids)
                    return node
                self.assertLess(time.time(), deadline, "no transaction coordinator")
                time.sleep(0.2)

        # While the cluster settles the coordinator may move (its partition's leadership does):
        # an answer naming that (16 from the one found, not 16 from another) starts over.
        while True:
            self.assertLess(time.time(), deadline, "the coordinator never held still")
            node = find_coordinator()
            other = next(n for n in self.cluster.node_ids if n != node)
            with itutil.RawConn(self.cluster.broker(other).port) as conn:
                r = conn.request(22, 1, itutil.str16("tid") + struct.pack(">i", 60000))  # InitPid
                r.i32()
                if r.i16() != 16:
                    continue  # `other` became the coordinator meanwhile
                r = conn.request(26, 0, itutil.str16("tid") + struct.pack(">qhb", 1, 0, 1))  # EndTxn
                r.i32()
                self.assertEqual(r.i16(), 16)
                r = conn.request(24, 0, itutil.str16("tid") + struct.pack(">qh", 1, 0) +
                                 itutil.array32([itutil.str16(topic) +
                                                 itutil.array32([struct.pack(">i", 0)])]))
                r.i32()
                self.assertEqual(r.array(lambda: (r.str16(), r.array(lambda: (r.i32(), r.i16())))),
                                 [(topic, [(0, 16)])])
            with itutil.RawConn(self.cluster.broker(node).port) as conn:
                while True:  # 14 (COORDINATOR_LOAD_IN_PROGRESS) while the partition loads
                    r = conn.request(22, 1, itutil.str16("tid") + struct.pack(">i", 60000))
                    r.i32()
                    err = r.i16()
                    if err in (0, 16):
                        break
                    self.assertEqual(err, 14)
                    self.assertLess(time.time(), deadline)
                    time.sleep(0.2)
            if err == 0:
                self.assertGreaterEqual(r.i64(), 0)  # the producer id
                return

    def test_rf3_topic_is_replicated_on_every_broker(self):
        topic = unique_topic("rf3")
        md = self.create_topic(topic)
        self.assertEqual(sorted(md.brokers), [1, 2, 3])
        for b in md.brokers.values():  # the addresses the brokers registered
            self.assertEqual("%s:%d" % (b.host, b.port), self.cluster.address(b.id))
        ps = self.partitions(md, topic)
        self.assertEqual(sorted(ps), [0, 1, 2])
        for p in ps.values():
            self.assertEqual(len(p.replicas), 3)
            self.assertEqual(sorted(p.isrs), [1, 2, 3])
            self.assertIn(p.leader, p.replicas)
        # The broker registrations are in etcd under this cluster's prefix.
        self.assertEqual(len(self.etcd.get_prefix(self.cluster.prefix + "/brokers/")), 3)

    def test_metadata_auto_creates_a_topic(self):
        # The receiving broker writes the topic to etcd (from the blocking pool).
        topic = unique_topic("auto")
        with RawConn(self.cluster.ports[1]) as c:
            err = itutil.metadata_v10(c, [topic], allow_auto_create=True)[topic]["error"]
        self.assertIn(err, (0, 5))  # LEADER_NOT_AVAILABLE right after creation, as Kafka answers
        md = self.wait_metadata(topic, lambda md: len(self.partitions(md, topic)) == 1 and all(
            p.leader in (1, 2, 3) for p in self.partitions(md, topic).values()),
            "the auto-created topic with a leader", via=self.cluster.address(2))
        (p,) = self.partitions(md, topic).values()
        self.assertEqual(len(p.replicas), 1)  # num.partitions 1, default.replication.factor 1
        with RawConn(self.cluster.ports[2]) as c:  # the same topic seen by another broker
            self.assertEqual(itutil.metadata_v10(c, [topic])[topic]["error"], 0)

    def test_leader_kill_loses_no_acknowledged_record(self):
        topic = unique_topic("failover")
        md = self.create_topic(topic)
        victim = self.partitions(md, topic)[0].leader
        p = self.producer(**{"enable.idempotence": True, "acks": "all"})
        acked, failed = [], []

        def cb(err, msg):
            if err is None:
                acked.append((msg.partition(), msg.offset(), msg.value().decode()))
            else:
                failed.append((msg.value().decode(), err))
        total = 2000
        for i in range(total):
            p.produce(topic, value="%06d" % i, partition=i % 3, on_delivery=cb)
            p.poll(0)
            if i == total // 2:
                # Mid-way, with records both acknowledged and in flight: crash the leader.
                deadline = time.time() + DEADLINE
                while len(acked) < total // 4:
                    self.assertLess(time.time(), deadline, "no acknowledgements before the kill")
                    p.poll(0.05)
                self.cluster.kill(victim)
        self.assertEqual(p.flush(DEADLINE * 3), 0, "records still in flight")
        # The idempotent producer retries through the failover; nothing may fail.
        self.assertEqual(failed, [])
        self.assertEqual(len(acked), total)

        self.wait_metadata(topic, lambda md: all(
            x.leader not in (-1, victim) for x in self.partitions(md, topic).values()) and
            len(self.partitions(md, topic)) == 3, "new leaders away from broker %d" % victim)
        until = collections.defaultdict(lambda: -1)
        for part, off, _ in acked:
            until[part] = max(until[part], off)
        got = self.consume_all(topic, 3, until)
        values = [v for recs in got.values() for _, v in recs]
        dup = [v for v, n in collections.Counter(values).items() if n > 1]
        self.assertEqual(dup, [], "records read back more than once")
        at = {(part, off): v for part, recs in got.items() for off, v in recs}
        missing = [(part, off, v) for part, off, v in acked if at.get((part, off)) != v]
        self.assertEqual(missing, [], "acknowledged records not read back at their offset")
        for part in range(3):
            seq = [int(v) for _, v in got[part]]
            self.assertEqual(seq, sorted(seq), "partition %d out of order" % part)
            self.assertTrue(all(int(v) % 3 == part for v in seq), part)

    def test_min_insync_replicas_refuses_acks_all(self):
        from confluent_kafka import KafkaError
        topic = unique_topic("minisr")
        md = self.create_topic(topic, partitions=1, config={"min.insync.replicas": "2"})
        survivor = self.partitions(md, topic)[0].leader
        for n in self.cluster.node_ids:
            if n != survivor:
                self.assertEqual(self.cluster.stop(n), 0, self.cluster.log_tail(n))
        self.wait_metadata(topic, lambda md: [(x.leader, list(x.isrs)) for x in
                                              self.partitions(md, topic).values()] ==
                           [(survivor, [survivor])], "ISR of %s shrunk to [%d]" % (topic, survivor))

        def produce_one(**conf):
            p = self.producer(**conf)
            out = []
            p.produce(topic, value=b"x", partition=0, on_delivery=lambda e, m: out.append((e, m)))
            self.assertEqual(p.flush(DEADLINE), 0)
            self.assertEqual(len(out), 1)
            return out[0]
        err, _ = produce_one(**{"acks": "all", "enable.idempotence": False, "retries": 0,
                                "message.timeout.ms": 15000})
        self.assertIsNotNone(err, "acks=all written with 1 in-sync replica of min 2")
        self.assertEqual(err.code(), KafkaError.NOT_ENOUGH_REPLICAS, err)
        err, msg = produce_one(**{"acks": "1", "enable.idempotence": False})
        self.assertIsNone(err)
        self.assertGreaterEqual(msg.offset(), 0)

    def test_restarted_broker_rejoins_the_isr(self):
        topic = unique_topic("rejoin")
        md = self.create_topic(topic)
        victim = self.partitions(md, topic)[0].leader
        before = self.produce_acked(topic, ["a%d" % i for i in range(300)],
                                    **{"acks": "all", "enable.idempotence": True})
        self.cluster.kill(victim)
        self.wait_metadata(topic, lambda md: victim not in md.brokers and all(
            victim not in x.isrs and x.leader != -1 for x in self.partitions(md, topic).values()),
            "broker %d out of every ISR" % victim)
        live = [n for n in self.cluster.node_ids if n != victim]

        def cluster_sum(name):
            return sum(scrape_sum(self.cluster.broker(n), name) for n in live)
        # Every partition lost a replica: its leader reports it under-replicated.
        wait_until(lambda: cluster_sum("strata_cluster_under_replicated_partitions") == 3,
                   DEADLINE, what="3 under-replicated partitions in the leaders' metrics")
        self.assertEqual(cluster_sum("strata_cluster_leader_partitions"), 3)
        self.assertEqual(cluster_sum("strata_cluster_active_controller"), 1)
        # Written while it is down, so it has to catch up before it is in sync again.
        after = self.produce_acked(topic, ["b%d" % i for i in range(300)],
                                   **{"acks": "all", "enable.idempotence": True})
        self.assertEqual(len(before) + len(after), 600)
        self.cluster.start(victim).wait_ready([victim])
        self.wait_metadata(topic, self.fully_in_sync(topic, 3, self.cluster.node_ids),
                           "broker %d back in the ISR of every partition" % victim,
                           timeout=DEADLINE * 2)
        # The leaders wrote the expansions themselves, and nothing is under-replicated now.
        wait_until(lambda: cluster_sum("strata_cluster_under_replicated_partitions") == 0,
                   DEADLINE, what="no under-replicated partition in the leaders' metrics")
        self.assertGreaterEqual(cluster_sum("strata_cluster_isr_expands_total"), 3)
        self.assertGreater(scrape_sum(self.cluster.broker(victim),
                                      "strata_cluster_replica_fetch_bytes_total"), 0)


    def test_cli_creates_and_describes_the_cluster(self):
        """`strata topic create -r 3` and `strata cluster describe` (text and JSON) on the
        cluster: every broker listed, then a killed broker's partitions under-replicated."""
        cli = os.environ.get("STRATA_CLI") or os.path.join(
            os.path.dirname(os.environ["STRATA_BROKER"]), "..", "tools", "cli", "strata")

        def run(*args):
            p = subprocess.run([cli, "-b", self.cluster.address(1)] + list(args),
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            return p.stdout
        topic = unique_topic("cli")
        run("topic", "create", topic, "--partitions", "3", "--replication-factor", "3")
        self.wait_metadata(topic, self.fully_in_sync(topic, 3, self.cluster.node_ids),
                           "%s fully replicated" % topic)
        out = json.loads(run("-o", "json", "cluster", "describe"))
        self.assertEqual(sorted(b["node_id"] for b in out["brokers"]),
                         [1, 2, 3], out)
        self.assertEqual(out["health"]["under_replicated"], 0, out)
        victim = 3
        self.cluster.kill(victim)
        wait_until(lambda: json.loads(run("-o", "json", "cluster", "describe"))["health"]
                   ["under_replicated"] >= 3, DEADLINE, what="3 under-replicated partitions")
        text = run("cluster", "describe")
        self.assertIn("under-replicated", text)
        self.assertIn(topic, text)


    def test_topic_config_change_reaches_every_broker(self):
        """`strata config set --topic` on one broker: every broker's DescribeConfigs (each asked
        directly) shows the new value, and a broker started afterwards has it too."""
        cli = os.environ.get("STRATA_CLI") or os.path.join(
            os.path.dirname(os.environ["STRATA_BROKER"]), "..", "tools", "cli", "strata")

        def run(node, *args):
            p = subprocess.run([cli, "-b", self.cluster.address(node), "-o", "json"] + list(args),
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            return json.loads(p.stdout)

        def value_on(node):
            cfg = run(node, "config", "describe", "--topic", topic)["configs"]
            return {c["name"]: c["value"] for c in cfg}.get("retention.ms")
        topic = unique_topic("cfg")
        self.create_topic(topic)
        run(1, "config", "set", "--topic", topic, "retention.ms=123456")
        for n in self.cluster.node_ids:
            wait_until(lambda: value_on(n) == "123456", DEADLINE,
                       what="retention.ms on broker %d" % n)
        self.cluster.kill(3)
        run(1, "config", "set", "--topic", topic, "retention.ms=654321")
        self.cluster.start(3).wait_ready([3])
        wait_until(lambda: value_on(3) == "654321", DEADLINE,
                   what="the change made while broker 3 was down")

        # A broker holding no replica of a topic describes and alters its configs too (from
        # etcd's record), as any Kafka broker answers for any topic.
        solo = unique_topic("cfg1")
        md = self.create_topic(solo, partitions=1, rf=1)
        holder = self.partitions(md, solo)[0].replicas[0]
        other = next(n for n in self.cluster.node_ids if n != holder)
        run(other, "config", "set", "--topic", solo, "retention.ms=222222")
        for n in self.cluster.node_ids:
            wait_until(lambda: {c["name"]: c["value"] for c in run(
                n, "config", "describe", "--topic", solo)["configs"]}.get("retention.ms")
                == "222222", DEADLINE, what="retention.ms of %s on broker %d" % (solo, n))
        bad = subprocess.run([cli, "-b", self.cluster.address(other), "config", "set", "--topic",
                              solo, "retention.ms=abc"], capture_output=True, text=True,
                             timeout=60)
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("INVALID_CONFIG", bad.stderr)

    def test_pk_follower_reads_and_read_your_writes_token(self):
        """Lookup with follower_read is answered by any replica from the rows it applied (all
        committed); a min_offset token above what a replica applied answers OFFSET_NOT_AVAILABLE,
        and once the replica catches up it serves the write; a broker without a replica answers
        NOT_LEADER_OR_FOLLOWER."""
        from confluent_kafka import Producer
        cli = os.environ.get("STRATA_CLI") or os.path.join(
            os.path.dirname(os.environ["STRATA_BROKER"]), "..", "tools", "cli", "strata")
        topic = unique_topic("pkf")
        md = self.create_topic(topic, partitions=1, config={"table.type": "primary-key"})
        leader = self.partitions(md, topic)[0].leader
        follower = next(n for n in self.cluster.node_ids if n != leader)

        def get(node, *extra):
            return subprocess.run([cli, "-b", self.cluster.address(node), "-o", "json", "table",
                                   "get", topic, "k1", "--follower-read"] + list(extra),
                                  capture_output=True, text=True, timeout=60)
        offsets = []
        p = Producer({"bootstrap.servers": self.cluster.bootstrap(), "acks": "all"})
        p.produce(topic, key="k1", value="v1", on_delivery=lambda e, m: offsets.append(m.offset()))
        self.assertEqual(p.flush(DEADLINE), 0)
        token = offsets[-1] + 1  # the log below this offset holds the write

        def row(node, *extra):
            r = get(node, *extra)
            return json.loads(r.stdout)["rows"][0] if r.returncode == 0 else r.stderr
        wait_until(lambda: isinstance(row(follower, "--min-offset", str(token)), dict), DEADLINE,
                   what="the follower applied the acknowledged write")
        got = row(follower, "--min-offset", str(token))
        self.assertEqual((got["found"], got["value"]), (True, "v1"))
        self.assertGreaterEqual(got["applied_offset"], token)
        # A token past what any replica applied: a retriable error, not a stale row.
        r = get(follower, "--min-offset", str(got["applied_offset"] + 1000))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("OFFSET_NOT_AVAILABLE", r.stderr)
        # acks=1: the leader acknowledges before the followers have it; the token makes a
        # follower serve it only once applied (never the old row once it answers).
        p1 = Producer({"bootstrap.servers": self.cluster.bootstrap(), "acks": 1})
        p1.produce(topic, key="k1", value="v2", on_delivery=lambda e, m: offsets.append(m.offset()))
        self.assertEqual(p1.flush(DEADLINE), 0)
        token = offsets[-1] + 1
        deadline = time.time() + DEADLINE
        while True:
            got = row(follower, "--min-offset", str(token))
            if isinstance(got, dict):
                self.assertEqual(got["value"], "v2", "a replica answering the token has the write")
                break
            self.assertIn("OFFSET_NOT_AVAILABLE", got)
            self.assertLess(time.time(), deadline, "the follower never applied the write")
            time.sleep(0.1)
        # A PK table on one broker: the others have no replica to read.
        single = unique_topic("pkf1")
        from confluent_kafka.admin import NewTopic
        a = admin(self.cluster.bootstrap())
        a.create_topics([NewTopic(single, num_partitions=1, replication_factor=1,
                                  config={"table.type": "primary-key"})])[single].result(DEADLINE)
        md = self.wait_metadata(single, lambda md: self.partitions(md, single).get(0) is not None
                                and self.partitions(md, single)[0].leader > 0, "a leader")
        holder = self.partitions(md, single)[0].leader
        other = next(n for n in self.cluster.node_ids if n != holder)
        r = subprocess.run([cli, "-b", self.cluster.address(other), "table", "get", single, "k",
                            "--follower-read"], capture_output=True, text=True, timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("NOT_LEADER_OR_FOLLOWER", r.stderr)

    def test_pk_table_fails_over_with_its_state(self):
        """A primary-key table with replication factor 3: every replica applies committed rows,
        so after kill -9 of a partition leader the new leader answers lookups with every
        acknowledged upsert (the newest value per key) at once."""
        from confluent_kafka import Producer
        cli = os.environ.get("STRATA_CLI") or os.path.join(
            os.path.dirname(os.environ["STRATA_BROKER"]), "..", "tools", "cli", "strata")
        topic = unique_topic("pk")
        self.create_topic(topic, partitions=3, config={"table.type": "primary-key"})
        model = {}
        acked_errors = []

        def upsert_round(p, rnd, keys=300):
            for i in range(keys):
                k, v = "k%03d" % i, "v%d-%d" % (rnd, i)
                p.produce(topic, key=k, value=v, on_delivery=lambda e, m: acked_errors.append(e)
                          if e else model.__setitem__(m.key().decode(), m.value().decode()))
                p.poll(0)
            self.assertEqual(p.flush(DEADLINE * 2), 0)

        p = Producer({"bootstrap.servers": self.cluster.bootstrap(False), "acks": "all",
                      "enable.idempotence": True, "partitioner": "murmur2_random",
                      "linger.ms": 2, "message.timeout.ms": 60000})
        upsert_round(p, 0)
        upsert_round(p, 1)
        self.assertEqual(acked_errors, [])
        self.assertEqual(len(model), 300)

        def lookup_all(address):
            r = subprocess.run([cli, "-b", address, "-o", "json", "table", "get", topic] +
                               sorted(model), capture_output=True, text=True, timeout=60)
            if r.returncode != 0:
                return None
            return {row["key"]: row["value"] for row in json.loads(r.stdout)["rows"]}
        live = self.cluster.address(1)
        self.assertEqual(lookup_all(live), model, "lookups on the leaders before the kill")
        md = admin(self.cluster.bootstrap()).list_topics(topic, timeout=10)
        victim = self.partitions(md, topic)[0].leader
        self.cluster.kill(victim)
        survivor = next(n for n in self.cluster.node_ids if n != victim)
        self.wait_metadata(topic, lambda md: all(
            x.leader not in (-1, victim) for x in self.partitions(md, topic).values()),
            "new leaders away from broker %d" % victim)
        # The new leaders serve the rows they applied as followers: every acknowledged upsert.
        wait_until(lambda: lookup_all(self.cluster.address(survivor)) == model, DEADLINE,
                   what="every key's newest acknowledged value from the new leaders")
        # And they take writes computed on top of that state.
        upsert_round(p, 2, keys=50)
        self.assertEqual(acked_errors, [])
        wait_until(lambda: lookup_all(self.cluster.address(survivor)) == model, DEADLINE,
                   what="writes after the failover visible")
        # The killed broker comes back as a follower and catches up to the same rows.
        self.cluster.start(victim).wait_ready([victim])
        self.wait_metadata(topic, self.fully_in_sync(topic, 3, self.cluster.node_ids),
                           "broker %d back in every ISR" % victim, timeout=DEADLINE * 2)


class HarnessSelfTest(ClusterTestCase):
    def etcdctl(self, endpoints, *args):
        return subprocess.run(["etcdctl", "--endpoints", endpoints] + list(args), check=True,
                              capture_output=True, text=True,
                              env=dict(os.environ, ETCDCTL_API="3")).stdout

    def test_etcd_member(self):
        e = self.track(Etcd().start())
        e.put("/x/a", "1")
        e.put("/x/b", "2")
        e.put("/y", "3")
        self.assertEqual(e.get("/x/a"), "1")
        self.assertIsNone(e.get("/nope"))
        self.assertEqual(e.get_prefix("/x/"), {"/x/a": "1", "/x/b": "2"})
        self.assertEqual(self.etcdctl(e.endpoint, "get", "/x/b", "--print-value-only").strip(), "2")
        self.etcdctl(e.endpoint, "put", "/z", "via-etcdctl")
        e.restart()  # kill -9: same ports, same data
        self.assertEqual(e.get("/z"), "via-etcdctl")
        e.restart(clean=True)
        self.assertEqual(e.get("/x/a"), "1")
        e.pause()
        self.assertFalse(e.healthy())
        e.resume()
        e.wait_healthy()

    def test_three_etcd_members(self):
        ec = self.track(EtcdCluster(3).start())
        self.assertEqual(self.etcdctl(ec.endpoints, "member", "list").count("started"), 3)
        ec[0].put("/k", "v0")
        wait_until(lambda: ec[2].get("/k") == "v0", 10, what="replicated to m2")
        ec[0].kill()
        ec[1].wait_healthy()
        ec[1].put("/k", "v1")
        ec[0].restart()
        wait_until(lambda: ec[0].get("/k") == "v1", 10, what="m0 caught up after its restart")

    def test_single_node_brokers(self):
        c = self.track(Cluster(3))  # no endpoints: three independent single nodes
        c.start().wait_ready()
        self.assertEqual(c.bootstrap(), ",".join(c.address(n) for n in (1, 2, 3)))
        for n in c.node_ids:
            self.assertTrue(any("node %d," % n in line for line in c.broker(n).log_lines))
        c.kill(1)
        self.assertFalse(c.alive(1))
        self.assertEqual(c.bootstrap(), ",".join(c.address(n) for n in (2, 3)))
        c.start(1).wait_ready([1])  # same port and data dir
        self.assertEqual(c.stop(2), 0, c.log_tail(2))
        c.pause(3)
        self.assertFalse(c.api_versions_ok(3))
        c.resume(3)
        c.wait_ready([3])
        c.start(2).wait_ready()
        c.pause(1)
        self.assertEqual(c.stop(1), 0)  # a paused broker still stops cleanly


if __name__ == "__main__":
    unittest.main()
