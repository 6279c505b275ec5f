"""Issue 4 (admin half) on the wire, with hand-built frames for what the installed clients lack:
IncrementalAlterConfigs v0/v1 (SET/DELETE/APPEND/SUBTRACT, errors), DescribeConfigs v4 with
documentation and types, AlterConfigs on the cluster-default broker resource, CreatePartitions with a
negative count, DescribeCluster v0/v1, OffsetForLeaderEpoch v2-v4 across a restart (two leader
epochs), and DeleteRecords through KafkaJS (admin.deleteTopicRecords): fetches below the new log
start get OFFSET_OUT_OF_RANGE, ListOffsets earliest moves, beyond the high watermark →
OFFSET_OUT_OF_RANGE and nothing changes on disk. Also: a Metadata request auto-creating a topic
does not hold up the other connections of its I/O thread."""
import json
import os
import struct
import subprocess
import threading
import time
import unittest

import itutil
from itutil import (BrokerTestCase, RawConn, array32, compact_array, compact_str, str16, uvarint,
                    unique_topic)

JS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "js")
API_DELETE_RECORDS, API_OFFSET_FOR_LEADER_EPOCH, API_DESCRIBE_CONFIGS = 21, 23, 32
API_ALTER_CONFIGS, API_CREATE_PARTITIONS, API_INCREMENTAL_ALTER_CONFIGS = 33, 37, 44
API_DESCRIBE_CLUSTER = 60
TOPIC, BROKER = 2, 4
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
TAGS = uvarint(0)


def incremental_alter(conn, version, resources, validate_only=False):
    """resources: [(type, name, [(key, op, value)])] → [(error, message, type, name)]."""
    if version == 0:
        body = array32([struct.pack(">b", t) + str16(n) + array32(
            [str16(k) + struct.pack(">b", op) + str16(v) for k, op, v in cfgs])
            for t, n, cfgs in resources]) + struct.pack(">?", validate_only)
        r = conn.request(API_INCREMENTAL_ALTER_CONFIGS, 0, body)
        r.i32()
        return r.array(lambda: (r.i16(), r.str16(), r.i8(), r.str16()))
    body = compact_array([struct.pack(">b", t) + compact_str(n) + compact_array(
        [compact_str(k) + struct.pack(">b", op) + compact_str(v) + TAGS for k, op, v in cfgs]) + TAGS
        for t, n, cfgs in resources]) + struct.pack(">?", validate_only) + TAGS
    r = conn.request(API_INCREMENTAL_ALTER_CONFIGS, 1, body, flexible=True)
    r.i32()
    return r.compact_array(lambda: (r.i16(), r.compact_str(), r.i8(), r.compact_str(), r.tagged())[:4])


def describe_v4(conn, rtype, name, keys=None, synonyms=False, docs=True):
    """→ (error, message, {name: dict(value, read_only, source, sensitive, synonyms, type, doc)})."""
    body = compact_array([struct.pack(">b", rtype) + compact_str(name) +
                          compact_array(None if keys is None else [compact_str(k) for k in keys]) +
                          TAGS]) + struct.pack(">??", synonyms, docs) + TAGS
    r = conn.request(API_DESCRIBE_CONFIGS, 4, body, flexible=True)
    r.i32()

    def config():
        e = dict(name=r.compact_str(), value=r.compact_str(), read_only=r.i8() != 0, source=r.i8(),
                 sensitive=r.i8() != 0)
        e["synonyms"] = r.compact_array(lambda: (r.compact_str(), r.compact_str(), r.i8(),
                                                 r.tagged())[:3])
        e["type"] = r.i8()
        e["doc"] = r.compact_str()
        r.tagged()
        return e

    def result():
        err, msg, _t, _n = r.i16(), r.compact_str(), r.i8(), r.compact_str()
        configs = r.compact_array(config)
        r.tagged()
        return err, msg, {c["name"]: c for c in configs}

    (res,) = r.compact_array(result)
    return res


def describe_v1_error(conn, rtype, name):
    body = array32([struct.pack(">b", rtype) + str16(name) + struct.pack(">i", -1)]) + b"\x00"
    r = conn.request(API_DESCRIBE_CONFIGS, 1, body)
    r.i32()
    r.i32()  # one result
    return r.i16(), r.str16()


def alter_v0(conn, rtype, name, configs, validate_only=False):
    body = array32([struct.pack(">b", rtype) + str16(name) +
                    array32([str16(k) + str16(v) for k, v in configs.items()])]) + \
        struct.pack(">?", validate_only)
    r = conn.request(API_ALTER_CONFIGS, 0, body)
    r.i32()
    return r.array(lambda: (r.i16(), r.str16(), r.i8(), r.str16()))[0][:2]


def create_partitions_v1(conn, topic, count):
    body = array32([str16(topic) + struct.pack(">ii", count, -1)]) + struct.pack(">i?", 10000, False)
    r = conn.request(API_CREATE_PARTITIONS, 1, body)
    r.i32()
    return r.array(lambda: (r.str16(), r.i16(), r.str16()))[0]


def offset_for_leader_epoch(conn, version, topic, parts):
    """parts: [(partition, current_leader_epoch, leader_epoch)] → [(err, partition, epoch, end)]."""
    if version < 4:
        body = struct.pack(">i", -1) if version >= 3 else b""
        body += array32([str16(topic) + array32([struct.pack(">iii", *p) for p in parts])])
        r = conn.request(API_OFFSET_FOR_LEADER_EPOCH, version, body)
        r.i32()
        (t,) = r.array(lambda: (r.str16(), r.array(lambda: (r.i16(), r.i32(), r.i32(), r.i64()))))
        return t[1]
    body = struct.pack(">i", -1) + compact_array(
        [compact_str(topic) + compact_array([struct.pack(">iii", *p) + TAGS for p in parts]) + TAGS])
    body += TAGS
    r = conn.request(API_OFFSET_FOR_LEADER_EPOCH, 4, body, flexible=True)
    r.i32()
    (t,) = r.compact_array(lambda: (r.compact_str(), r.compact_array(
        lambda: (r.i16(), r.i32(), r.i32(), r.i64(), r.tagged())[:4]), r.tagged())[:2])
    return t[1]


class AdminRawTest(BrokerTestCase):

    def conn(self):
        return RawConn(self.broker.port)

    def test_incremental_alter_configs(self):
        topic = unique_topic("inc")
        itutil.ck_create_topic(self.broker.bootstrap, topic, 1, {"retention.ms": "1000"})
        with self.conn() as c:
            for version in (0, 1):
                res = incremental_alter(c, version, [(TOPIC, topic, [
                    ("segment.bytes", SET, "2097152"), ("retention.ms", DELETE, None),
                    ("cleanup.policy", APPEND, "compact")])])
                self.assertEqual(res, [(0, None, TOPIC, topic)])
                err, _, cfg = describe_v4(c, TOPIC, topic)
                self.assertEqual(err, 0)
                self.assertEqual((cfg["segment.bytes"]["value"], cfg["segment.bytes"]["source"]),
                                 ("2097152", 1))
                self.assertEqual(cfg["retention.ms"]["source"], 5)
                self.assertEqual(cfg["cleanup.policy"]["value"], "delete,compact")
                res = incremental_alter(c, version, [(TOPIC, topic, [
                    ("cleanup.policy", SUBTRACT, "compact"), ("retention.ms", SET, "1000")])])
                self.assertEqual(res[0][0], 0)
            # validate_only changes nothing
            incremental_alter(c, 1, [(TOPIC, topic, [("retention.ms", SET, "2")])], validate_only=True)
            self.assertEqual(describe_v4(c, TOPIC, topic)[2]["retention.ms"]["value"], "1000")
            # Errors: unknown name / bad value → INVALID_CONFIG naming the key; APPEND on a
            # non-list key → INVALID_CONFIG; bad op / duplicate key → INVALID_REQUEST;
            # unknown topic → UNKNOWN_TOPIC_OR_PARTITION.
            cases = [([("bogus.key", SET, "1")], 40, "bogus.key"),
                     ([("retention.ms", SET, "abc")], 40, "retention.ms"),
                     ([("retention.ms", APPEND, "5")], 40, "retention.ms"),
                     ([("retention.ms", 9, "5")], 42, None),
                     ([("retention.ms", SET, "5"), ("retention.ms", DELETE, None)], 42, None)]
            for cfgs, code, key in cases:
                (err, msg, _, _), = incremental_alter(c, 1, [(TOPIC, topic, cfgs)])
                self.assertEqual(err, code, cfgs)
                if key:
                    self.assertIn(key, msg)
            (err, _, _, _), = incremental_alter(c, 0, [(TOPIC, unique_topic("no"), [
                ("retention.ms", SET, "5")])])
            self.assertEqual(err, 3)
            # An illegal topic name → INVALID_TOPIC_EXCEPTION (Kafka's Topic.validate), an empty
            # one → INVALID_REQUEST (no default topic resource), in both alter APIs; describing
            # either → INVALID_TOPIC_EXCEPTION.
            for name, code in (("bad/name", 17), ("..", 17), ("x" * 250, 17), ("", 42)):
                (err, msg, _, _), = incremental_alter(c, 1, [(TOPIC, name, [
                    ("retention.ms", SET, "5")])])
                self.assertEqual(err, code, name)
                self.assertTrue(msg, name)
                self.assertEqual(alter_v0(c, TOPIC, name, {"retention.ms": "5"})[0], code, name)
                self.assertEqual(describe_v1_error(c, TOPIC, name)[0], 17, name)
            self.assertEqual(describe_v4(c, TOPIC, topic)[2]["retention.ms"]["value"], "1000")
            # Broker resource: SET then DELETE of a dynamic per-broker key.
            res = incremental_alter(c, 1, [(BROKER, "1", [("log.roll.ms", SET, "3600000")])])
            self.assertEqual(res[0][0], 0)
            self.assertEqual(describe_v4(c, TOPIC, topic)[2]["segment.ms"]["value"], "3600000")
            res = incremental_alter(c, 1, [(BROKER, "1", [("log.roll.ms", DELETE, None)])])
            self.assertEqual(res[0][0], 0)
            self.assertEqual(describe_v4(c, TOPIC, topic)[2]["segment.ms"]["source"], 5)

    def test_describe_configs_v4_docs_types_synonyms(self):
        topic = unique_topic("doc")
        itutil.ck_create_topic(self.broker.bootstrap, topic, 1)
        with self.conn() as c:
            err, _, cfg = describe_v4(c, TOPIC, topic, synonyms=True)
            self.assertEqual(err, 0)
            self.assertEqual(cfg["retention.ms"]["type"], 5)  # LONG
            self.assertEqual(cfg["cleanup.policy"]["type"], 7)  # LIST
            self.assertTrue(cfg["retention.ms"]["doc"])
            self.assertEqual(cfg["retention.ms"]["synonyms"], [("log.retention.ms", "604800000", 5)])
            err, _, only = describe_v4(c, TOPIC, topic, keys=["segment.ms"], docs=False)
            self.assertEqual(list(only), ["segment.ms"])
            self.assertIsNone(only["segment.ms"]["doc"])
            self.assertEqual(describe_v1_error(c, BROKER, "7")[0], 42)
            self.assertEqual(describe_v1_error(c, TOPIC, unique_topic("none"))[0], 3)
            self.assertEqual(describe_v1_error(c, 99, "x")[0], 42)

    def test_cluster_default_broker_resource(self):
        topic = unique_topic("cd")
        itutil.ck_create_topic(self.broker.bootstrap, topic, 1)
        with self.conn() as c:
            self.assertEqual(alter_v0(c, BROKER, "", {"log.retention.bytes": "999999"}), (0, None))
            try:
                err, _, cfg = describe_v4(c, BROKER, "")
                self.assertEqual(err, 0)
                self.assertEqual({k: (v["value"], v["source"]) for k, v in cfg.items()},
                                 {"log.retention.bytes": ("999999", 3)})
                t = describe_v4(c, TOPIC, topic)[2]["retention.bytes"]
                self.assertEqual((t["value"], t["source"]), ("999999", 3))
                err, msg = alter_v0(c, BROKER, "", {"listeners": "PLAINTEXT://x:1"})
                self.assertEqual(err, 40)
                self.assertIn("listeners", msg)
            finally:
                self.assertEqual(alter_v0(c, BROKER, "", {}), (0, None))
            self.assertEqual(describe_v4(c, BROKER, "")[2], {})

    def test_create_partitions_negative_and_zero_counts(self):
        topic = unique_topic("neg")
        itutil.ck_create_topic(self.broker.bootstrap, topic, 2)
        with self.conn() as c:
            for count in (-3, 0, 1):
                name, err, msg = create_partitions_v1(c, topic, count)
                self.assertEqual((name, err), (topic, 37), count)  # INVALID_PARTITIONS
                self.assertIn("2 partitions", msg)
            self.assertEqual(create_partitions_v1(c, topic, 4)[1:], (0, None))
            self.assertEqual(sorted(itutil.metadata_v1(c, [topic])[topic][1]), [0, 1, 2, 3])

    def test_describe_cluster(self):
        with self.conn() as c:
            for version in (0, 1):
                body = struct.pack(">?", True) + (struct.pack(">b", 1) if version else b"") + TAGS
                r = c.request(API_DESCRIBE_CLUSTER, version, body, flexible=True)
                r.i32()
                self.assertEqual(r.i16(), 0)
                self.assertIsNone(r.compact_str())
                if version:
                    self.assertEqual(r.i8(), 1)
                cluster_id = r.compact_str()
                controller = r.i32()
                brokers = r.compact_array(lambda: (r.i32(), r.compact_str(), r.i32(),
                                                   r.compact_str(), r.tagged())[:4])
                ops = r.i32()
                self.assertEqual(len(cluster_id), 22)
                self.assertEqual(controller, 1)
                self.assertEqual(brokers, [(1, "127.0.0.1", self.broker.port, None)])
                self.assertTrue(ops & (1 << 10) and ops & (1 << 11))  # DESCRIBE/ALTER_CONFIGS
            # endpoint_type 2 (controllers) is not served by a broker
            r = c.request(API_DESCRIBE_CLUSTER, 1, struct.pack(">?b", False, 2) + TAGS, flexible=True)
            r.i32()
            self.assertEqual(r.i16(), 115)  # UNSUPPORTED_ENDPOINT_TYPE

    def test_delete_records_with_kafkajs(self):
        topic = unique_topic("delrec")
        env = dict(os.environ, NODE_PATH=os.path.join(JS_DIR, "node_modules"))
        p = subprocess.run(["node", os.path.join(JS_DIR, "delete_records.js"),
                            self.broker.bootstrap, topic],
                           capture_output=True, text=True, timeout=120, env=env)
        self.assertEqual(p.returncode, 0, "node failed:\n%s\n%s" % (p.stdout, p.stderr))
        line = [l for l in p.stdout.splitlines() if l.startswith("RESULT ")]
        res = json.loads(line[0][len("RESULT "):])
        self.assertEqual(res["before"], [{"partition": 0, "offset": "10", "high": "10", "low": "0"}])
        self.assertEqual(res["afterDelete"][0]["low"], "4")
        self.assertEqual(res["beyondError"]["inner"], ["OFFSET_OUT_OF_RANGE"], res["beyondError"])
        self.assertEqual(res["afterBeyond"][0]["low"], "4")
        lso_file = os.path.join(self.broker.data_dir, "logs", topic + "-0", "log-start-offset")
        with open(lso_file) as f:
            self.assertEqual(f.read(), "4\n")
        with self.conn() as c:
            self.assertEqual(itutil.fetch_v4(c, topic, 0, 2, 0)["error"], 1)  # OFFSET_OUT_OF_RANGE
            got = itutil.fetch_v4(c, topic, 0, 4, 0)
            self.assertEqual(got["error"], 0)
            self.assertTrue(got["records"])
            # DeleteRecords v0 raw: -1 = up to the high watermark; unknown partition.
            body = array32([str16(topic) + array32([struct.pack(">iq", 0, -1),
                                                    struct.pack(">iq", 5, 1)])]) + struct.pack(">i", 5000)
            r = c.request(API_DELETE_RECORDS, 0, body)
            r.i32()
            (t,) = r.array(lambda: (r.str16(), r.array(lambda: (r.i32(), r.i64(), r.i16()))))
            self.assertEqual(t[1], [(0, 10, 0), (5, -1, 3)])
        from confluent_kafka import TopicPartition
        cons = itutil.ck_consumer(self.broker.bootstrap)
        self.assertEqual(cons.get_watermark_offsets(TopicPartition(topic, 0), timeout=10), (10, 10))
        cons.close()

    def test_zz_offset_for_leader_epoch_across_restart(self):
        topic = unique_topic("ofle")
        b = self.broker.bootstrap
        itutil.ck_create_topic(b, topic, 1)
        itutil.ck_produce_all(itutil.ck_producer(b), [dict(topic=topic, partition=0, value=b"a")] * 5)
        with self.conn() as c:
            first = offset_for_leader_epoch(c, 2, topic, [(0, -1, 0)])
        self.broker.restart()
        b = self.broker.bootstrap
        itutil.ck_produce_all(itutil.ck_producer(b), [dict(topic=topic, partition=0, value=b"b")] * 3)
        with self.conn() as c:
            epoch = itutil.metadata_v10(c, [topic])[topic]["partitions"][0]
            self.assertEqual(first, [(0, 0, epoch - 1, 5)])
            for version in (2, 3, 4):
                got = offset_for_leader_epoch(c, version, topic, [
                    (0, -1, epoch - 1), (0, epoch, epoch), (0, -1, epoch + 5)])
                self.assertEqual(got, [(0, 0, epoch - 1, 5), (0, 0, epoch, 8), (0, 0, -1, -1)],
                                 version)
            got = offset_for_leader_epoch(c, 4, topic, [(0, epoch - 1, epoch), (0, epoch + 1, 0),
                                                        (7, -1, 0)])
            self.assertEqual([g[0] for g in got], [74, 75, 3])  # FENCED / UNKNOWN_LEADER_EPOCH



class AutoCreateOffTheIoThread(BrokerTestCase):
    """Metadata auto-creating a topic runs on the blocking pool: the one I/O thread (num.io.threads=1)
    keeps answering its other connections while the topic's partitions are created."""
    PARTITIONS = 400
    overrides = {"num.io.threads": "1", "num.partitions": str(PARTITIONS),
                 "auto.create.topics.enable": "true"}

    def test_other_connections_are_answered_while_a_topic_is_auto_created(self):
        topic = unique_topic("auto")
        first_dir = os.path.join(self.broker.data_dir, "logs", topic + "-0")
        done = {}
        with RawConn(self.broker.port) as creator, RawConn(self.broker.port) as other:
            self.assertEqual(itutil.api_versions(other, 3)[0], 0)  # connected, placed, served

            def create():
                t0 = time.monotonic()
                done["md"] = itutil.metadata_v10(creator, [topic], allow_auto_create=True)
                done["created_s"] = time.monotonic() - t0

            th = threading.Thread(target=create)
            th.start()
            deadline = time.monotonic() + 30
            while not os.path.exists(first_dir) and th.is_alive():  # the creation has begun
                self.assertLess(time.monotonic(), deadline)
                time.sleep(0.001)
            self.assertTrue(os.path.exists(first_dir), first_dir)
            t1 = time.monotonic()
            self.assertEqual(itutil.api_versions(other, 3)[0], 0)
            other_s = time.monotonic() - t1
            th.join(60)
            self.assertFalse(th.is_alive())
        self.assertEqual(done["md"][topic]["error"], 0)
        self.assertEqual(len(done["md"][topic]["partitions"]), self.PARTITIONS)
        # Sent once the first of 400 partitions existed: before, it waited for the rest of the
        # creation on the one I/O thread (≈ all of it); now it is answered at once.
        self.assertLess(other_s, done["created_s"] / 4,
                        "the other connection waited for the auto-creation")


if __name__ == "__main__":
    unittest.main()
