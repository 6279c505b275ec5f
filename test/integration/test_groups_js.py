"""Consumer groups with KafkaJS 2.2.4 (js/groups.js), issue 3: two consumers split a 6-partition
topic; after a clean disconnect (SIGTERM → LeaveGroup), and separately after a SIGKILL, the survivor
owns every partition within the session timeout and every message is consumed at least once;
admin listGroups/describeGroups/fetchOffsets/deleteGroups (NON_EMPTY_GROUP while members remain).
KafkaJS 2.2.4 has no OffsetDelete call; test_groups_raw.py covers it with raw frames.
"""
import json
import os
import signal
import subprocess
import threading
import time
import unittest

import itutil

JS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "js")
PARTS = 6
SESSION_S = 6.0


class Member:
    def __init__(self, bootstrap, topic, group):
        self.proc = subprocess.Popen(["node", os.path.join(JS, "groups.js"), "member", bootstrap,
                                      topic, group], cwd=JS, stdout=subprocess.PIPE, text=True)
        self.lines = []
        threading.Thread(target=lambda: [self.lines.append(l.strip()) for l in self.proc.stdout],
                         daemon=True).start()

    def assignment(self):
        last = [l for l in list(self.lines) if l.startswith("ASSIGNED")]
        if not last:
            return None
        rest = last[-1][len("ASSIGNED"):].strip()
        return {int(p) for p in rest.split(",")} if rest else set()

    def seen(self):
        return {tuple(map(int, l.split()[1:])) for l in list(self.lines) if l.startswith("SEEN")}

    def stop(self, sig):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()


def produce(bootstrap, topic, n, start=0):
    p = itutil.ck_producer(bootstrap)
    itutil.ck_produce_all(p, [dict(topic=topic, partition=i % PARTS, value=b"v%d" % i)
                              for i in range(start, start + n)])


class GroupsKafkaJSTest(itutil.BrokerTestCase):
    overrides = {"group.initial.rebalance.delay.ms": 0}

    def wait(self, pred, timeout, what):
        itutil.harness.wait_until(pred, timeout=timeout, interval=0.1, what=what)

    def admin(self, group, topic):
        out = subprocess.run(["node", os.path.join(JS, "groups.js"), "admin",
                              self.broker.bootstrap, group, topic], cwd=JS, capture_output=True,
                             text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        line = [l for l in out.stdout.splitlines() if l.startswith("RESULT ")][0]
        return json.loads(line[len("RESULT "):])

    def run_takeover(self, sig):
        bs = self.broker.bootstrap
        topic, group = itutil.unique_topic("js-grp"), itutil.unique_topic("js-g")
        itutil.ck_create_topic(bs, topic, partitions=PARTS)
        produce(bs, topic, 300)
        a, b = Member(bs, topic, group), Member(bs, topic, group)
        members = [a, b]
        try:
            self.wait(lambda: a.assignment() is not None and b.assignment() is not None and
                      len(a.assignment()) == 3 and len(b.assignment()) == 3, 40, "3/3 split")
            self.assertEqual(a.assignment() | b.assignment(), set(range(PARTS)))
            self.wait(lambda: len(a.seen() | b.seen()) >= 100, 30, "some messages consumed")
            if sig == signal.SIGTERM:
                info = self.admin(group, topic)
                self.assertEqual(info["listed"], [{"groupId": group, "protocolType": "consumer"}])
                d = info["described"]
                self.assertEqual(d["state"], "Stable")
                self.assertEqual(d["protocolType"], "consumer")
                self.assertEqual(len(d["members"]), 2)
                self.assertTrue(all(m["clientId"] == "strata-it-groups" and
                                    m["clientHost"] == "/127.0.0.1" and m["assignmentBytes"] > 0
                                    for m in d["members"]))
                self.assertEqual(info["deleteError"]["groups"], [{"groupId": group, "errorCode": 68}])
                self.assertEqual(len(info["offsets"][0]["partitions"]), PARTS)
            a_seen = a.seen()
            a.stop(sig)
            t0 = time.time()
            self.wait(lambda: b.assignment() == set(range(PARTS)),
                      SESSION_S + (4 if sig == signal.SIGKILL else 0), "b owning everything")
            took = time.time() - t0
            produce(bs, topic, 60, start=300)
            self.wait(lambda: len(a_seen | b.seen()) >= 360, 30, "all 360 messages")
            self.assertEqual(len(a_seen | b.seen()), 360)
            b.stop(signal.SIGTERM)
            return group, topic, took
        finally:
            for m in members:
                if m.proc.poll() is None:
                    m.proc.kill()
                    m.proc.wait()

    def test_clean_leave_then_admin_delete(self):
        group, topic, took = self.run_takeover(signal.SIGTERM)
        info = self.admin(group, topic)
        self.assertEqual(info["described"]["state"], "Empty")
        self.assertEqual(info["deleted"], [{"groupId": group, "errorCode": 0}])
        info = self.admin(group, topic)
        self.assertEqual(info["listed"], [])
        self.assertEqual(info["described"]["state"], "Dead")

    def test_killed_member_is_replaced(self):
        group, topic, took = self.run_takeover(signal.SIGKILL)
        self.assertGreater(took, 1.0)  # it really waited for the session to expire


if __name__ == "__main__":
    unittest.main(verbosity=2)
