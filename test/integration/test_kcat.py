"""kcat (librdkafka 2.0.2) produces 100k keyed messages with headers and null values to a
3-partition topic and consumes them back: every message identical, in order per partition,
offsets contiguous from 0."""
import json
import subprocess
import unittest
import zlib

import itutil

KCAT = "/usr/bin/kcat"
PARTITIONS = 3
# Two kcat runs, each with its own fixed header set (kcat -H applies to every message of a run).
RUNS = [
    (60000, [("trace", "abc-123"), ("app", "strata-it"), ("empty", "")]),
    (40000, [("run", "second"), ("ünï", "çødé ✓")]),
]


def make_messages(start, count):
    msgs = []
    for i in range(start, start + count):
        key = "k%06d" % i
        if i % 7 == 3:
            value = None  # -Z: empty value → NULL
        else:
            value = "v%06d|%s|ä€😀|%s" % (i, "x" * (i % 97), " spaced out " * (i % 3))
        msgs.append((key, value))
    return msgs


class KcatRoundTrip(itutil.BrokerTestCase):
    def test_100k_keyed_messages_headers_nulls(self):
        b = self.broker.bootstrap
        topic = itutil.unique_topic("kcat")
        itutil.ck_create_topic(b, topic, partitions=PARTITIONS)

        sent = []  # (key, value, headers) in send order
        start = 0
        for count, headers in RUNS:
            msgs = make_messages(start, count)
            start += count
            data = "".join("%s\t%s\n" % (k, "" if v is None else v) for k, v in msgs)
            args = [KCAT, "-P", "-b", b, "-t", topic, "-K", "\t", "-Z",
                    "-X", "enable.idempotence=false", "-X", "linger.ms=20"]
            for hk, hv in headers:
                args += ["-H", "%s=%s" % (hk, hv)]
            p = subprocess.run(args, input=data.encode(), capture_output=True, timeout=120)
            self.assertEqual(p.returncode, 0, "kcat -P failed: %s" % p.stderr.decode(errors="replace"))
            self.assertNotIn(b"Failed to produce", p.stderr, p.stderr.decode(errors="replace"))
            sent.extend((k, v, headers) for k, v in msgs)

        p = subprocess.run([KCAT, "-C", "-b", b, "-t", topic, "-o", "beginning", "-e", "-J", "-q"],
                           capture_output=True, timeout=120)
        self.assertEqual(p.returncode, 0, "kcat -C failed: %s" % p.stderr.decode(errors="replace"))
        lines = [ln for ln in p.stdout.decode().split("\n") if ln.strip()]
        self.assertEqual(len(lines), len(sent), "consumed %d of %d messages" % (len(lines), len(sent)))

        by_partition = {p: [] for p in range(PARTITIONS)}
        for ln in lines:
            m = json.loads(ln)
            self.assertEqual(m["topic"], topic)
            self.assertIn(m["partition"], by_partition)
            by_partition[m["partition"]].append(m)

        expected = {p: [] for p in range(PARTITIONS)}
        for k, v, h in sent:
            # librdkafka's default partitioner (consistent_random) is CRC-32(key) % partitions
            expected[zlib.crc32(k.encode()) % PARTITIONS].append((k, v, h))

        for part in range(PARTITIONS):
            got = by_partition[part]
            exp = expected[part]
            self.assertGreater(len(exp), 10000)
            self.assertEqual(len(got), len(exp), "partition %d count" % part)
            for i, (m, (k, v, h)) in enumerate(zip(got, exp)):
                self.assertEqual(m["offset"], i, "partition %d: offsets not contiguous" % part)
                self.assertEqual(m["key"], k, "partition %d offset %d key" % (part, i))
                self.assertEqual(m["payload"], v, "partition %d offset %d value" % (part, i))
                hdrs = m.get("headers") or []
                self.assertEqual(list(zip(hdrs[0::2], hdrs[1::2])), h,
                                 "partition %d offset %d headers" % (part, i))
                self.assertEqual(m["tstype"], "create")
                self.assertGreater(m["ts"], 1_600_000_000_000)
        self.assertBrokerAlive()


if __name__ == "__main__":
    unittest.main(verbosity=2)
