"""Integration tests of `strata group ...` (issue 6) against a live broker: lag equals produced
minus committed, reset-offsets dry run changes nothing and --execute moves a subsequent consumer,
a live group refuses reset and delete. Offsets are committed with confluent-kafka.
"""
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import itutil  # noqa: E402
from test_cli import CliTestCase  # noqa: E402


class GroupCommands(CliTestCase):
    def commit(self, group, topic, offsets):
        from confluent_kafka import TopicPartition
        c = itutil.ck_consumer(self.broker.bootstrap, group_id=group)
        try:
            c.commit(offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()],
                     asynchronous=False)
        finally:
            c.close()

    def test_lag_reset_and_delete(self):
        t = itutil.unique_topic("cli-grp")
        g = itutil.unique_topic("grp")
        self.cli_json("topic", "create", t, "--partitions", "2")
        self.run_cli("produce", t, "--partition", "0", stdin="".join("a%d\n" % i
                                                                     for i in range(12)))
        self.run_cli("produce", t, "--partition", "1", stdin="".join("b%d\n" % i
                                                                     for i in range(7)))
        self.commit(g, t, {0: 5, 1: 7})

        groups = {x["group_id"]: x for x in self.cli_json("group", "list")["groups"]}
        self.assertIn(g, groups)
        d = self.cli_json("group", "describe", g)
        self.assertEqual(d["state"], "Empty")
        offs = {(o["topic"], o["partition"]): o for o in d["offsets"]}
        self.assertEqual(offs[(t, 0)]["committed_offset"], 5)
        self.assertEqual(offs[(t, 0)]["log_end_offset"], 12)
        self.assertEqual(offs[(t, 0)]["lag"], 12 - 5)
        self.assertEqual(offs[(t, 1)]["lag"], 0)

        # Dry run: shows the plan, changes nothing.
        plan = self.cli_json("group", "reset-offsets", g, "--topic", t, "--to-earliest")
        self.assertFalse(plan["executed"])
        self.assertEqual({p["partition"]: (p["current_offset"], p["new_offset"])
                          for p in plan["partitions"]}, {0: (5, 0), 1: (7, 0)})
        d = self.cli_json("group", "describe", g)
        self.assertEqual({o["partition"]: o["committed_offset"] for o in d["offsets"]},
                         {0: 5, 1: 7})

        # Other modes (dry run).
        plan = self.cli_json("group", "reset-offsets", g, "--topic", t, "--shift-by", "-3")
        self.assertEqual({p["partition"]: p["new_offset"] for p in plan["partitions"]},
                         {0: 2, 1: 4})
        plan = self.cli_json("group", "reset-offsets", g, "--topic", t, "--to-offset", "9")
        self.assertEqual({p["partition"]: p["new_offset"] for p in plan["partitions"]},
                         {0: 9, 1: 7})  # clamped to the log end
        plan = self.cli_json("group", "reset-offsets", g, "--topic", t, "--to-datetime",
                             "2100-01-01T00:00:00Z")
        self.assertEqual({p["partition"]: p["new_offset"] for p in plan["partitions"]},
                         {0: 12, 1: 7})
        plan = self.cli_json("group", "reset-offsets", g, "--topic", t, "--to-datetime",
                             "2000-01-01T00:00:00.000+02:00")
        self.assertEqual({p["partition"]: p["new_offset"] for p in plan["partitions"]},
                         {0: 0, 1: 0})

        # --execute: a subsequent group consumer starts at the new offsets.
        done = self.cli_json("group", "reset-offsets", g, "--topic", t, "--to-offset", "3",
                             "--execute")
        self.assertTrue(done["executed"])
        d = self.cli_json("group", "describe", g)
        self.assertEqual({o["partition"]: o["committed_offset"] for o in d["offsets"]},
                         {0: 3, 1: 3})
        from confluent_kafka import TopicPartition, KafkaError
        c = itutil.ck_consumer(self.broker.bootstrap, group_id=g, auto_offset_reset="latest")
        firsts = {}
        try:
            c.assign([TopicPartition(t, 0), TopicPartition(t, 1)])  # committed offsets apply
            deadline = time.time() + 30
            while len(firsts) < 2 and time.time() < deadline:
                m = c.poll(0.5)
                if m is None or (m.error() and m.error().code() == KafkaError._PARTITION_EOF):
                    continue
                self.assertIsNone(m.error())
                firsts.setdefault(m.partition(), (m.offset(), m.value().decode()))
        finally:
            c.close()
        self.assertEqual(firsts, {0: (3, "a3"), 1: (3, "b3")})

        # A live member: describe shows it with its assignment; reset is refused.
        from confluent_kafka import Consumer
        live = Consumer({"bootstrap.servers": self.broker.bootstrap, "group.id": g,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "session.timeout.ms": 10000})
        try:
            live.subscribe([t])
            deadline = time.time() + 30
            state = None
            while time.time() < deadline:
                live.poll(0.2)
                d = self.cli_json("group", "describe", g)
                state = d["state"]
                if state == "Stable" and d["members"] and d["members"][0]["assignment"]:
                    break
            self.assertEqual(state, "Stable")
            asg = d["members"][0]["assignment"]
            self.assertEqual(asg, [{"topic": t, "partitions": [0, 1]}])
            self.assertEqual({o["member_id"] for o in d["offsets"]}, {d["members"][0]["member_id"]})
            err = self.cli_json("group", "reset-offsets", g, "--topic", t, "--to-earliest",
                                "--execute", expect=1)
            self.assertEqual(err["error"]["name"], "NON_EMPTY_GROUP")
            err = self.cli_json("group", "delete", g, expect=1)
            self.assertEqual(err["error"]["name"], "NON_EMPTY_GROUP")
        finally:
            live.close()

        deadline = time.time() + 30
        while time.time() < deadline:
            if self.cli_json("group", "describe", g)["state"] == "Empty":
                break
            time.sleep(0.2)
        self.assertTrue(self.cli_json("group", "delete", g)["deleted"])
        groups = {x["group_id"] for x in self.cli_json("group", "list")["groups"]}
        self.assertNotIn(g, groups)


if __name__ == "__main__":
    unittest.main(verbosity=2)
