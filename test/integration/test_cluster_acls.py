"""ACLs in cluster mode (docs/security.md): 3 brokers + etcd. An ACL created through one broker is
enforced by the others (each keeps its store in step with etcd through a watch), a deletion
through a third lifts it everywhere, and a restarted broker reads them back from etcd.

allow.everyone.if.no.acl.found=true keeps the brokers' own connections (replica fetches as
User:ANONYMOUS, CLUSTER_ACTION on a cluster no ACL names) working; the test's DENY on one topic
is what it checks.
"""
import unittest

import harness
from cluster_clients import ClusterClientCase, admin
from cluster_harness import Cluster, Etcd
from itutil import RawConn, metadata_v1, unique_topic
from acl_frames import acl_creations, kp_call
from test_acls import NONE, TOPIC_AUTH
from confluent_kafka.admin import NewTopic
from kafka.protocol.admin import DeleteAclsRequest, DescribeAclsRequest

DENY_ALL = lambda topic: (2, topic, 3, "User:ANONYMOUS", "*", 2, 2)  # noqa: E731


class ClusterAclTest(ClusterClientCase):
    def setUp(self):
        super().setUp()
        self.etcd = self.track(Etcd().start())
        self.cluster = self.track(Cluster(3, self.etcd.endpoint, {
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "allow.everyone.if.no.acl.found": "true"}))
        self.cluster.start().wait_ready()

    def conn(self, node):
        c = RawConn(self.cluster.broker(node).port)
        self.addCleanup(c.close)
        return c

    def metadata_error(self, node, topic):
        return metadata_v1(self.conn(node), [topic])[topic][0]

    def test_acl_created_on_one_broker_is_enforced_by_another(self):
        topic = unique_topic("acl-cl")
        a = admin(self.cluster.bootstrap())  # kept alive until the creation answered
        a.create_topics([NewTopic(topic, num_partitions=1, replication_factor=3)])[topic].result(30)
        harness.wait_until(lambda: self.metadata_error(2, topic) == NONE, 30,
                           what="topic visible on broker 2")
        self.assertEqual(acl_creations(self.conn(1), [DENY_ALL(topic)]), [NONE])
        self.assertEqual(self.metadata_error(1, topic), TOPIC_AUTH, "read-your-writes on broker 1")
        # Other brokers learn ACLs through their etcd watch: eventually, like Kafka's
        # ZooKeeper/KRaft propagation, so every later check on them waits first.
        for node in (2, 3):
            harness.wait_until(lambda: self.metadata_error(node, topic) == TOPIC_AUTH, 10,
                               what=f"broker {node} enforcing the ACL created through broker 1")
        resp = kp_call(self.conn(3), DescribeAclsRequest[1](2, topic, 3, None, None, 1, 1))
        self.assertEqual(resp.error_code, NONE)
        self.assertEqual([(r[1], len(r[3])) for r in resp.resources], [(topic, 1)])
        # A restarted broker reads the ACLs from etcd.
        self.cluster.stop(2)
        self.cluster.start(2)
        self.cluster.wait_ready([2])
        self.assertEqual(self.metadata_error(2, topic), TOPIC_AUTH)
        # Deleted through broker 3: lifted on broker 1 too.
        resp = kp_call(self.conn(3), DeleteAclsRequest[1]([(2, topic, 3, None, None, 1, 1)]))
        self.assertEqual(resp.filter_responses[0][0], NONE)
        self.assertEqual(len(resp.filter_responses[0][2]), 1)
        harness.wait_until(lambda: self.metadata_error(1, topic) == NONE, 10,
                           what="broker 1 lifting the deleted ACL")


if __name__ == "__main__":
    unittest.main()
