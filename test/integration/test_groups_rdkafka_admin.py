"""OffsetDelete and DeleteGroups through librdkafka's C admin API (rd_kafka_DeleteConsumerGroupOffsets,
rd_kafka_DeleteGroups), via the small rdkafka_group_admin program; kafka-python commits the offsets
and checks what is left."""
import os
import subprocess
import sys
import unittest

import itutil

TOOL = os.environ.get("STRATA_RDKAFKA_GROUP_ADMIN",
                      os.path.join(itutil.harness.ROOT, "build", "test", "integration",
                                   "rdkafka_group_admin"))


def admin(bootstrap, *args):
    out = subprocess.run([TOOL, bootstrap] + [str(a) for a in args], capture_output=True, text=True,
                         timeout=60)
    if out.returncode != 0:
        raise AssertionError("rdkafka_group_admin failed: " + out.stderr)
    return out.stdout.split("\n")


class GroupsRdkafkaAdminTest(itutil.BrokerTestCase):
    overrides = {"group.initial.rebalance.delay.ms": 0}

    def test_delete_offsets_then_group(self):
        from kafka import KafkaConsumer, TopicPartition
        from kafka.structs import OffsetAndMetadata
        bs = self.broker.bootstrap
        topic, group = itutil.unique_topic("rk-admin"), itutil.unique_topic("rk-g")
        itutil.ck_create_topic(bs, topic, partitions=2)
        c = KafkaConsumer(bootstrap_servers=bs, group_id=group, enable_auto_commit=False,
                          api_version_auto_timeout_ms=10000)
        tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
        c.assign([tp0, tp1])
        c.commit({tp0: OffsetAndMetadata(5, "m0"), tp1: OffsetAndMetadata(7, "m1")})
        c.close()

        lines = admin(bs, "delete-offsets", group, topic, 0)
        self.assertIn("group NO_ERROR", lines)
        self.assertIn("%s 0 NO_ERROR" % topic, lines)

        c = KafkaConsumer(bootstrap_servers=bs, group_id=group, enable_auto_commit=False,
                          api_version_auto_timeout_ms=10000)
        self.assertIsNone(c.committed(tp0))
        self.assertEqual(c.committed(tp1), 7)
        c.close()

        self.assertIn("group NO_ERROR", admin(bs, "delete-group", group))
        # The group and its remaining offsets are gone; deleting again names the Java error.
        self.assertIn("group GROUP_ID_NOT_FOUND", admin(bs, "delete-group", group))
        c = KafkaConsumer(bootstrap_servers=bs, group_id=group, enable_auto_commit=False,
                          api_version_auto_timeout_ms=10000)
        self.assertIsNone(c.committed(tp1))
        c.close()
        self.assertBrokerAlive()


if __name__ == "__main__":
    unittest.main(verbosity=2)
