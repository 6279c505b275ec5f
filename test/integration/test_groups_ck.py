"""Consumer groups with librdkafka (confluent-kafka 1.7 / librdkafka 2.0.2), issue 3:
two consumers split a 6-partition topic; after a clean close, and separately after a SIGKILL (no
LeaveGroup), the survivor owns every partition within the session timeout and every message is
consumed at least once; committed offsets survive consumer and broker restarts; list/describe
groups; static membership (group.instance.id) restarts without rebalancing the others.
Run with `--child BOOTSTRAP TOPIC GROUP` it is the consumer the kill test SIGKILLs.
"""
import os
import signal
import subprocess
import sys
import threading
import time
import unittest

import itutil

SESSION_MS = 6000
PARTS = 6


def consumer(bootstrap, group, **extra):
    conf = dict(group_id=group, session_timeout_ms=SESSION_MS, heartbeat_interval_ms=500,
                enable_partition_eof=False, topic_metadata_refresh_interval_ms=1000)
    conf.update(extra)
    return itutil.ck_consumer(bootstrap, **conf)


def produce(bootstrap, topic, n, start=0):
    p = itutil.ck_producer(bootstrap)
    itutil.ck_produce_all(p, [dict(topic=topic, partition=i % PARTS, key=b"k%d" % i,
                                   value=b"v%d" % i) for i in range(start, start + n)])


class Tracker:
    """Polls consumers, records (partition, offset) seen and commits each message synchronously."""

    def __init__(self):
        self.seen = set()

    def poll(self, c, timeout=0.2):
        m = c.poll(timeout)
        if m is None or m.error():
            return
        self.seen.add((m.partition(), m.offset()))
        c.commit(message=m, asynchronous=False)


def assigned(c):
    return {tp.partition for tp in c.assignment()}


def child_main(bootstrap, topic, group):
    c = consumer(bootstrap, group)
    c.subscribe([topic])
    announced = None
    while True:
        m = c.poll(0.2)
        a = sorted(assigned(c))
        if a != announced:
            print("ASSIGNED %s" % ",".join(map(str, a)), flush=True)
            announced = a
        if m is None or m.error():
            continue
        print("SEEN %d %d" % (m.partition(), m.offset()), flush=True)
        c.commit(message=m, asynchronous=False)


class GroupsConfluentTest(itutil.BrokerTestCase):
    overrides = {"group.initial.rebalance.delay.ms": 0}

    def new_topic(self, prefix, partitions=PARTS):
        t = itutil.unique_topic(prefix)
        itutil.ck_create_topic(self.broker.bootstrap, t, partitions=partitions)
        return t

    def test_split_then_clean_leave(self):
        bs = self.broker.bootstrap
        topic, group = self.new_topic("ck-split"), itutil.unique_topic("ck-g")
        produce(bs, topic, 300)
        a, b = consumer(bs, group), consumer(bs, group)
        a.subscribe([topic])
        b.subscribe([topic])
        tr = Tracker()
        deadline = time.time() + 30
        while not (len(assigned(a)) == 3 and len(assigned(b)) == 3):
            self.assertLess(time.time(), deadline, "no 3/3 split: %s %s" % (assigned(a), assigned(b)))
            tr.poll(a, 0.1)
            tr.poll(b, 0.1)
        self.assertEqual(assigned(a) | assigned(b), set(range(PARTS)))
        self.assertFalse(assigned(a) & assigned(b))
        for _ in range(20):
            tr.poll(a, 0.05)
            tr.poll(b, 0.05)
        a.close()  # LeaveGroup
        t0 = time.time()
        while len(assigned(b)) != PARTS:
            self.assertLess(time.time() - t0, SESSION_MS / 1000.0, "b did not take over")
            tr.poll(b, 0.1)
        produce(bs, topic, 60, start=300)
        deadline = time.time() + 30
        while len(tr.seen) < 360:
            self.assertLess(time.time(), deadline, "consumed %d of 360" % len(tr.seen))
            tr.poll(b, 0.2)
        self.assertEqual(len(tr.seen), 360)
        b.close()

    def test_killed_member_is_replaced_within_session_timeout(self):
        bs = self.broker.bootstrap
        topic, group = self.new_topic("ck-kill"), itutil.unique_topic("ck-g")
        produce(bs, topic, 300)
        child = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child", bs, topic,
                                  group], stdout=subprocess.PIPE, text=True)
        lines = []
        threading.Thread(target=lambda: [lines.append(l.strip()) for l in child.stdout],
                         daemon=True).start()
        try:
            itutil.harness.wait_until(lambda: any(l.startswith("ASSIGNED 0") for l in lines),
                                      timeout=30, what="child assignment")
            b = consumer(bs, group)
            b.subscribe([topic])
            tr = Tracker()
            deadline = time.time() + 30
            while len(assigned(b)) != 3 or not any(l.startswith("SEEN") for l in lines):
                self.assertLess(time.time(), deadline, "no split with the child")
                tr.poll(b, 0.1)
            time.sleep(0.5)
            child.send_signal(signal.SIGKILL)  # no LeaveGroup
            child.wait()
            t0 = time.time()
            while len(assigned(b)) != PARTS:
                self.assertLess(time.time() - t0, SESSION_MS / 1000.0 + 4, "b did not take over")
                tr.poll(b, 0.1)
            took = time.time() - t0
            child_seen = {tuple(map(int, l.split()[1:])) for l in list(lines) if l.startswith("SEEN")}
            deadline = time.time() + 30
            while len(tr.seen | child_seen) < 300:
                self.assertLess(time.time(), deadline,
                                "consumed %d of 300" % len(tr.seen | child_seen))
                tr.poll(b, 0.2)
            self.assertEqual(len(tr.seen | child_seen), 300)
            sys.stderr.write("takeover after SIGKILL: %.1fs\n" % took)
            b.close()
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
            child.stdout.close()

    def test_committed_offsets_survive_consumer_and_broker_restart(self):
        bs = self.broker.bootstrap
        topic, group = self.new_topic("ck-commit", partitions=1), itutil.unique_topic("ck-g")
        produce_1 = itutil.ck_producer(bs)
        itutil.ck_produce_all(produce_1, [dict(topic=topic, partition=0, value=b"%d" % i)
                                          for i in range(100)])
        from confluent_kafka import TopicPartition

        def first_offset(c):
            deadline = time.time() + 30
            while time.time() < deadline:
                m = c.poll(0.2)
                if m is not None and not m.error():
                    return m.offset()
            self.fail("nothing consumed")

        c = consumer(bs, group)
        c.subscribe([topic])
        self.assertEqual(first_offset(c), 0)
        c.commit(offsets=[TopicPartition(topic, 0, 37)], asynchronous=False)
        c.close()
        c = consumer(bs, group)
        c.subscribe([topic])
        self.assertEqual(first_offset(c), 37)
        c.close()
        self.broker.restart()
        bs = self.broker.bootstrap
        c = consumer(bs, group)
        c.subscribe([topic])
        self.assertEqual(first_offset(c), 37)
        got = c.committed([TopicPartition(topic, 0)], timeout=10)
        self.assertEqual(got[0].offset, 37)
        c.close()

    def test_list_and_describe_groups(self):
        bs = self.broker.bootstrap
        topic, group = self.new_topic("ck-list"), itutil.unique_topic("ck-g")
        c = consumer(bs, group, client_id="ck-lister")
        c.subscribe([topic])
        deadline = time.time() + 30
        while len(assigned(c)) != PARTS:
            self.assertLess(time.time(), deadline)
            c.poll(0.1)
        for _ in range(10):
            c.poll(0.05)
        admin = itutil.ck_admin(bs)
        groups = {g.id: g for g in admin.list_groups(timeout=10)}
        self.assertIn(group, groups)
        g = groups[group]
        self.assertEqual(g.state, "Stable")
        self.assertEqual(g.protocol_type, "consumer")
        self.assertIn(g.protocol, ("range", "roundrobin"))
        self.assertEqual(len(g.members), 1)
        m = g.members[0]
        self.assertEqual(m.client_id, "ck-lister")
        self.assertEqual(m.client_host, "/127.0.0.1")
        self.assertGreater(len(m.assignment), 0)
        self.assertIn(topic.encode(), m.metadata)
        c.close()
        g = {g.id: g for g in admin.list_groups(group, timeout=10)}[group]
        self.assertEqual(g.state, "Empty")
        self.assertEqual(g.members, [])

    def test_static_member_restart_keeps_partitions_without_rebalance(self):
        bs = self.broker.bootstrap
        topic, group = self.new_topic("ck-static"), itutil.unique_topic("ck-g")
        rebalances = []

        def on_assign(c, parts):
            rebalances.append(("assign", sorted(p.partition for p in parts)))

        def on_revoke(c, parts):
            rebalances.append(("revoke", sorted(p.partition for p in parts)))

        a = consumer(bs, group, group_instance_id="inst-a")
        b = consumer(bs, group, group_instance_id="inst-b")
        a.subscribe([topic])
        b.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
        deadline = time.time() + 30
        while not (len(assigned(a)) == 3 and len(assigned(b)) == 3):
            self.assertLess(time.time(), deadline, "no split: %s %s" % (assigned(a), assigned(b)))
            a.poll(0.1)
            b.poll(0.1)
        a_parts, b_parts = assigned(a), assigned(b)
        events_before = len(rebalances)
        a.close()  # a static member sends no LeaveGroup
        a = consumer(bs, group, group_instance_id="inst-a")
        a.subscribe([topic])
        deadline = time.time() + SESSION_MS / 1000.0
        while len(assigned(a)) != 3:
            self.assertLess(time.time(), deadline, "restarted static member got nothing back")
            a.poll(0.1)
            b.poll(0.1)
        self.assertEqual(assigned(a), a_parts)
        for _ in range(20):  # give a rebalance (if any) the chance to reach b
            a.poll(0.05)
            b.poll(0.05)
        self.assertEqual(assigned(b), b_parts)
        self.assertEqual(rebalances[events_before:], [], "b saw a rebalance")
        a.close()
        b.close()


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child_main(*sys.argv[2:5])
    else:
        unittest.main(verbosity=2)
