"""Transactions on a 3-broker cluster (etcd): the coordinator of a transactional id is the leader
of its __transaction_state partition (replicated, Kafka's hash rule), markers travel to partition
leaders on every broker as WriteTxnMarkers and are answered once replicated, and a transaction
survives the kill -9 of its coordinator: the partition's new leader loads the replicated state and
the producer (confluent-kafka, librdkafka 2.0.2) finds it and commits.

Checked from the data: a read_committed consumer sees exactly the records of the transactions
whose commit the producer was told about, each once; aborted ones never; a read_uncommitted one
sees those too (the aborts were real writes). One cluster for the whole file."""
import os
import struct
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster_harness  # noqa: E402
import itutil  # noqa: E402
from cluster_clients import DEADLINE, ClusterClientCase  # noqa: E402
from cluster_clients import admin as cluster_clients_admin  # noqa: E402

TXN_PARTITIONS = 3


def java_hash(s):
    h = 0
    b = s.encode("utf-16-be")
    for i in range(0, len(b), 2):
        h = (h * 31 + ((b[i] << 8) | b[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def txn_partition(txn_id):
    h = java_hash(txn_id)
    return (0 if h == -(1 << 31) else abs(h)) % TXN_PARTITIONS


def find_txn_coordinator(port, txn_id):
    """FindCoordinator v1, key_type 1, over a raw connection: (error, node_id)."""
    with itutil.RawConn(port, timeout=10) as c:
        r = c.request(10, 1, itutil.str16(txn_id) + struct.pack(">b", 1))
        r.i32()  # throttle
        err = r.i16()
        r.str16()  # error message
        return err, r.i32()


class ClusterTransactionsTest(ClusterClientCase):
    @classmethod
    def setUpClass(cls):
        cls.etcd = cluster_harness.Etcd().start()
        cls.cluster = cluster_harness.Cluster(3, etcd_endpoints=cls.etcd.endpoint, extra_props={
            "transaction.state.log.num.partitions": str(TXN_PARTITIONS),
            "transaction.state.log.replication.factor": "3",
            "transaction.state.log.min.isr": "2",
            "default.replication.factor": "3",
        }).start()
        cls.cluster.wait_ready()

    @classmethod
    def tearDownClass(cls):
        cls.cluster.cleanup()
        cls.etcd.cleanup()

    def setUp(self):
        super().setUp()
        for n in self.cluster.node_ids:  # a previous test's kill is healed before the next
            if not self.cluster.alive(n):
                self.cluster.start(n)
        self.cluster.wait_ready()
        self.wait_metadata(None, lambda md: len(md.brokers) == 3, "3 live brokers")

    # ------------------------------------------------------------------ helpers

    def coordinator(self, txn_id, exclude=()):
        """The transactional id's coordinator as every live broker names it: the leader of its
        __transaction_state partition (waits while it moves or is being created)."""
        part = txn_partition(txn_id)
        deadline = time.time() + DEADLINE
        while True:
            alive = [n for n in self.cluster.node_ids if self.cluster.alive(n)]
            answers = {n: find_txn_coordinator(self.cluster.ports[n], txn_id) for n in alive}
            nodes = {a for a in answers.values()}
            if len(nodes) == 1:
                err, node = next(iter(nodes))
                if err == 0 and node not in exclude:
                    md = self.wait_metadata("__transaction_state", lambda md: True, "metadata")
                    leader = self.partitions(md, "__transaction_state")[part].leader
                    if leader == node:
                        return node
            self.assertLess(time.time(), deadline, "FindCoordinator answers: %s" % answers)
            time.sleep(0.2)

    def producer(self, txn_id):
        from confluent_kafka import Producer
        p = Producer({"bootstrap.servers": self.cluster.bootstrap(), "transactional.id": txn_id,
                      "transaction.timeout.ms": 60000, "linger.ms": 2})
        deadline = time.time() + DEADLINE
        while True:  # the first FindCoordinator creates __transaction_state
            try:
                p.init_transactions(DEADLINE)
                return p
            except Exception as e:
                if not getattr(e.args[0], "retriable", lambda: False)():
                    raise
                self.assertLess(time.time(), deadline, "init_transactions: %r" % e)

    @staticmethod
    def end(p, commit):
        """Commits (or aborts) the open transaction, riding out retriable errors. True when the
        producer was told the commit succeeded; False when it had to abort instead."""
        from confluent_kafka import KafkaException
        while True:
            try:
                if commit:
                    p.commit_transaction(DEADLINE)
                else:
                    p.abort_transaction(DEADLINE)
                return commit
            except KafkaException as e:
                err = e.args[0]
                if err.retriable():
                    continue
                if commit and err.txn_requires_abort():
                    commit = False
                    continue
                raise

    def run_transaction(self, p, topic, partitions, t, commit, records=12, begin=True):
        if begin:
            p.begin_transaction()
        for i in range(records):
            p.produce(topic, value=("%d:%d" % (t, i)).encode(), partition=i % partitions)
        self.assertEqual(p.flush(DEADLINE), 0)  # an abort would drop what is still queued
        return self.end(p, commit)

    def check(self, topic, partitions, committed, aborted, records):
        """read_committed: exactly the committed transactions' records, each once, in order per
        partition; read_uncommitted: the aborted ones' too."""
        ends = {}
        md = self.wait_metadata(topic, lambda md: True, "metadata")
        self.assertEqual(len(self.partitions(md, topic)), partitions)
        rc = self.consume_all(topic, partitions, ends, {"isolation.level": "read_committed"})
        values = [v for p in range(partitions) for _, v in rc[p]]
        self.assertEqual(len(values), len(set(values)), "a record read twice")
        txns = {int(v.split(":")[0]) for v in values}
        self.assertEqual(txns, set(committed), "transactions visible to read_committed")
        for t in committed:
            self.assertEqual(sum(1 for v in values if v.startswith("%d:" % t)), records,
                             "transaction %d incomplete" % t)
        for p in range(partitions):
            seq = [(int(v.split(":")[0]), int(v.split(":")[1])) for _, v in rc[p]]
            self.assertEqual(seq, sorted(seq), "partition %d out of order" % p)
        ru = self.consume_all(topic, partitions, ends, {"isolation.level": "read_uncommitted"})
        seen = {int(v.split(":")[0]) for p in range(partitions) for _, v in ru[p]}
        self.assertTrue(set(aborted) <= seen, "aborted transactions were written: %s" %
                        (set(aborted) - seen))

    # ------------------------------------------------------------------ tests

    def test_commit_and_abort_with_partitions_led_by_every_broker(self):
        """Markers reach the leaders on all three brokers; every live broker names the same
        coordinator, the leader of the id's __transaction_state partition."""
        topic, partitions = "txn-spread", 6
        md = self.create_topic(topic, partitions=partitions, rf=3)
        leaders = {pm.leader for pm in self.partitions(md, topic).values()}
        self.assertGreaterEqual(len(leaders), 2, "leaders spread: %s" % leaders)
        # A topic without replicas on most brokers: the coordinator may hold none of it.
        from confluent_kafka.admin import NewTopic
        single = "txn-rf1"
        self.wait_controller_known()
        admin = cluster_clients_admin(self.cluster.bootstrap())
        admin.create_topics([NewTopic(single, num_partitions=3, replication_factor=1)])[
            single].result(DEADLINE)
        self.wait_metadata(single, lambda md: len(self.partitions(md, single)) == 3 and all(
            pm.leader > 0 for pm in self.partitions(md, single).values()), "txn-rf1 leaders")
        p = self.producer("spread-1")
        self.coordinator("spread-1")
        committed, aborted = [], []
        for t in range(12):
            want = t % 3 != 2
            p.begin_transaction()
            for i in range(3):
                p.produce(single, value=("%d:%d" % (t, i)).encode(), partition=i)
            (committed if self.run_transaction(p, topic, partitions, t, want, begin=False) else
             aborted).append(t)
        self.assertEqual(len(committed), 8)
        self.check(topic, partitions, committed, aborted, 12)
        self.check(single, 3, committed, aborted, 3)
        # The coordinators' records are replicated: every broker holds __transaction_state.
        md = self.wait_metadata("__transaction_state", lambda md: True, "metadata")
        for pm in self.partitions(md, "__transaction_state").values():
            self.assertEqual(sorted(pm.replicas), [1, 2, 3])

    def test_open_transaction_survives_the_kill_of_its_coordinator(self):
        """kill -9 of the coordinator while a transaction is open (its records acknowledged):
        the new leader of the id's partition loads the transaction, the producer finds it and
        commits; later transactions commit too; the killed broker rejoins."""
        topic, partitions = "txn-failover", 4
        self.create_topic(topic, partitions=partitions, rf=3)
        txn_id = "failover-1"
        p = self.producer(txn_id)
        committed, aborted = [], []
        for t in range(4):
            (committed if self.run_transaction(p, topic, partitions, t, True) else
             aborted).append(t)
        victim = self.coordinator(txn_id)
        t = 4
        p.begin_transaction()
        for i in range(12):
            p.produce(topic, value=("%d:%d" % (t, i)).encode(), partition=i % partitions)
        self.assertEqual(p.flush(DEADLINE), 0)
        self.cluster.kill(victim)
        (committed if self.end(p, True) else aborted).append(t)
        successor = self.coordinator(txn_id, exclude=(victim,))
        self.assertNotEqual(successor, victim)
        for t in range(5, 10):
            (committed if self.run_transaction(p, topic, partitions, t, t != 7) else
             aborted).append(t)
        self.assertIn(4, committed, "the transaction open at the kill was committed")
        self.assertGreaterEqual(len(committed), 8)
        self.cluster.start(victim)
        self.cluster.wait_ready()
        self.check(topic, partitions, committed, aborted, 12)


if __name__ == "__main__":
    unittest.main()
