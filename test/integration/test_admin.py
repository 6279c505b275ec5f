"""Issue 4 (admin half) with real clients: topics created with configs, DescribeConfigs (every
entry, correct sources, read-only flags), AlterConfigs and CreatePartitions with confluent-kafka 1.7
(librdkafka 2.0.2) and kafka-python 2.0.2, dynamic broker defaults, bad input (invalid names and
values, shrinking/negative partition counts) with Java's error codes and nothing changed on disk,
and durability across a restart."""
import os
import unittest

import itutil
from itutil import BrokerTestCase, unique_topic

TOPIC_KEYS = {"cleanup.policy", "compression.type", "flush.messages", "flush.ms",
              "index.interval.bytes", "max.message.bytes", "message.timestamp.type",
              "retention.bytes", "retention.ms", "segment.bytes", "segment.index.bytes", "segment.ms"}
# Kafka's ConfigSource ids.
DYNAMIC_TOPIC, DYNAMIC_BROKER, STATIC_BROKER, DEFAULT = 1, 2, 4, 5


def ck_describe(admin, restype, name):
    from confluent_kafka.admin import ConfigResource
    res = ConfigResource(restype, name)
    return admin.describe_configs([res])[res].result(30)


def ck_alter(admin, restype, name, configs, validate_only=False):
    from confluent_kafka.admin import ConfigResource
    res = ConfigResource(restype, name, set_config=configs)
    return admin.alter_configs([res], validate_only=validate_only)[res].result(30)


def kafka_error_code(exc):
    from confluent_kafka import KafkaException
    assert isinstance(exc, KafkaException), repr(exc)
    return exc.args[0].code()


class AdminTest(BrokerTestCase):
    overrides = {"log.retention.bytes": "123456789"}

    def bootstrap(self):
        return self.broker.bootstrap

    def partition_dirs(self, topic):
        d = os.path.join(self.broker.data_dir, "logs")
        return sorted(x for x in os.listdir(d) if x.rsplit("-", 1)[0] == topic)

    # ------------------------------------------------------------- DescribeConfigs

    def test_describe_topic_configs_all_entries_and_sources(self):
        b = self.bootstrap()
        topic = unique_topic("cfg")
        itutil.ck_create_topic(b, topic, 2, {"retention.ms": "12345", "cleanup.policy": "compact"})
        entries = ck_describe(itutil.ck_admin(b), "topic", topic)
        self.assertTrue(TOPIC_KEYS <= set(entries), set(entries))
        self.assertEqual(entries["retention.ms"].value, "12345")
        self.assertEqual(int(entries["retention.ms"].source), DYNAMIC_TOPIC)
        self.assertEqual(entries["cleanup.policy"].value, "compact")
        self.assertEqual(int(entries["segment.bytes"].source), DEFAULT)
        self.assertEqual(entries["segment.bytes"].value, "1073741824")
        # Inherited from a broker key set by --override: log.retention.bytes → retention.bytes.
        self.assertEqual(entries["retention.bytes"].value, "123456789")
        self.assertEqual(int(entries["retention.bytes"].source), STATIC_BROKER)
        for e in entries.values():
            self.assertFalse(e.is_sensitive)

    def test_describe_broker_configs(self):
        b = self.bootstrap()
        entries = ck_describe(itutil.ck_admin(b), "broker", "1")
        self.assertEqual(int(entries["log.dirs"].source), STATIC_BROKER)
        self.assertTrue(entries["log.dirs"].is_read_only)
        self.assertEqual(int(entries["log.retention.bytes"].source), STATIC_BROKER)
        self.assertEqual(entries["log.retention.bytes"].value, "123456789")
        self.assertEqual(int(entries["log.segment.bytes"].source), DEFAULT)
        self.assertFalse(entries["log.segment.bytes"].is_read_only)
        self.assertIn("num.partitions", entries)

    def test_kafka_python_describe_and_alter(self):
        from kafka import KafkaAdminClient
        from kafka.admin import ConfigResource, ConfigResourceType
        b = self.bootstrap()
        topic = unique_topic("kp")
        itutil.ck_create_topic(b, topic, 1, {"segment.bytes": "1048576"})
        admin = KafkaAdminClient(bootstrap_servers=b, client_id="strata-it-kp")
        try:
            resp = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)],
                                          include_synonyms=True)
            (err, _msg, _rtype, name, entries), = resp[0].resources
            self.assertEqual((err, name), (0, topic))
            by_name = {e[0]: e for e in entries}
            self.assertTrue(TOPIC_KEYS <= set(by_name))
            seg = by_name["segment.bytes"]  # (name, value, read_only, source, sensitive, synonyms)
            self.assertEqual((seg[1], seg[3]), ("1048576", DYNAMIC_TOPIC))
            self.assertEqual([s[0] for s in seg[5]], ["segment.bytes", "log.segment.bytes"])
            self.assertEqual([s[2] for s in seg[5]], [DYNAMIC_TOPIC, DEFAULT])

            resp = admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic,
                                                       configs={"retention.ms": "4242"})])
            self.assertEqual([r[0] for r in resp.resources], [0])
            resp = admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic,
                                                       configs={"retention.ms": "x"})])
            self.assertEqual([r[0] for r in resp.resources], [40])  # INVALID_CONFIG
            self.assertIn("retention.ms", resp.resources[0][1])

            from kafka.admin import NewPartitions
            import kafka.errors as kerr
            admin.create_partitions({topic: NewPartitions(total_count=3)})
            with self.assertRaises(kerr.InvalidPartitionsError):
                admin.create_partitions({topic: NewPartitions(total_count=2)})
        finally:
            admin.close()
        entries = ck_describe(itutil.ck_admin(b), "topic", topic)
        # AlterConfigs replaces the whole override set: segment.bytes went back to its default.
        self.assertEqual(entries["retention.ms"].value, "4242")
        self.assertEqual(int(entries["segment.bytes"].source), DEFAULT)
        self.assertEqual(len(self.partition_dirs(topic)), 3)

    # ------------------------------------------------------------- AlterConfigs

    def test_alter_topic_config_takes_effect_without_restart(self):
        from confluent_kafka import KafkaError
        b = self.bootstrap()
        topic = unique_topic("alt")
        itutil.ck_create_topic(b, topic, 1)
        admin = itutil.ck_admin(b)
        # validate_only changes nothing.
        ck_alter(admin, "topic", topic, {"max.message.bytes": "300"}, validate_only=True)
        self.assertEqual(int(ck_describe(admin, "topic", topic)["max.message.bytes"].source), DEFAULT)
        p = itutil.ck_producer(b)
        itutil.ck_produce_all(p, [dict(topic=topic, value=b"x" * 1000)])
        ck_alter(admin, "topic", topic, {"max.message.bytes": "300"})
        entries = ck_describe(admin, "topic", topic)
        self.assertEqual(entries["max.message.bytes"].value, "300")
        self.assertEqual(int(entries["max.message.bytes"].source), DYNAMIC_TOPIC)
        errs = []
        p2 = itutil.ck_producer(b)
        p2.produce(topic, value=b"y" * 1000, on_delivery=lambda err, msg: errs.append(err))
        p2.flush(30)
        self.assertEqual(len(errs), 1)
        self.assertIsNotNone(errs[0])
        self.assertEqual(errs[0].code(), KafkaError.MSG_SIZE_TOO_LARGE)

    def test_bad_configs_are_invalid_config_and_change_nothing(self):
        b = self.bootstrap()
        topic = unique_topic("bad")
        itutil.ck_create_topic(b, topic, 1, {"retention.ms": "777"})
        admin = itutil.ck_admin(b)
        meta_dir = os.path.join(self.broker.data_dir, "logs", "__strata_topics")
        before = {f: open(os.path.join(meta_dir, f), "rb").read() for f in os.listdir(meta_dir)}
        for configs, key in (({"no.such.config": "1"}, "no.such.config"),
                             ({"retention.ms": "soon"}, "retention.ms"),
                             ({"cleanup.policy": "shred"}, "cleanup.policy"),
                             ({"segment.bytes": "1"}, "segment.bytes")):
            with self.assertRaises(Exception) as cm:
                ck_alter(admin, "topic", topic, configs)
            self.assertEqual(kafka_error_code(cm.exception), 40, configs)  # INVALID_CONFIG
            self.assertIn(key, str(cm.exception))
        with self.assertRaises(Exception) as cm:
            ck_alter(admin, "topic", unique_topic("missing"), {"retention.ms": "1"})
        self.assertEqual(kafka_error_code(cm.exception), 3)  # UNKNOWN_TOPIC_OR_PARTITION
        after = {f: open(os.path.join(meta_dir, f), "rb").read() for f in os.listdir(meta_dir)}
        self.assertEqual(before, after)
        self.assertEqual(ck_describe(admin, "topic", topic)["retention.ms"].value, "777")

    def test_segment_bytes_below_the_floor_is_invalid_config_and_broker_serves(self):
        """log.segment.bytes.min (default 1 MiB, Kafka 4.0's floor): a smaller segment.bytes in
        CreateTopics, AlterConfigs or IncrementalAlterConfigs (or log.segment.bytes on the broker)
        gets INVALID_CONFIG naming the floor; nothing is created or changed, the broker serves."""
        from confluent_kafka.admin import NewTopic
        from test_admin_raw import BROKER, SET, TOPIC, incremental_alter
        b = self.bootstrap()
        admin = itutil.ck_admin(b)
        topic = unique_topic("floor")
        fs = admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1,
                                           config={"segment.bytes": "14"})], request_timeout=30)
        with self.assertRaises(Exception) as cm:
            fs[topic].result(30)
        self.assertEqual(kafka_error_code(cm.exception), 40)  # INVALID_CONFIG
        self.assertIn("log.segment.bytes.min", str(cm.exception))
        self.assertEqual(self.partition_dirs(topic), [])
        itutil.ck_create_topic(b, topic, 2, {"segment.bytes": "1048576"})  # at the floor: fine
        with self.assertRaises(Exception) as cm:
            ck_alter(admin, "topic", topic, {"segment.bytes": "65536"})
        self.assertEqual(kafka_error_code(cm.exception), 40)
        self.assertIn("segment.bytes", str(cm.exception))
        with itutil.RawConn(self.broker.port) as c:
            (err, msg, _, _), = incremental_alter(c, 1, [(TOPIC, topic, [
                ("segment.bytes", SET, "1048575")])])
            self.assertEqual(err, 40, msg)
            self.assertIn("log.segment.bytes.min", msg)
            (err, msg, _, _), = incremental_alter(c, 1, [(BROKER, "1", [
                ("log.segment.bytes", SET, "4096")])])
            self.assertEqual(err, 40, msg)
            self.assertIn("log.segment.bytes.min", msg)
        self.assertEqual(ck_describe(admin, "topic", topic)["segment.bytes"].value, "1048576")
        self.assertEqual(ck_describe(admin, "broker", "1")["log.segment.bytes"].value,
                         "1073741824")
        p = itutil.ck_producer(b)
        itutil.ck_produce_all(p, [{"topic": topic, "partition": i % 2, "value": b"v%d" % i}
                                  for i in range(10)])
        self.assertEqual(len(itutil.ck_consume(b, topic, [0, 1], 10)), 10)

    def test_kafka3_deprecated_topic_configs_accepted_stored_and_described(self):
        # message.format.version / message.downconversion.enable: Kafka 3.x accepted them as
        # deprecated; Strata stores and reports them but ignores them (docs/admin.md).
        from test_admin_raw import SET, TOPIC, incremental_alter
        b = self.bootstrap()
        admin = itutil.ck_admin(b)
        topic = unique_topic("dep")
        warned = sum("deprecated topic config" in line for line in self.broker.log_lines)
        itutil.ck_create_topic(b, topic, 1, {"message.format.version": "0.10.2",
                                             "message.downconversion.enable": "false"})
        entries = ck_describe(admin, "topic", topic)
        self.assertEqual(entries["message.format.version"].value, "0.10.2")
        self.assertEqual(int(entries["message.format.version"].source), DYNAMIC_TOPIC)
        self.assertEqual(entries["message.downconversion.enable"].value, "false")
        self.assertEqual(int(entries["message.downconversion.enable"].source), DYNAMIC_TOPIC)
        # One warning for the request, naming both keys.
        itutil.harness.wait_until(
            lambda: sum("deprecated topic config" in line
                        for line in self.broker.log_lines) == warned + 1, timeout=5,
            what="one deprecation warning")
        line = [x for x in self.broker.log_lines if "deprecated topic config" in x][-1]
        self.assertIn("message.format.version=0.10.2", line)
        self.assertIn("message.downconversion.enable=false", line)
        # Topics that do not set them list them with Kafka 3.x's defaults.
        plain = unique_topic("dep")
        itutil.ck_create_topic(b, plain, 1)
        entries = ck_describe(admin, "topic", plain)
        self.assertEqual(entries["message.format.version"].value, "3.0-IV1")
        self.assertEqual(int(entries["message.format.version"].source), DEFAULT)
        self.assertEqual(entries["message.downconversion.enable"].value, "true")
        self.assertEqual(int(entries["message.downconversion.enable"].source), DEFAULT)
        # AlterConfigs (legacy: replaces the whole set) and IncrementalAlterConfigs SET.
        ck_alter(admin, "topic", plain, {"message.format.version": "2.8"})
        self.assertEqual(ck_describe(admin, "topic", plain)["message.format.version"].value, "2.8")
        with itutil.RawConn(self.broker.port) as conn:
            res = incremental_alter(conn, 1, [(TOPIC, plain, [
                ("message.downconversion.enable", SET, "false")])])
            self.assertEqual(res[0][0], 0, res)
            entries = ck_describe(admin, "topic", plain)
            self.assertEqual(entries["message.downconversion.enable"].value, "false")
            self.assertEqual(int(entries["message.downconversion.enable"].source), DYNAMIC_TOPIC)
            self.assertEqual(entries["message.format.version"].value, "2.8")
            # Values are still validated as 3.x did.
            res = incremental_alter(conn, 1, [(TOPIC, plain, [
                ("message.format.version", SET, "banana")])])
            self.assertEqual(res[0][0], 40, res)  # INVALID_CONFIG
            self.assertIn("message.format.version", res[0][1])
        with self.assertRaises(Exception) as cm:
            itutil.ck_create_topic(b, unique_topic("dep"), 1,
                                   {"message.downconversion.enable": "maybe"})
        self.assertEqual(kafka_error_code(cm.exception), 40)
        # Ignored: the topic with the deprecated keys works as any other.
        p = itutil.ck_producer(b)
        itutil.ck_produce_all(p, [dict(topic=topic, value=b"v%d" % i) for i in range(3)])
        got = itutil.ck_consume(b, topic, [0], 3)
        self.assertEqual([m.value() for m in got], [b"v0", b"v1", b"v2"])

    def test_dynamic_broker_default_reaches_topics(self):
        b = self.bootstrap()
        topic = unique_topic("dyn")
        itutil.ck_create_topic(b, topic, 1)
        admin = itutil.ck_admin(b)
        ck_alter(admin, "broker", "1", {"log.retention.ms": "5555000"})
        try:
            entries = ck_describe(admin, "broker", "1")
            self.assertEqual(entries["log.retention.ms"].value, "5555000")
            self.assertEqual(int(entries["log.retention.ms"].source), DYNAMIC_BROKER)
            t = ck_describe(admin, "topic", topic)
            self.assertEqual(t["retention.ms"].value, "5555000")
            self.assertEqual(int(t["retention.ms"].source), DYNAMIC_BROKER)
            self.assertTrue(os.path.exists(os.path.join(self.broker.data_dir, "logs",
                                                        "dynamic-broker-configs")))
            with self.assertRaises(Exception) as cm:
                ck_alter(admin, "broker", "1", {"log.dirs": "/tmp/elsewhere"})
            self.assertEqual(kafka_error_code(cm.exception), 40)
        finally:
            ck_alter(admin, "broker", "1", {})  # back to static/default
        self.assertEqual(int(ck_describe(admin, "topic", topic)["retention.ms"].source), DEFAULT)

    # ------------------------------------------------------------- CreatePartitions

    def test_create_partitions_grows_topic_and_producers_use_new_partitions(self):
        from confluent_kafka.admin import NewPartitions
        from confluent_kafka import TopicPartition
        b = self.bootstrap()
        topic = unique_topic("grow")
        itutil.ck_create_topic(b, topic, 1)
        admin = itutil.ck_admin(b)
        admin.create_partitions([NewPartitions(topic, 3)], validate_only=True)[topic].result(30)
        self.assertEqual(len(self.partition_dirs(topic)), 1)
        admin.create_partitions([NewPartitions(topic, 3)])[topic].result(30)
        self.assertEqual(len(self.partition_dirs(topic)), 3)
        md = admin.list_topics(topic, timeout=10).topics[topic]
        self.assertEqual(sorted(md.partitions), [0, 1, 2])
        p = itutil.ck_producer(b)
        msgs = itutil.ck_produce_all(p, [dict(topic=topic, key=b"k%d" % i, value=b"v%d" % i)
                                         for i in range(60)])
        used = {m.partition() for m in msgs}
        self.assertEqual(used, {0, 1, 2})
        c = itutil.ck_consumer(b)
        lo, hi = c.get_watermark_offsets(TopicPartition(topic, 2), timeout=10)
        self.assertEqual(lo, 0)
        self.assertGreater(hi, 0)
        c.close()

    def test_create_partitions_bad_input(self):
        from confluent_kafka.admin import NewPartitions
        b = self.bootstrap()
        topic = unique_topic("shrink")
        itutil.ck_create_topic(b, topic, 3)
        admin = itutil.ck_admin(b)
        # (negative counts are refused by librdkafka itself; test_admin_raw.py sends them)
        for count in (2, 3):
            with self.assertRaises(Exception) as cm:
                admin.create_partitions([NewPartitions(topic, count)])[topic].result(30)
            self.assertEqual(kafka_error_code(cm.exception), 37, count)  # INVALID_PARTITIONS
        missing = unique_topic("missing")
        with self.assertRaises(Exception) as cm:
            admin.create_partitions([NewPartitions(missing, 4)])[missing].result(30)
        self.assertEqual(kafka_error_code(cm.exception), 3)
        with self.assertRaises(Exception) as cm:
            admin.create_partitions([NewPartitions(topic, 5, replica_assignment=[[1], [2]])])[
                topic].result(30)
        self.assertEqual(kafka_error_code(cm.exception), 39)  # INVALID_REPLICA_ASSIGNMENT
        self.assertEqual(len(self.partition_dirs(topic)), 3)

    # ------------------------------------------------------------- durability

    def test_zz_changes_survive_restart(self):
        from confluent_kafka.admin import NewPartitions
        b = self.bootstrap()
        topic = unique_topic("dur")
        itutil.ck_create_topic(b, topic, 1)
        admin = itutil.ck_admin(b)
        ck_alter(admin, "topic", topic, {"retention.ms": "31337"})
        admin.create_partitions([NewPartitions(topic, 2)])[topic].result(30)
        ck_alter(admin, "broker", "1", {"log.segment.bytes": "2097152"})
        self.broker.restart(clean=False)
        b = self.bootstrap()
        admin = itutil.ck_admin(b)
        entries = ck_describe(admin, "topic", topic)
        self.assertEqual(entries["retention.ms"].value, "31337")
        self.assertEqual(entries["segment.bytes"].value, "2097152")
        self.assertEqual(int(entries["segment.bytes"].source), DYNAMIC_BROKER)
        self.assertEqual(sorted(admin.list_topics(topic, timeout=10).topics[topic].partitions),
                         [0, 1])


if __name__ == "__main__":
    unittest.main()
