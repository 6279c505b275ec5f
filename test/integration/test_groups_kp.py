"""Consumer groups with kafka-python 2.0.2, issue 3: two consumers (one thread each, as
kafka-python joins inside poll) split a 6-partition topic; after a clean close, and separately a
SIGKILL of a member running in a subprocess, the survivor owns every partition within the session
timeout and every message is consumed at least once; commit metadata round-trips; admin
list/describe/delete consumer groups. `--child BOOTSTRAP TOPIC GROUP` runs the killed member.
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


def kp_consumer(bootstrap, group, **extra):
    from kafka import KafkaConsumer
    conf = dict(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                auto_offset_reset="earliest", session_timeout_ms=SESSION_MS,
                heartbeat_interval_ms=500, max_poll_interval_ms=20000, request_timeout_ms=30000,
                metadata_max_age_ms=2000, api_version_auto_timeout_ms=10000)
    conf.update(extra)
    return KafkaConsumer(**conf)


def produce(bootstrap, topic, n, start=0):
    p = itutil.kp_producer(bootstrap)
    for i in range(start, start + n):
        p.send(topic, key=b"k%d" % i, value=b"v%d" % i, partition=i % PARTS)
    p.flush(30)
    p.close()


class Runner(threading.Thread):
    """Polls one consumer in its own thread, committing after every poll."""

    def __init__(self, c, topic, seen):
        super().__init__(daemon=True)
        self.c, self.seen, self.stop_flag = c, seen, False
        c.subscribe([topic])

    def run(self):
        while not self.stop_flag:
            batch = self.c.poll(timeout_ms=200)
            for tp, msgs in batch.items():
                for m in msgs:
                    self.seen.add((tp.partition, m.offset))
            if batch:
                self.c.commit()

    def parts(self):
        return {tp.partition for tp in self.c.assignment()}

    def stop(self, close=True):
        self.stop_flag = True
        self.join(10)
        if close:
            self.c.close()


def child_main(bootstrap, topic, group):
    c = kp_consumer(bootstrap, group)
    c.subscribe([topic])
    announced = None
    while True:
        batch = c.poll(timeout_ms=200)
        a = sorted(tp.partition for tp in c.assignment())
        if a != announced:
            print("ASSIGNED %s" % ",".join(map(str, a)), flush=True)
            announced = a
        for tp, msgs in batch.items():
            for m in msgs:
                print("SEEN %d %d" % (tp.partition, m.offset), flush=True)
        if batch:
            c.commit()


class GroupsKafkaPythonTest(itutil.BrokerTestCase):
    overrides = {"group.initial.rebalance.delay.ms": 0}

    def new_topic(self, prefix, partitions=PARTS):
        t = itutil.unique_topic(prefix)
        itutil.ck_create_topic(self.broker.bootstrap, t, partitions=partitions)
        return t

    def wait(self, pred, timeout, what):
        itutil.harness.wait_until(pred, timeout=timeout, interval=0.1, what=what)

    def test_split_then_clean_leave(self):
        bs = self.broker.bootstrap
        topic, group = self.new_topic("kp-split"), itutil.unique_topic("kp-g")
        produce(bs, topic, 300)
        seen = set()
        a = Runner(kp_consumer(bs, group), topic, seen)
        b = Runner(kp_consumer(bs, group), topic, seen)
        a.start()
        b.start()
        self.wait(lambda: len(a.parts()) == 3 and len(b.parts()) == 3, 40, "3/3 split")
        self.assertEqual(a.parts() | b.parts(), set(range(PARTS)))
        a.stop()  # close() sends LeaveGroup
        t0 = time.time()
        self.wait(lambda: len(b.parts()) == PARTS, SESSION_MS / 1000.0, "b owning everything")
        sys.stderr.write("kafka-python takeover after close: %.1fs\n" % (time.time() - t0))
        produce(bs, topic, 60, start=300)
        self.wait(lambda: len(seen) >= 360, 30, "all 360 messages")
        self.assertEqual(len(seen), 360)
        b.stop()

    def test_killed_member_is_replaced_within_session_timeout(self):
        bs = self.broker.bootstrap
        topic, group = self.new_topic("kp-kill"), itutil.unique_topic("kp-g")
        produce(bs, topic, 300)
        child = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child", bs, topic,
                                  group], stdout=subprocess.PIPE, text=True)
        lines = []
        threading.Thread(target=lambda: [lines.append(l.strip()) for l in child.stdout],
                         daemon=True).start()
        try:
            self.wait(lambda: any(l.startswith("ASSIGNED 0") for l in lines), 40, "child assigned")
            seen = set()
            b = Runner(kp_consumer(bs, group), topic, seen)
            b.start()
            self.wait(lambda: len(b.parts()) == 3, 40, "3/3 split with the child")
            time.sleep(1)
            child.send_signal(signal.SIGKILL)
            child.wait()
            t0 = time.time()
            self.wait(lambda: len(b.parts()) == PARTS, SESSION_MS / 1000.0 + 4, "takeover")
            sys.stderr.write("kafka-python takeover after SIGKILL: %.1fs\n" % (time.time() - t0))
            child_seen = {tuple(map(int, l.split()[1:])) for l in list(lines) if l.startswith("SEEN")}
            self.wait(lambda: len(seen | child_seen) >= 300, 30, "all 300 messages")
            b.stop()
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
            child.stdout.close()

    def test_commit_metadata_and_admin(self):
        from kafka import TopicPartition
        from kafka.admin import KafkaAdminClient
        from kafka.structs import OffsetAndMetadata
        bs = self.broker.bootstrap
        topic, group = self.new_topic("kp-admin"), itutil.unique_topic("kp-g")
        produce(bs, topic, 12)
        seen = set()
        r = Runner(kp_consumer(bs, group, client_id="kp-member"), topic, seen)
        r.start()
        self.wait(lambda: len(seen) == 12, 30, "12 messages")
        admin = KafkaAdminClient(bootstrap_servers=bs, api_version_auto_timeout_ms=10000)
        listed = dict(admin.list_consumer_groups())
        self.assertEqual(listed.get(group), "consumer")
        info = admin.describe_consumer_groups([group])[0]
        self.assertEqual(info.error_code, 0)
        self.assertEqual(info.state, "Stable")
        self.assertEqual(info.protocol_type, "consumer")
        self.assertEqual(len(info.members), 1)
        m = info.members[0]
        self.assertEqual(m.client_id, "kp-member")
        self.assertEqual(m.client_host, "/127.0.0.1")
        self.assertEqual(sorted(m.member_assignment.assignment[0][1]), list(range(PARTS)))
        self.assertEqual(m.member_metadata.subscription, [topic])
        self.assertEqual([(g, e.errno) for g, e in admin.delete_consumer_groups([group])], [(group, 68)])
        r.stop()

        c = kp_consumer(bs, group)
        tp = TopicPartition(topic, 2)
        c.assign([tp])
        c.commit({tp: OffsetAndMetadata(1, "kp-meta ✓")})
        self.assertEqual(c.committed(tp, metadata=True), OffsetAndMetadata(1, "kp-meta ✓"))
        c.close()
        offsets = admin.list_consumer_group_offsets(group)
        self.assertEqual(offsets[tp], OffsetAndMetadata(1, "kp-meta ✓"))
        self.assertEqual(offsets[TopicPartition(topic, 0)].offset, 2)
        self.assertEqual([(g, e.errno) for g, e in admin.delete_consumer_groups([group])], [(group, 0)])
        self.assertEqual(admin.list_consumer_group_offsets(group), {})
        admin.close()


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child_main(*sys.argv[2:5])
    else:
        unittest.main(verbosity=2)
