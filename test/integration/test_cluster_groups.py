"""Consumer groups on a 3-broker cluster (etcd): group state and committed offsets live in the
replicated internal topic __consumer_offsets, the coordinator of a group is the leader of its
partition (Kafka's hash rule), and a group keeps consuming with exact committed offsets while its
coordinator's broker is killed (kill -9), with confluent-kafka (librdkafka 2.0.2), kafka-python
and KafkaJS (skipped when its node_modules are not installed).

Each client: a group consumes a topic with manual commits; once a third is committed, the
coordinator's broker is killed mid-consumption; the consumer carries on (commits retried while the
coordinator moves) to the end. Then: every record was consumed; a record consumed twice lies past
the last commit acknowledged before the kill (re-delivery only beyond what the commit allows); the
committed offsets read afresh through the new coordinator equal the last acknowledged commits, and a
new member of the group gets nothing. The killed broker restarts before the next client.
One cluster for the whole file."""
import os
import queue
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster_harness  # noqa: E402
import itutil  # noqa: E402
from cluster_clients import DEADLINE, SharedClusterCase  # noqa: E402
from cluster_clients import coordinator_partition, find_coordinator  # noqa: E402
from cluster_clients import admin as cluster_clients_admin  # noqa: E402

JS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "js")
OFFSETS_PARTITIONS = 6
PARTITIONS = 4
RECORDS = 1200
COMMIT_EVERY = 25


def offsets_partition(group):
    return coordinator_partition(group, OFFSETS_PARTITIONS)


class ClusterGroupsTest(SharedClusterCase):
    cluster_props = {
        "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS),
        "offsets.topic.replication.factor": "3",
        "default.replication.factor": "3",
        "group.initial.rebalance.delay.ms": "0",
    }

    # ------------------------------------------------------------------ helpers

    def produce(self, topic):
        from confluent_kafka import Producer
        self.create_topic(topic, partitions=PARTITIONS, rf=3)
        p = Producer({"bootstrap.servers": self.cluster.bootstrap(), "acks": "all",
                      "enable.idempotence": True, "linger.ms": 5})
        for i in range(RECORDS):
            p.produce(topic, key=str(i).encode(), value=str(i).encode(), partition=i % PARTITIONS)
        self.assertEqual(p.flush(DEADLINE), 0)
        return {p: RECORDS // PARTITIONS for p in range(PARTITIONS)}  # end offsets

    def coordinator(self, group):
        """The leader of the group's __consumer_offsets partition, which FindCoordinator names
        on every live broker."""
        part = offsets_partition(group)
        md = self.wait_metadata("__consumer_offsets", lambda md: part in self.partitions(
            md, "__consumer_offsets") and self.partitions(md, "__consumer_offsets")[part].leader > 0,
            "__consumer_offsets partition %d has a leader" % part)
        leader = self.partitions(md, "__consumer_offsets")[part].leader
        for n in self.cluster.node_ids:
            if self.cluster.alive(n):
                self.assertEqual(find_coordinator(self.cluster.ports[n], group), (0, leader),
                                 "FindCoordinator on broker %d" % n)
        return leader

    def committed(self, group, topic):
        """Committed offsets read afresh (OffsetFetch through the current coordinator)."""
        from confluent_kafka import Consumer, TopicPartition
        deadline = time.time() + DEADLINE
        while True:
            c = Consumer({"bootstrap.servers": self.cluster.bootstrap(), "group.id": group,
                          "enable.auto.commit": False})
            try:
                tps = c.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10)
                return {tp.partition: tp.offset for tp in tps}
            except Exception as e:  # the coordinator still moving
                self.assertLess(time.time(), deadline, "OffsetFetch kept failing: %r" % e)
                time.sleep(0.5)
            finally:
                c.close()

    def check(self, group, topic, ends, seen, acked_before_kill, acked_last):
        """seen: [(partition, offset)] in consumption order."""
        got = set(seen)
        want = {(p, o) for p, end in ends.items() for o in range(end)}
        self.assertEqual(want - got, set(), "records never consumed")
        dup = {}
        for po in seen:
            dup[po] = dup.get(po, 0) + 1
        for (p, o), n in dup.items():
            if n > 1:
                self.assertGreaterEqual(o, acked_before_kill.get(p, 0),
                                        "partition %d offset %d re-delivered although a commit "
                                        "of %d was acknowledged" % (p, o, acked_before_kill.get(p, 0)))
        self.assertEqual(acked_last, ends, "the last acknowledged commits are the ends")
        self.assertEqual(self.committed(group, topic), ends,
                         "committed offsets after the failover = the last acknowledged commits")

    def kill_when(self, predicate, group, what):
        deadline = time.time() + DEADLINE * 2
        while not predicate():
            self.assertLess(time.time(), deadline, "timed out waiting for " + what)
            time.sleep(0.05)
        victim = self.coordinator(group)
        self.cluster.kill(victim)
        return victim

    def test_internal_topic_is_read_only_for_clients(self):
        """__consumer_offsets (created by FindCoordinator) is marked internal; Produce to it,
        DeleteTopics of it and CreatePartitions of it are refused, and it keeps serving."""
        from confluent_kafka import KafkaError, KafkaException, Producer
        from confluent_kafka.admin import NewPartitions
        self.coordinator("group-internal")  # creates the topic
        with itutil.RawConn(self.cluster.ports[1]) as c:
            md = itutil.metadata_v1(c, ["__consumer_offsets"])
            self.assertEqual(md["__consumer_offsets"][0], 0)
            self.assertEqual(len(md["__consumer_offsets"][1]), OFFSETS_PARTITIONS)
        p = Producer({"bootstrap.servers": self.cluster.bootstrap(), "message.timeout.ms": 10000})
        errs = []
        p.produce("__consumer_offsets", value=b"x", partition=0,
                  on_delivery=lambda e, m: errs.append(e))
        p.flush(DEADLINE)
        self.assertEqual(len(errs), 1)
        self.assertIsNotNone(errs[0])
        self.assertEqual(errs[0].code(), KafkaError.TOPIC_EXCEPTION)
        a = cluster_clients_admin(self.cluster.bootstrap())
        with self.assertRaises(KafkaException) as cm:
            a.delete_topics(["__consumer_offsets"])["__consumer_offsets"].result(DEADLINE)
        self.assertEqual(cm.exception.args[0].code(), KafkaError.TOPIC_EXCEPTION)
        with self.assertRaises(KafkaException) as cm:
            a.create_partitions([NewPartitions("__consumer_offsets", OFFSETS_PARTITIONS + 1)])[
                "__consumer_offsets"].result(DEADLINE)
        self.assertEqual(cm.exception.args[0].code(), KafkaError.POLICY_VIOLATION)
        self.assertEqual(len(self.partitions(self.wait_metadata(
            "__consumer_offsets", lambda md: True, "metadata"), "__consumer_offsets")),
            OFFSETS_PARTITIONS)

    def test_offsets_topic_created_off_the_io_thread(self):
        """On a fresh cluster the first FindCoordinator starts the creation of __consumer_offsets
        on a worker and is answered COORDINATOR_NOT_AVAILABLE at once (Kafka's answer while the
        topic is being created), Metadata for the topic LEADER_NOT_AVAILABLE — both within a
        second although etcd is stalled (SIGSTOP), so the creation cannot finish meanwhile and an
        I/O thread waiting for it would hang. Once etcd runs again a retrying client finds the
        coordinator. Its own etcd and single broker: the shared cluster's topic exists already."""
        etcd = self.track(cluster_harness.Etcd().start())
        fresh = self.track(cluster_harness.Cluster(1, etcd_endpoints=etcd.endpoint, extra_props={
            "offsets.topic.num.partitions": "2", "offsets.topic.replication.factor": "1"}))
        fresh.start().wait_ready()
        port = fresh.ports[1]
        with itutil.RawConn(port, timeout=10) as c:
            etcd.pause()
            try:
                t0 = time.time()
                first = find_coordinator(port, "fresh-group")
                md = itutil.metadata_v1(c, ["__consumer_offsets"])
                again = find_coordinator(port, "fresh-group")
                elapsed = time.time() - t0
            finally:
                etcd.resume()
        self.assertEqual(first[0], 15, "COORDINATOR_NOT_AVAILABLE while the topic is created")
        self.assertEqual(md["__consumer_offsets"][0], 5, "LEADER_NOT_AVAILABLE")
        self.assertEqual(again[0], 15)
        self.assertLess(elapsed, 1.0, "answered without waiting for etcd")
        deadline = time.time() + DEADLINE
        while find_coordinator(port, "fresh-group") != (0, 1):
            self.assertLess(time.time(), deadline, "FindCoordinator never found broker 1")
            time.sleep(0.1)
        with itutil.RawConn(port) as c:
            md = itutil.metadata_v1(c, ["__consumer_offsets"])
        self.assertEqual(md["__consumer_offsets"], (0, [0, 1]))

    # ------------------------------------------------------------------ clients

    def test_librdkafka_group_survives_coordinator_kill(self):
        from confluent_kafka import Consumer, KafkaException, TopicPartition
        topic, group = "cg-rdkafka", "group-rdkafka"
        ends = self.produce(topic)
        c = Consumer({"bootstrap.servers": self.cluster.bootstrap(), "group.id": group,
                      "enable.auto.commit": False, "auto.offset.reset": "earliest",
                      "session.timeout.ms": 10000, "heartbeat.interval.ms": 500,
                      "topic.metadata.refresh.interval.ms": 2000})
        c.subscribe([topic])
        seen, acked, acked_before_kill = [], {}, None
        victim = None
        positions = {}
        deadline = time.time() + DEADLINE * 4

        def commit(offsets):
            while True:
                try:
                    for tp in c.commit(offsets=offsets, asynchronous=False):
                        self.assertIsNone(tp.error, tp)
                        acked[tp.partition] = tp.offset
                    return
                except KafkaException:  # the coordinator moving: the application retries
                    self.assertLess(time.time(), deadline, "commits never succeeded again")
                    time.sleep(0.2)
        try:
            while len(set(seen)) < RECORDS:
                self.assertLess(time.time(), deadline, "consumed %d of %d" % (len(set(seen)), RECORDS))
                m = c.poll(0.5)
                if m is None or m.error():
                    continue
                seen.append((m.partition(), m.offset()))
                positions[m.partition()] = m.offset() + 1
                if len(seen) % COMMIT_EVERY == 0:
                    commit([TopicPartition(topic, p, o) for p, o in positions.items()])
                if victim is None and len(seen) >= RECORDS // 3:
                    acked_before_kill = dict(acked)
                    victim = self.coordinator(group)
                    self.cluster.kill(victim)
            commit([TopicPartition(topic, p, o) for p, o in positions.items()])
        finally:
            c.close()
        self.assertIsNotNone(victim)
        new = self.coordinator(group)
        self.assertNotEqual(new, victim, "a live broker coordinates the group now")
        self.check(group, topic, ends, seen, acked_before_kill, acked)

    def test_kafka_python_group_survives_coordinator_kill(self):
        from kafka import KafkaConsumer, TopicPartition
        from kafka.errors import KafkaError
        from kafka.structs import OffsetAndMetadata
        topic, group = "cg-kp", "group-kafka-python"
        ends = self.produce(topic)
        c = KafkaConsumer(topic, bootstrap_servers=self.cluster.bootstrap().split(","),
                          group_id=group, enable_auto_commit=False, auto_offset_reset="earliest",
                          session_timeout_ms=10000, heartbeat_interval_ms=500,
                          metadata_max_age_ms=2000, api_version=(2, 5, 0))
        seen, acked, acked_before_kill, victim, positions = [], {}, None, None, {}
        deadline = time.time() + DEADLINE * 4

        def commit():
            offsets = {TopicPartition(topic, p): OffsetAndMetadata(o, "") for p, o in
                       positions.items()}
            while True:
                try:
                    c.commit(offsets)
                    for tp, om in offsets.items():
                        acked[tp.partition] = om.offset
                    return
                except KafkaError:
                    self.assertLess(time.time(), deadline, "commits never succeeded again")
                    time.sleep(0.2)
        try:
            while len(set(seen)) < RECORDS:
                self.assertLess(time.time(), deadline, "consumed %d of %d" % (len(set(seen)), RECORDS))
                for tp, msgs in c.poll(timeout_ms=500).items():
                    for m in msgs:
                        seen.append((m.partition, m.offset))
                        positions[m.partition] = m.offset + 1
                        if len(seen) % COMMIT_EVERY == 0:
                            commit()
                        if victim is None and len(seen) >= RECORDS // 3:
                            acked_before_kill = dict(acked)
                            victim = self.coordinator(group)
                            self.cluster.kill(victim)
            commit()
        finally:
            c.close(autocommit=False)
        self.assertIsNotNone(victim)
        self.assertNotEqual(self.coordinator(group), victim)
        self.check(group, topic, ends, seen, acked_before_kill, acked)

    def test_kafkajs_group_survives_coordinator_kill(self):
        if not os.path.isdir(os.path.join(JS_DIR, "node_modules", "kafkajs")):
            self.skipTest("kafkajs not installed in test/integration/js/node_modules")
        topic, group = "cg-js", "group-kafkajs"
        ends = self.produce(topic)
        env = dict(os.environ, NODE_PATH=os.path.join(JS_DIR, "node_modules"))
        p = subprocess.Popen(["node", os.path.join(JS_DIR, "cluster_group.js"),
                              self.cluster.bootstrap(), topic, group, str(RECORDS),
                              str(COMMIT_EVERY // 2)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        lines = queue.Queue()
        threading.Thread(target=lambda: [lines.put(x) for x in p.stdout] + [lines.put(None)],
                         daemon=True).start()
        seen, acked, acked_before_kill, victim, other = [], {}, None, None, []
        deadline = time.time() + DEADLINE * 2
        try:
            while True:
                try:
                    line = lines.get(timeout=max(0.1, deadline - time.time()))
                except queue.Empty:
                    self.fail("KafkaJS consumed %d of %d by the deadline; acked %s; log:\n%s" % (
                        len(set(seen)), RECORDS, acked, "".join(other[-40:])))
                if line is None:
                    break
                parts = line.split()
                if parts[0] == "SEEN":
                    seen.append((int(parts[1]), int(parts[2])))
                elif parts[0] == "COMMITTED":
                    acked[int(parts[1])] = int(parts[2])
                elif parts[0] == "DONE":
                    break
                else:
                    other.append(line)
                if victim is None and len(seen) >= RECORDS // 3:
                    acked_before_kill = dict(acked)
                    victim = self.coordinator(group)
                    self.cluster.kill(victim)
            self.assertEqual(p.wait(DEADLINE), 0, p.stderr.read())
        finally:
            if p.poll() is None:
                p.kill()
                print("KafkaJS stderr:\n" + p.stderr.read()[-3000:])
        self.assertIsNotNone(victim)
        self.assertNotEqual(self.coordinator(group), victim)
        self.check(group, topic, ends, seen, acked_before_kill, acked)


if __name__ == "__main__":
    unittest.main()
