"""Client-side helpers shared by the cluster integration tests (test_cluster.py,
test_cluster_faults.py): Metadata polling with deadlines, partition views, topic creation that
waits until every replica is in sync, and reading partitions back with assign()."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_harness import ClusterTestCase  # noqa: E402

DEADLINE = 30  # seconds; leases are 2 s in tests, so a failover takes a few of them


def java_hash(s):
    """Java's String.hashCode, as Kafka uses it to place a group or transactional id."""
    h = 0
    b = s.encode("utf-16-be")
    for i in range(0, len(b), 2):
        h = (h * 31 + ((b[i] << 8) | b[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def coordinator_partition(key, partitions):
    """The partition of __consumer_offsets / __transaction_state holding `key` (Kafka's rule)."""
    h = java_hash(key)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def find_coordinator(port, key, key_type=0):
    """FindCoordinator v1 (key_type 0: group, 1: transactional id) over a raw connection:
    (error, node_id)."""
    import struct
    import itutil
    with itutil.RawConn(port, timeout=10) as c:
        r = c.request(10, 1, itutil.str16(key) + struct.pack(">b", key_type))
        r.i32()  # throttle
        err = r.i16()
        r.str16()  # error message
        return err, r.i32()


def admin(bootstrap):
    from confluent_kafka.admin import AdminClient
    return AdminClient({"bootstrap.servers": bootstrap})


def describe(md, topic):
    t = md.topics.get(topic)
    parts = {} if t is None else {p: (pm.leader, list(pm.replicas), list(pm.isrs))
                                  for p, pm in t.partitions.items()}
    return "brokers %s, %s partitions (leader, replicas, isr): %s" % (
        sorted(md.brokers), topic, parts)


class ClusterClientCase(ClusterTestCase):
    """Helpers over self.cluster (a cluster_harness.Cluster the test sets up)."""

    def until_registered(self, register):
        """Calls register() -> (HTTP status, body) until it answers 200 and returns the schema
        id: a cluster's first registration waits for `_schemas` to be created and to elect a
        leader."""
        deadline = time.time() + DEADLINE
        while True:
            status, body = register()
            if status == 200 or time.time() > deadline:
                self.assertEqual(status, 200, body)
                return body["id"]
            time.sleep(0.2)

    def registry_writer(self):
        """The node leading `_schemas`: the registry's one writer."""
        md = admin(self.cluster.bootstrap()).list_topics("_schemas", timeout=10)
        return md.topics["_schemas"].partitions[0].leader

    def wait_metadata(self, topic, predicate, what, timeout=DEADLINE, via=None):
        """Polls Metadata (through `via`, else the running brokers) until predicate(md)."""
        deadline = time.time() + timeout
        last = None
        while time.time() < deadline:
            try:
                md = admin(via or self.cluster.bootstrap()).list_topics(topic, timeout=5)
                last = md
                if predicate(md):
                    return md
            except Exception as e:  # a broker going away mid-request: ask again
                last = e
            time.sleep(0.2)
        self.fail("timed out after %ss waiting for %s; last: %s" % (
            timeout, what, describe(last, topic) if hasattr(last, "topics") else repr(last)))

    def wait_for(self, predicate, what, timeout=DEADLINE):
        deadline = time.time() + timeout
        while not predicate():
            self.assertLess(time.time(), deadline, "timed out after %ss waiting for %s" % (
                timeout, what))
            time.sleep(0.05)

    @staticmethod
    def partitions(md, topic):
        t = md.topics.get(topic)
        if t is None or t.error is not None:
            return {}
        return t.partitions

    def fully_in_sync(self, topic, partitions, brokers=None):
        brokers = brokers or self.cluster.node_ids

        def pred(md):
            ps = self.partitions(md, topic)
            return (set(md.brokers) == set(brokers) and len(ps) == partitions and
                    all(sorted(p.replicas) == sorted(brokers) and
                        sorted(p.isrs) == sorted(brokers) and p.leader in brokers
                        for p in ps.values()))
        return pred

    def wait_controller_known(self):
        """Every running broker answers Metadata with all running brokers and a controller among
        them. librdkafka's CreateTopics asks its first answer for the controller and, when that
        answer has none yet (a broker whose view is still filling), waits for one until it times
        out ("waiting for controller"): seen on freshly started clusters under CPU load."""
        alive = [n for n in self.cluster.node_ids if self.cluster.alive(n)]
        for n in alive:
            self.wait_metadata(None, lambda md: (set(md.brokers) == set(alive) and
                                                 md.controller_id in md.brokers),
                               "broker %d to know the controller" % n, via=self.cluster.address(n))

    def create_topic(self, topic, partitions=3, rf=3, config=None):
        from confluent_kafka.admin import NewTopic
        self.wait_controller_known()
        a = admin(self.cluster.bootstrap())
        fs = a.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=rf,
                                       config=dict(config or {}))], request_timeout=DEADLINE)
        fs[topic].result(DEADLINE)
        if rf == len(self.cluster.node_ids):
            return self.wait_metadata(topic, self.fully_in_sync(topic, partitions),
                                      "%s fully replicated" % topic)

        def placed(md):
            ps = self.partitions(md, topic)
            return len(ps) == partitions and all(
                len(p.replicas) == rf and sorted(p.isrs) == sorted(p.replicas) and
                p.leader in p.replicas for p in ps.values())
        return self.wait_metadata(topic, placed, "%s fully replicated" % topic)

    def consume_all(self, topic, partitions, until, config=None, keyed=False):
        """Reads every partition from the beginning (assign(), no group) until each was read past
        until[p] and reached its end. Returns {partition: [(offset, value)]} (value None for a
        tombstone), [(offset, key, value)] when `keyed`. `config`: more consumer settings
        (isolation.level)."""
        from confluent_kafka import Consumer, KafkaError, OFFSET_BEGINNING, TopicPartition
        c = Consumer(dict({"bootstrap.servers": self.cluster.bootstrap(),
                           "group.id": "strata-it-unused", "enable.auto.commit": False,
                           "auto.offset.reset": "earliest", "enable.partition.eof": True},
                          **(config or {})))
        try:
            c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
            got = {p: [] for p in range(partitions)}
            done = set()
            deadline = time.time() + DEADLINE * 2
            while len(done) < partitions:
                self.assertLess(time.time(), deadline, "consumed only %s" % {
                    p: len(v) for p, v in got.items()})
                m = c.poll(0.5)
                if m is None:
                    continue
                if m.error():
                    self.assertEqual(m.error().code(), KafkaError._PARTITION_EOF, m.error())
                    p = m.partition()
                    last = got[p][-1][0] if got[p] else -1
                    if last >= until.get(p, -1):
                        done.add(p)
                    continue
                value = m.value().decode() if m.value() is not None else None
                got[m.partition()].append((m.offset(), m.key().decode(), value) if keyed else
                                          (m.offset(), value))
            return got
        finally:
            c.close()


class SharedClusterCase(ClusterClientCase):
    """One etcd and a 3-broker cluster for a whole test class (`cluster_props`: broker overrides);
    a broker a test killed is started again before the next test."""
    cluster_props = {}

    @classmethod
    def setUpClass(cls):
        import cluster_harness
        cls.etcd = cluster_harness.Etcd().start()
        cls.cluster = cluster_harness.Cluster(3, etcd_endpoints=cls.etcd.endpoint,
                                              extra_props=dict(cls.cluster_props)).start()
        cls.cluster.wait_ready()

    @classmethod
    def tearDownClass(cls):
        cls.cluster.cleanup()
        cls.etcd.cleanup()

    def shared(self):
        return [self.etcd, self.cluster]

    def setUp(self):
        super().setUp()
        for n in self.cluster.node_ids:  # a previous test's kill is healed before the next
            if not self.cluster.alive(n):
                self.cluster.start(n)
        self.cluster.wait_ready()
        self.wait_metadata(None, lambda md: len(md.brokers) == 3, "3 live brokers")
