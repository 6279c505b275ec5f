"""KafkaJS 2.2.4: admin creates and lists a topic and fetches its offsets; the producer sends
uncompressed, gzip and snappy (kafkajs-snappy) batches; confluent-kafka reads them back.
(KafkaJS's consumer always joins a group, which the broker does not serve yet.)"""
import json
import os
import subprocess
import unittest

import itutil

JS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "js")
PER_CODEC = 300
PARTITIONS = 3
CODECS = ["none", "gzip", "snappy"]


def expected_message(codec, i):
    value = None if i % 40 == 39 else (("kafkajs %s value %d " % (codec, i)) * (i % 10 + 1)).encode()
    return ("%s-%d" % (codec, i)).encode(), value, i % PARTITIONS, [("idx", str(i).encode()),
                                                                  ("codec", codec.encode())]


class KafkaJS(itutil.BrokerTestCase):
    def test_admin_and_producer(self):
        b = self.broker.bootstrap
        topic = itutil.unique_topic("kjs")
        env = dict(os.environ, NODE_PATH=os.path.join(JS_DIR, "node_modules"))
        p = subprocess.run(["node", os.path.join(JS_DIR, "produce_admin.js"), b, topic, str(PER_CODEC)],
                           cwd=JS_DIR, env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, "node failed:\n%s\n%s" % (p.stdout, p.stderr))
        line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
        self.assertEqual(len(line), 1, p.stdout + p.stderr)
        res = json.loads(line[0][len("RESULT "):])

        self.assertIs(res["created"], True, "createTopics of a new topic")
        self.assertIs(res["createdAgain"], False, "createTopics of an existing topic (TOPIC_ALREADY_EXISTS)")
        self.assertTrue(res["listedBefore"])
        self.assertTrue(res["listedAfter"])

        per_part = [len([i for i in range(PER_CODEC) if i % PARTITIONS == q]) for q in range(PARTITIONS)]
        before = sorted(res["offsetsBefore"], key=lambda o: o["partition"])
        self.assertEqual([(o["partition"], o["low"], o["high"], o["offset"]) for o in before],
                         [(q, "0", "0", "0") for q in range(PARTITIONS)])
        for n, codec in enumerate(CODECS):
            md = sorted(res["sends"][codec], key=lambda m: m["partition"])
            self.assertEqual([(m["topicName"], m["partition"], m["errorCode"], m["baseOffset"]) for m in md],
                             [(topic, q, 0, str(n * per_part[q])) for q in range(PARTITIONS)],
                             "record metadata for %s send" % codec)
        after = sorted(res["offsetsAfter"], key=lambda o: o["partition"])
        self.assertEqual([(o["partition"], o["low"], o["high"]) for o in after],
                         [(q, "0", str(len(CODECS) * per_part[q])) for q in range(PARTITIONS)])

        total = PER_CODEC * len(CODECS)
        msgs = itutil.ck_consume(b, topic, range(PARTITIONS), total)
        got = {q: [] for q in range(PARTITIONS)}
        for m in msgs:
            got[m.partition()].append(m)
        for q in range(PARTITIONS):
            exp = [expected_message(c, i) for c in CODECS for i in range(PER_CODEC) if i % PARTITIONS == q]
            self.assertEqual(len(got[q]), len(exp))
            for off, (m, (k, v, part, h)) in enumerate(zip(got[q], exp)):
                self.assertEqual(m.offset(), off)
                self.assertEqual(m.key(), k)
                self.assertEqual(m.value(), v, "partition %d offset %d" % (q, off))
                self.assertEqual(list(m.headers() or []), h)

        # the gzip and snappy batches are stored as KafkaJS compressed them
        for q in range(PARTITIONS):
            codecs = []
            for path in itutil.segment_files(self.broker.data_dir, topic, q):
                with open(path, "rb") as f:
                    codecs += [attrs & 7 for _, attrs, _, _ in itutil.iter_batches(f.read())]
            self.assertEqual(codecs, [0, 1, 2], "stored batch codecs of partition %d" % q)


if __name__ == "__main__":
    unittest.main(verbosity=2)
