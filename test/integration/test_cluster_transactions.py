"""Transactions on a 3-broker cluster (etcd): the coordinator of a transactional id is the leader
of its __transaction_state partition (replicated, Kafka's hash rule), markers travel to partition
leaders on every broker as WriteTxnMarkers and are answered once replicated, and a transaction
survives the kill -9 of its coordinator: the partition's new leader loads the replicated state and
the producer (confluent-kafka, librdkafka 2.0.2) finds it and commits.

Checked from the data: a read_committed consumer sees exactly the records of the transactions
whose commit the producer was told about, each once; aborted ones never; a read_uncommitted one
sees those too (the aborts were real writes). One cluster for the whole file."""
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_clients import DEADLINE, SharedClusterCase  # noqa: E402
from cluster_clients import coordinator_partition, find_coordinator  # noqa: E402
from cluster_clients import admin as cluster_clients_admin  # noqa: E402

TXN_PARTITIONS = 3


def txn_partition(txn_id):
    return coordinator_partition(txn_id, TXN_PARTITIONS)


def find_txn_coordinator(port, key, key_type=1):
    return find_coordinator(port, key, key_type)


class ClusterTransactionsTest(SharedClusterCase):
    cluster_props = {
        "transaction.state.log.num.partitions": str(TXN_PARTITIONS),
        "transaction.state.log.replication.factor": "3",
        "transaction.state.log.min.isr": "2",
        "offsets.topic.num.partitions": "3",
        "offsets.topic.replication.factor": "3",
        "default.replication.factor": "3",
    }

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

    def producer(self, txn_id, **conf):
        from confluent_kafka import Producer
        p = Producer(dict({"bootstrap.servers": self.cluster.bootstrap(),
                           "transactional.id": txn_id, "transaction.timeout.ms": 60000,
                           "linger.ms": 2}, **conf))
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

    def test_pk_table_transactions_across_a_leader_kill(self):
        """Transactions on a replicated primary-key table (RF 3): committed rows reach Lookup on
        the leaders, open and aborted ones never do; kill -9 of a partition's leader while a
        transaction holds rows there: its successor finds the open transaction in the log it
        replicated, the producer's commit applies it there, and later transactions compute on
        top of it. A read_committed consumer of the table's changelog replays to the same rows."""
        import json
        import subprocess
        from harness import wait_until
        cli = os.environ.get("STRATA_CLI") or os.path.join(
            os.path.dirname(os.environ["STRATA_BROKER"]), "..", "tools", "cli", "strata")
        topic, partitions = "txn-pk", 3
        self.create_topic(topic, partitions=partitions, rf=3,
                          config={"table.type": "primary-key", "table.changelog.image": "full"})
        keys = ["k%02d" % i for i in range(30)]
        p = self.producer("pk-1", **{"partitioner": "murmur2_random"})  # the table's partitioner

        def write(tag, deletes=()):
            p.begin_transaction()
            for k in keys:
                p.produce(topic, key=k, value=None if k in deletes else "%s-%s" % (tag, k))
            self.assertEqual(p.flush(DEADLINE), 0)
            return {k: (None if k in deletes else "%s-%s" % (tag, k)) for k in keys}

        def apply(model, rows):
            for k, v in rows.items():
                if v is None:
                    model.pop(k, None)
                else:
                    model[k] = v

        def lookup_all(node):
            r = subprocess.run([cli, "-b", self.cluster.address(node), "-o", "json", "table",
                                "get", topic] + keys, capture_output=True, text=True, timeout=60)
            if r.returncode != 0:
                return None
            return {row["key"]: row["value"] for row in json.loads(r.stdout)["rows"]
                    if row["found"]}

        model = {}
        rows = write("t1")
        self.assertEqual(lookup_all(1), {}, "an open transaction is invisible")
        self.assertTrue(self.end(p, True))
        apply(model, rows)
        wait_until(lambda: lookup_all(1) == model, DEADLINE, what="t1's rows on the leaders")
        write("t2", deletes=keys[:10])
        self.assertFalse(self.end(p, False))
        self.assertEqual(lookup_all(2), model, "an aborted transaction changes nothing")

        rows = write("t3", deletes=keys[:5])
        md = self.wait_metadata(topic, lambda md: True, "metadata")
        victim = self.partitions(md, topic)[0].leader
        self.cluster.kill(victim)
        if self.end(p, True):
            apply(model, rows)
        survivor = next(n for n in self.cluster.node_ids if n != victim)
        self.wait_metadata(topic, lambda md: all(
            x.leader not in (-1, victim) for x in self.partitions(md, topic).values()),
            "new leaders away from broker %d" % victim)
        wait_until(lambda: lookup_all(survivor) == model, DEADLINE,
                   what="the transaction open at the kill decided on the new leader")
        self.assertNotIn("k00", model, "t3 committed (it deleted k00)")
        rows = write("t4", deletes=keys[20:])
        self.assertTrue(self.end(p, True))
        apply(model, rows)
        wait_until(lambda: lookup_all(survivor) == model, DEADLINE, what="t4 on the new leaders")

        self.cluster.start(victim)
        self.cluster.wait_ready()
        got = self.consume_all(topic, partitions, {}, {"isolation.level": "read_committed"},
                               keyed=True)
        replayed = {}
        for q in range(partitions):
            for _, k, v in got[q]:
                apply(replayed, {k: v})
        self.assertEqual(replayed, model, "read_committed changelog replay")

    def find(self, key, key_type):
        deadline = time.time() + DEADLINE
        while True:
            err, node = find_txn_coordinator(self.cluster.ports[1], key, key_type)
            if err == 0:
                return node
            self.assertLess(time.time(), deadline, "no coordinator for %s" % key)
            time.sleep(0.2)

    def test_consume_transform_produce_across_coordinators(self):
        """send_offsets_to_transaction when the group's coordinator and the transaction's are
        different brokers: TxnOffsetCommit is forwarded to the transaction's coordinator, which
        hands the offsets to the group's at commit (EndTxnOffsets). txn_pipeline.py copies src to
        dst exactly once while the transaction's coordinator is killed -9 mid-run (the pipeline
        is restarted if the kill made it fail): dst read_committed = src transformed, once each,
        and the group's committed offsets = src's ends."""
        import signal
        import subprocess
        from confluent_kafka import Consumer, TopicPartition
        src, dst, n = "ctp-src", "ctp-dst", 1500
        self.create_topic(src, partitions=3, rf=3)
        self.create_topic(dst, partitions=3, rf=3)
        for i in range(50):  # an id and a group coordinated by different brokers
            group, tid = "ctp-g%d" % i, "ctp-t%d" % i
            if self.find(group, 0) != self.find(tid, 1):
                break
        else:
            self.fail("no pair of coordinators on different brokers")
        victim = self.find(tid, 1)
        from confluent_kafka import Producer
        p = Producer({"bootstrap.servers": self.cluster.bootstrap(), "acks": "all"})
        inputs = []
        for i in range(n):
            v = "r%05d" % i
            p.produce(src, value=v.encode(), partition=i % 3)
            inputs.append("out-%s@%d" % (v, i % 3))
        self.assertEqual(p.flush(DEADLINE), 0)
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "txn_pipeline.py")

        def start(seed):
            return subprocess.Popen([sys.executable, script, self.cluster.bootstrap(), src, dst,
                                     group, tid, "3", str(seed)],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        proc = start(1)
        killed = False
        try:
            line = proc.stdout.readline().strip()
            while line == "READY":
                line = proc.stdout.readline().strip()
            self.assertTrue(line.startswith("COMMITTED"), "pipeline did not commit: %r" % line)
            self.cluster.kill(victim)
            killed = True
            out, err = proc.communicate(timeout=240)
        except BaseException:
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
            raise
        self.assertTrue(killed)
        successor = self.coordinator(tid, exclude=(victim,))
        self.assertNotEqual(successor, victim)

        def committed():
            c = Consumer({"bootstrap.servers": self.cluster.bootstrap(), "group.id": group,
                          "enable.auto.commit": False})
            try:
                tps = c.committed([TopicPartition(src, q) for q in range(3)], timeout=DEADLINE)
            finally:
                c.close()
            return sorted(tp.offset for tp in tps)
        # The kill may have been fatal to the pipeline, or stalled its reads past its 3 s idle
        # exit while leaders moved: it is run again (fencing the earlier instance) until drained.
        runs = 1
        while proc.returncode != 0 or "DONE" not in out or committed() != [500, 500, 500]:
            runs += 1
            self.assertLessEqual(runs, 5, "pipeline did not drain the input: %s" % err[-2000:])
            proc = start(runs)
            out, err = proc.communicate(timeout=240)
        self.cluster.start(victim)
        self.cluster.wait_ready()
        got = self.consume_all(dst, 3, {}, {"isolation.level": "read_committed"})
        values = ["%s@%d" % (v, q) for q in range(3) for _, v in got[q]]
        self.assertEqual(len(values), len(set(values)), "a record came out twice")
        self.assertEqual(sorted(values), sorted(inputs))
        self.assertEqual(committed(), [500, 500, 500])


if __name__ == "__main__":
    unittest.main()
