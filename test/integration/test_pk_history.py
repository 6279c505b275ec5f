"""Point-in-time reads (LookupAsOf, extension key 16007; docs/pk-tables.md "Point-in-time reads")
against one real broker, through the client library (the strata CLI):

- a table with table.history.enabled=true fed by confluent-kafka (idempotent, explicit record
  timestamps, some late, some deletes) over 3 partitions; a training set of 100,000 (key, time)
  events (`strata table as-of --events`) equals an independent model — for each event the key's
  newest change (in log order) with a timestamp at or before the event's time — while another
  producer keeps updating the same keys with later timestamps (none of which may leak into an
  answer); points by offset likewise;
- after kill -9 and restart (the history replayed with the rows) every answer is the same;
- a training set read from a log topic of events (`--topic`: keys and record timestamps, 12,500
  events over 2 partitions, more than one round of lookups) answers every keyed event once,
  carrying where it came from, and equals the model;
- a typed (json) table with history answers with the column projection, and whole rows as the
  partial writes left them;
- a table without history refuses the read (INVALID_REQUEST)."""
import json
import os
import random
import subprocess
import threading
import unittest

import itutil
from itutil import BrokerTestCase, unique_topic

CLI = os.environ.get("STRATA_CLI") or os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    "build", "tools", "cli", "strata")
BASE = 1_700_000_000_000
KEYS = ["user-%02d" % i for i in range(40)]


class PkHistoryTest(BrokerTestCase):

    def cli(self, *args, stdin=None):
        p = subprocess.run([CLI, "-b", self.broker.bootstrap, "-o", "json"] + list(args),
                           input=stdin, capture_output=True, timeout=120, text=True)
        return p.returncode, p.stdout, p.stderr

    def expected(self, model, key, at, by_offset=False):
        """The model's row of `key` at `at`: (value or None, offset, timestamp)."""
        hit = None
        for offset, ts, value in model.get(key, []):
            if (offset if by_offset else ts) <= at:
                hit = (value, offset, ts)
        return hit if hit and hit[0] is not None else None

    def as_of_events(self, topic, events):
        path = os.path.join(self.broker.data_dir, "events-%s.tsv" % topic)
        with open(path, "w") as f:
            for key, at in events:
                f.write("%s\t%d\n" % (key, at))
        rc, out, err = self.cli("table", "as-of", topic, "--events", path)
        self.assertEqual(rc, 0, err)
        return [json.loads(line) for line in out.splitlines()]

    def check(self, model, events, answers):
        self.assertEqual(len(answers), len(events))
        found = 0
        for (key, at), a in zip(events, answers):
            self.assertEqual((a["key"], a["at"]), (key, at))
            self.assertNotIn("error", a, a)
            want = self.expected(model, key, at)
            if want is None:
                self.assertFalse(a["found"], (key, at, a))
                continue
            found += 1
            self.assertTrue(a["found"], (key, at, want))
            self.assertEqual((a["value"], a["offset"], a["timestamp"]), want, (key, at))
            self.assertLessEqual(a["timestamp"], at, "no change after the event's time")
        self.assertGreater(found, len(events) // 3, "most events see a row")

    def test_training_set_by_time_and_offset_survives_kill_9(self):
        topic = unique_topic("features")
        itutil.ck_create_topic(self.broker.bootstrap, topic, 3,
                               {"table.type": "primary-key", "table.history.enabled": "true"})
        rng = random.Random(17)
        producer = itutil.ck_producer(self.broker.bootstrap, partitioner="murmur2_random",
                                      enable_idempotence=True)
        items = []
        for i in range(3000):
            ts = BASE + i * 10
            if rng.random() < 0.1:
                ts -= rng.randint(1, 500)  # late: older than changes already written
            value = None if rng.random() < 0.1 else "v%d" % i
            items.append({"topic": topic, "key": rng.choice(KEYS).encode(),
                          "value": value.encode() if value else None, "timestamp": ts})
        delivered = itutil.ck_produce_all(producer, items)
        model, present = {}, {}
        for item, msg in sorted(zip(items, delivered), key=lambda im: (im[1].partition(),
                                                                        im[1].offset())):
            key = item["key"].decode()
            value = item["value"].decode() if item["value"] else None
            if value is None and not present.get(key):
                continue  # deleting an absent key changes nothing
            model.setdefault(key, []).append((msg.offset(), item["timestamp"], value))
            present[key] = value is not None

        # Meanwhile the same keys keep changing, later than every event: nothing may leak.
        stop = threading.Event()

        written = [0]

        def keep_writing():
            p = itutil.ck_producer(self.broker.bootstrap, partitioner="murmur2_random")
            n = 0
            while not stop.is_set():
                try:
                    p.produce(topic, key=KEYS[n % len(KEYS)].encode(), value=b"future",
                              timestamp=BASE + 10_000_000 + n)
                    n += 1
                    written[0] = n
                except BufferError:  # the local queue is full: let it drain
                    p.poll(0.05)
                p.poll(0.002)  # a steady stream, not a flood
            p.flush(30)

        writer = threading.Thread(target=keep_writing)
        writer.start()
        try:
            for _ in range(500):  # the stream is flowing before the training set is read
                if written[0] >= 50:
                    break
                stop.wait(0.01)
            # A training set of 100,000 events (one CLI call: the client pages it).
            events = [(rng.choice(KEYS), BASE - 1000 + rng.randint(0, 32_000))
                      for _ in range(100_000)]
            answers = self.as_of_events(topic, events)
        finally:
            stop.set()
            writer.join()
        self.assertGreater(written[0], 50, "the table changed while the training set was read")
        self.check(model, events, answers)

        # By offset: the row after each key's change at or below the point.
        for key in KEYS[:8]:
            for offset, _, _ in model.get(key, [])[:3]:
                rc, out, err = self.cli("table", "as-of", topic, key, "--offset", str(offset))
                self.assertEqual(rc, 0, err)
                row = json.loads(out)["rows"][0]
                want = self.expected(model, key, offset, by_offset=True)
                self.assertEqual(row["found"], want is not None, (key, offset, row))
                if want:
                    self.assertEqual((row["value"], row["offset"]), want[:2])

        self.broker.restart(clean=False)
        self.assertEqual(self.as_of_events(topic, events), answers,
                         "after kill -9 the history answers as before")

        # The events as a log topic (keys, record timestamps = the points), more than one round
        # of lookups (the CLI answers 10,000 events per round); keyless events are skipped.
        events_topic = unique_topic("events")
        itutil.ck_create_topic(self.broker.bootstrap, events_topic, 2)
        p = itutil.ck_producer(self.broker.bootstrap, partitioner="murmur2_random")
        stream = [{"topic": events_topic, "key": rng.choice(KEYS).encode(),
                   "value": b"label-%d" % i, "timestamp": BASE - 1000 + rng.randint(0, 32_000)}
                  for i in range(12_500)]
        stream += [{"topic": events_topic, "value": b"no key", "timestamp": BASE}] * 3
        sent = itutil.ck_produce_all(p, stream)
        where = {(m.partition(), m.offset()): item for item, m in zip(stream, sent)}
        rc, out, err = self.cli("table", "as-of", topic, "--topic", events_topic)
        self.assertEqual(rc, 0, err)
        self.assertIn("3 events without a key skipped", err)
        lines = [json.loads(line) for line in out.splitlines()]
        self.assertEqual(len(lines), 12_500)
        seen = set()
        for a in lines:
            origin = (a["event"]["partition"], a["event"]["offset"])
            self.assertNotIn(origin, seen, "each event answered once")
            seen.add(origin)
            item = where[origin]
            self.assertEqual((a["key"], a["at"], a["event"]["value"]),
                             (item["key"].decode(), item["timestamp"], item["value"].decode()))
        self.check(model, [(a["key"], a["at"]) for a in lines],
                   [{k: v for k, v in a.items() if k != "event"} for a in lines])

    def test_typed_history_takes_the_projection(self):
        topic = unique_topic("typed")
        itutil.ck_create_topic(self.broker.bootstrap, topic, 1,
                               {"table.type": "primary-key", "table.history.enabled": "true",
                                "table.value.format": "json"})
        producer = itutil.ck_producer(self.broker.bootstrap)
        itutil.ck_produce_all(producer, [
            {"topic": topic, "key": b"u1", "value": json.dumps(v).encode(), "timestamp": ts}
            for ts, v in [(BASE, {"score": 1, "tier": "a"}), (BASE + 10, {"score": 2}),
                          (BASE + 20, {"tier": "b", "note": "late"})]])
        want = {BASE: {"score": 1}, BASE + 10: {"score": 2}, BASE + 25: {"score": 2}}
        for at, row in want.items():
            rc, out, err = self.cli("table", "as-of", topic, "u1", "--at", str(at),
                                    "--columns", "score")
            self.assertEqual(rc, 0, err)
            got = json.loads(out)["rows"][0]
            self.assertTrue(got["found"], got)
            self.assertEqual(json.loads(got["value"]), row, at)
        # Whole rows as they were (a partial write merged into the row before it).
        rc, out, err = self.cli("table", "as-of", topic, "u1", "--at", str(BASE + 10))
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(json.loads(out)["rows"][0]["value"]),
                         {"score": 2, "tier": "a"})

    def test_a_table_without_history_refuses(self):
        topic = unique_topic("plain")
        itutil.ck_create_topic(self.broker.bootstrap, topic, 1, {"table.type": "primary-key"})
        rc, _, err = self.cli("table", "as-of", topic, "k", "--at", str(BASE))
        self.assertNotEqual(rc, 0)
        self.assertIn("INVALID_REQUEST", err)
        self.assertIn("table.history.enabled", err)


if __name__ == "__main__":
    unittest.main()
