"""ACL authorization end to end (docs/security.md), against a real broker with
authorizer.class.name set:

- administration through kafka-python's KafkaAdminClient (create_acls / describe_acls /
  delete_acls), KafkaJS's admin (createAcls / describeAcls / deleteAcls) and `strata acl`;
- administration through librdkafka's C admin API (rd_kafka_CreateAcls / DescribeAcls /
  DeleteAcls, via the small rdkafka_acl_admin program) as a SASL super user;
- a matrix, for every principal in PRINCIPALS (User:ANONYMOUS on the plaintext listener, and
  User:bob authenticated with SASL PLAIN on the SASL_PLAINTEXT listener), of each API with and without the permission Kafka's broker checks: data or the right error
  code, and nothing leaking through Metadata, ListGroups or the extension APIs;
- DENY wins, ACLs survive a restart, super.users, allow.everyone.if.no.acl.found, SECURITY_DISABLED
  without an authorizer, the denial counter.

Who is who: the administrator is User:ANONYMOUS on the plaintext listener, told apart from the
probed ANONYMOUS by host, as Kafka's ACLs allow: the administrator's ACLs name host 127.0.0.1
(kafka-python, KafkaJS and the CLI connect from there), probes connect from 127.0.0.2 (a source
address on the loopback) and only ever get the ACLs a case grants them. User:bob's probes
authenticate first; User:admin (SASL) is the super user.
"""
import collections
import json
import os
import subprocess
import time
import unittest

import harness
import itutil
from itutil import BrokerTestCase, RawConn, build_batch, unique_topic
from acl_frames import (SourceConn, acl_creations, alter_client_quotas, delete_records,
                        describe_client_quotas, elect_leaders, incremental_alter_configs,
                        init_producer_id, kp_call, list_reassignments, offset_delete,
                        offset_for_leader_epoch, replica_fetch, sasl_plain)
from test_metrics import Scrape
from test_pk_tables import describe_table, lookup, one, pb_int, pb_len, pb_parse, prefix_lookup
from test_pk_reads import read_changelog, scan

from kafka.admin import KafkaAdminClient
from kafka.admin.acl_resource import (ACL, ACLFilter, ACLOperation, ACLPermissionType,
                                      ACLResourcePatternType, ResourcePattern,
                                      ResourcePatternFilter, ResourceType)
from kafka.protocol.admin import (AlterConfigsRequest, CreateAclsRequest, CreatePartitionsRequest,
                                  CreateTopicsRequest, DeleteAclsRequest, DeleteGroupsRequest,
                                  DeleteTopicsRequest,
                                  DescribeAclsRequest, DescribeConfigsRequest,
                                  DescribeGroupsRequest, ListGroupsRequest)
from kafka.protocol.commit import GroupCoordinatorRequest, OffsetCommitRequest, OffsetFetchRequest
from kafka.protocol.group import (HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest,
                                  SyncGroupRequest)
from kafka.protocol.offset import OffsetRequest

CLI = os.environ.get("STRATA_CLI") or os.path.join(harness.ROOT, "build", "tools", "cli", "strata")
JS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "js")

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
LEADER_NOT_AVAILABLE = 5
UNKNOWN_MEMBER_ID = 25
TOPIC_AUTH = 29
GROUP_AUTH = 30
CLUSTER_AUTH = 31
INVALID_REQUEST = 42
TXN_AUTH = 53
SECURITY_DISABLED = 54
GROUP_ID_NOT_FOUND = 69
ELECTION_NOT_NEEDED = 84

ADMIN_HOST = "127.0.0.1"
Principal = collections.namedtuple("Principal", "name host sasl", defaults=(None,))
# The principals the matrix runs for, with the source address their probe connections use and,
# for SASL users, (user, password) to authenticate with on the SASL_PLAINTEXT listener.
PRINCIPALS = [Principal("User:ANONYMOUS", "127.0.0.2"),
              Principal("User:bob", "127.0.0.2", ("bob", "bob-secret"))]

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'user_admin="admin-secret" user_bob="bob-secret";')
ADMIN_OVERRIDES = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                   "super.users": "User:admin", "group.initial.rebalance.delay.ms": "0",
                   "auto.create.topics.enable": "true",
                   "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                   "sasl.enabled.mechanisms": "PLAIN", "sasl.jaas.config": JAAS}


# ---------------------------------------------------------------- administration

def kp_admin(bootstrap):
    return KafkaAdminClient(bootstrap_servers=bootstrap, client_id="strata-it-acl-admin",
                            request_timeout_ms=15000, api_version_auto_timeout_ms=15000)


def kp_acl(principal, host, op, perm, rtype, name, pattern=ACLResourcePatternType.LITERAL):
    return ACL(principal, host, op, perm, ResourcePattern(rtype, name, pattern))


KP_TYPES = {"topic": ResourceType.TOPIC, "group": ResourceType.GROUP,
            "cluster": ResourceType.CLUSTER, "txn": ResourceType.TRANSACTIONAL_ID}
KP_OPS = {"READ": ACLOperation.READ, "WRITE": ACLOperation.WRITE, "CREATE": ACLOperation.CREATE,
          "DELETE": ACLOperation.DELETE, "ALTER": ACLOperation.ALTER,
          "DESCRIBE": ACLOperation.DESCRIBE, "CLUSTER_ACTION": ACLOperation.CLUSTER_ACTION,
          "DESCRIBE_CONFIGS": ACLOperation.DESCRIBE_CONFIGS,
          "ALTER_CONFIGS": ACLOperation.ALTER_CONFIGS,
          "IDEMPOTENT_WRITE": ACLOperation.IDEMPOTENT_WRITE, "ALL": ACLOperation.ALL}


def bootstrap_admin(broker):
    """Starts `broker` with User:ANONYMOUS as a super user, grants the administrator (ANONYMOUS from
    127.0.0.1) everything through kafka-python, then restarts it without: the administrator's ACLs
    are what lets the rest of the test administer (and they prove ACLs survive a restart)."""
    broker.overrides["super.users"] = "User:ANONYMOUS"
    broker.start()
    admin = kp_admin(broker.bootstrap)
    try:
        acls = [kp_acl("User:ANONYMOUS", ADMIN_HOST, ACLOperation.ALL, ACLPermissionType.ALLOW,
                       rtype, "kafka-cluster" if rtype == ResourceType.CLUSTER else "*")
                for rtype in (ResourceType.CLUSTER, ResourceType.TOPIC, ResourceType.GROUP,
                              ResourceType.TRANSACTIONAL_ID)]
        result = admin.create_acls(acls)
        assert not result["failed"], result
    finally:
        admin.close()
    broker.stop()
    broker.overrides["super.users"] = "User:admin"
    broker.start()


class AclTestBase(BrokerTestCase):
    @classmethod
    def setUpClass(cls):
        cls.broker = harness.BrokerProcess(overrides=dict(ADMIN_OVERRIDES))
        bootstrap_admin(cls.broker)
        cls.admin = kp_admin(cls.broker.bootstrap)

    @classmethod
    def tearDownClass(cls):
        cls.admin.close()
        super().tearDownClass()

    def probe(self, principal):
        port = self.broker.ports["SASL_PLAINTEXT"] if principal.sasl else self.broker.port
        c = SourceConn(port, principal.host)
        self.addCleanup(c.close)
        if principal.sasl:
            self.assertEqual(sasl_plain(c, *principal.sasl), NONE)
        return c

    def grant(self, principal, grants, perm=ACLPermissionType.ALLOW, cleanup=True):
        """grants: [(op, type, name[, pattern])] for `principal` from its host, removed at cleanup
        (or by revoke() on what this returns)."""
        acls = [kp_acl(principal.name, principal.host, KP_OPS[g[0]], perm, KP_TYPES[g[1]],
                       "kafka-cluster" if g[1] == "cluster" else g[2],
                       g[3] if len(g) > 3 else ACLResourcePatternType.LITERAL) for g in grants]
        if not acls:
            return []
        result = self.admin.create_acls(acls)
        self.assertFalse(result["failed"], result)
        filters = [ACLFilter(a.principal, a.host, a.operation, a.permission_type,
                             a.resource_pattern) for a in acls]
        if cleanup:
            self.addCleanup(self.revoke, filters)
        return filters

    def revoke(self, filters):
        if filters:
            for _, matched, err in self.admin.delete_acls(filters):
                self.assertEqual(err.errno, 0)

    def create_topic(self, topic, partitions=1, config=None):
        itutil.ck_create_topic(self.broker.bootstrap, topic, partitions, config)


# ---------------------------------------------------------------- the matrix
# Each case: (name, grants that make it pass, probe(test, conn, names) -> observed code(s),
# expected code when allowed, expected code when not). {t} = a topic, {g} = a group, {x} = a
# fresh name; probes run from the principal's host.

def probe_produce(tc, c, n):
    return itutil.produce(c, 3, {n["t"]: {0: build_batch([(None, b"v", ())])}})[(n["t"], 0)][0]


def probe_fetch(tc, c, n):
    return itutil.fetch_v4(c, n["t"], 0, 0, 0)["error"]


def probe_list_offsets(tc, c, n):
    return kp_call(c, OffsetRequest[1](-1, [(n["t"], [(0, -1)])])).topics[0][1][0][1]


def probe_metadata_named(tc, c, n):
    return itutil.metadata_v1(c, [n["t"]])[n["t"]][0]


def probe_metadata_all(tc, c, n):
    return NONE if n["t"] in itutil.metadata_v1(c, None) else TOPIC_AUTH


def probe_auto_create(tc, c, n):
    err = itutil.metadata_v10(c, [n["x"]], allow_auto_create=True)[n["x"]]["error"]
    return NONE if err in (NONE, LEADER_NOT_AVAILABLE) else err


def probe_create_topics(tc, c, n):
    resp = kp_call(c, CreateTopicsRequest[2]([(n["x"], 1, 1, [], [])], 10000, False))
    return resp.topic_errors[0][1]


def probe_delete_topics(tc, c, n):
    tc.create_topic(n["x"])
    return kp_call(c, DeleteTopicsRequest[1]([n["x"]], 10000)).topic_error_codes[0][1]


def probe_create_partitions(tc, c, n):
    tc.create_topic(n["x"])
    return kp_call(c, CreatePartitionsRequest[0]([(n["x"], (2, None))], 10000, True)).topic_errors[0][1]


def probe_delete_records(tc, c, n):
    return delete_records(c, n["t"], 0, 0)


def probe_describe_configs_topic(tc, c, n):
    return kp_call(c, DescribeConfigsRequest[1]([(2, n["t"], None)], False)).resources[0][0]


def probe_describe_configs_broker(tc, c, n):
    return kp_call(c, DescribeConfigsRequest[1]([(4, "", None)], False)).resources[0][0]


def probe_alter_configs_topic(tc, c, n):
    resp = kp_call(c, AlterConfigsRequest[0]([(2, n["t"], [("retention.ms", "86400000")])], True))
    return resp.resources[0][0]


def probe_join_group(tc, c, n):
    return kp_call(c, JoinGroupRequest[0](n["g"], 10000, "", "consumer", [("range", b"")])).error_code


def probe_heartbeat(tc, c, n):  # allowed: the group's own verdict on a stranger
    err = kp_call(c, HeartbeatRequest[0](n["g"], 1, "nobody")).error_code
    return NONE if err in (UNKNOWN_MEMBER_ID, GROUP_ID_NOT_FOUND) else err


def probe_offset_commit(tc, c, n):
    resp = kp_call(c, OffsetCommitRequest[2](n["g"], -1, "", -1, [(n["t"], [(0, 1, "")])]))
    return resp.topics[0][1][0][1]


def probe_offset_fetch(tc, c, n):
    return kp_call(c, OffsetFetchRequest[1](n["g"], [(n["t"], [0])])).topics[0][1][0][3]


def probe_find_coordinator(tc, c, n):
    return kp_call(c, GroupCoordinatorRequest[0](n["g"])).error_code


def probe_describe_groups(tc, c, n):
    return kp_call(c, DescribeGroupsRequest[0]([n["g"]])).groups[0][0]


def probe_delete_groups(tc, c, n):
    err = kp_call(c, DeleteGroupsRequest[0]([n["g"]])).results[0][1]
    return NONE if err == GROUP_ID_NOT_FOUND else err


def probe_init_producer_id(tc, c, n):
    return init_producer_id(c)


def probe_init_producer_id_txn(tc, c, n):
    err = init_producer_id(c, n["x"])
    return NONE if err != TXN_AUTH else err  # allowed: transactions themselves are unsupported


def probe_describe_quotas(tc, c, n):
    return describe_client_quotas(c)


def probe_list_reassignments(tc, c, n):
    return list_reassignments(c)


def probe_create_acls(tc, c, n):
    return acl_creations(c, [(2, n["x"], 3, "User:x", "*", 3, 3)])[0]


def probe_describe_acls(tc, c, n):
    return kp_call(c, DescribeAclsRequest[1](1, None, 1, None, None, 1, 1)).error_code


def probe_sync_group(tc, c, n):  # allowed: the group's own verdict on a stranger
    err = kp_call(c, SyncGroupRequest[0](n["g"], 1, "nobody", [])).error_code
    return NONE if err in (UNKNOWN_MEMBER_ID, GROUP_ID_NOT_FOUND) else err


def probe_leave_group(tc, c, n):
    err = kp_call(c, LeaveGroupRequest[0](n["g"], "nobody")).error_code
    return NONE if err in (UNKNOWN_MEMBER_ID, GROUP_ID_NOT_FOUND) else err


def probe_offset_delete(tc, c, n):
    err = offset_delete(c, n["g"], n["t"])
    return NONE if err == GROUP_ID_NOT_FOUND else err


def probe_offset_for_leader_epoch(tc, c, n):
    return offset_for_leader_epoch(c, n["t"])


def probe_replica_fetch(tc, c, n):
    return replica_fetch(c, n["t"])


def probe_alter_quotas(tc, c, n):
    return alter_client_quotas(c)


def probe_elect_leaders(tc, c, n):  # allowed: a single node has nothing to elect
    err = elect_leaders(c, n["t"])
    return NONE if err == ELECTION_NOT_NEEDED else err


def probe_incremental_alter_configs(tc, c, n):
    return incremental_alter_configs(c, n["t"])


MATRIX = [
    ("Produce", [("WRITE", "topic", "{t}")], probe_produce, NONE, TOPIC_AUTH),
    ("Fetch", [("READ", "topic", "{t}")], probe_fetch, NONE, TOPIC_AUTH),
    ("ListOffsets", [("DESCRIBE", "topic", "{t}")], probe_list_offsets, NONE, TOPIC_AUTH),
    ("Metadata(named)", [("DESCRIBE", "topic", "{t}")], probe_metadata_named, NONE, TOPIC_AUTH),
    ("Metadata(all) lists", [("DESCRIBE", "topic", "{t}")], probe_metadata_all, NONE, TOPIC_AUTH),
    ("Metadata(all) via READ", [("READ", "topic", "{t}")], probe_metadata_all, NONE, TOPIC_AUTH),
    ("Metadata auto-create", [("DESCRIBE", "topic", "{x}"), ("CREATE", "topic", "{x}")],
     probe_auto_create, NONE, TOPIC_AUTH),
    ("CreateTopics(topic)", [("CREATE", "topic", "{x}")], probe_create_topics, NONE, TOPIC_AUTH),
    ("CreateTopics(cluster)", [("CREATE", "cluster", "")], probe_create_topics, NONE, TOPIC_AUTH),
    ("CreateTopics(prefix)", [("CREATE", "topic", "acl-x-", ACLResourcePatternType.PREFIXED)],
     probe_create_topics, NONE, TOPIC_AUTH),
    ("DeleteTopics", [("DELETE", "topic", "{x}")], probe_delete_topics, NONE, TOPIC_AUTH),
    ("CreatePartitions", [("ALTER", "topic", "{x}")], probe_create_partitions, NONE, TOPIC_AUTH),
    ("DeleteRecords", [("DELETE", "topic", "{t}")], probe_delete_records, NONE, TOPIC_AUTH),
    ("DescribeConfigs(topic)", [("DESCRIBE_CONFIGS", "topic", "{t}")],
     probe_describe_configs_topic, NONE, TOPIC_AUTH),
    ("DescribeConfigs(broker)", [("DESCRIBE_CONFIGS", "cluster", "")],
     probe_describe_configs_broker, NONE, CLUSTER_AUTH),
    ("AlterConfigs(topic)", [("ALTER_CONFIGS", "topic", "{t}")], probe_alter_configs_topic, NONE,
     TOPIC_AUTH),
    ("DescribeConfigs via ALTER_CONFIGS", [("ALTER_CONFIGS", "topic", "{t}")],
     probe_describe_configs_topic, NONE, TOPIC_AUTH),
    ("JoinGroup", [("READ", "group", "{g}")], probe_join_group, NONE, GROUP_AUTH),
    ("Heartbeat", [("READ", "group", "{g}")], probe_heartbeat, NONE, GROUP_AUTH),
    ("SyncGroup", [("READ", "group", "{g}")], probe_sync_group, NONE, GROUP_AUTH),
    ("LeaveGroup", [("READ", "group", "{g}")], probe_leave_group, NONE, GROUP_AUTH),
    ("OffsetDelete", [("DELETE", "group", "{g}"), ("READ", "topic", "{t}")], probe_offset_delete,
     NONE, GROUP_AUTH),
    ("OffsetForLeaderEpoch(consumer)", [("DESCRIBE", "topic", "{t}")],
     probe_offset_for_leader_epoch, NONE, TOPIC_AUTH),
    ("OffsetForLeaderEpoch(replica)", [("CLUSTER_ACTION", "cluster", "")],
     probe_offset_for_leader_epoch, NONE, TOPIC_AUTH),
    ("Fetch(replica)", [("CLUSTER_ACTION", "cluster", "")], probe_replica_fetch, NONE, TOPIC_AUTH),
    ("Fetch(replica) with READ only", [("READ", "topic", "{t}")], probe_replica_fetch, TOPIC_AUTH,
     TOPIC_AUTH),
    ("AlterClientQuotas", [("ALTER_CONFIGS", "cluster", "")], probe_alter_quotas, NONE,
     CLUSTER_AUTH),
    ("ElectLeaders", [("ALTER", "cluster", "")], probe_elect_leaders, NONE, CLUSTER_AUTH),
    ("IncrementalAlterConfigs(topic)", [("ALTER_CONFIGS", "topic", "{t}")],
     probe_incremental_alter_configs, NONE, TOPIC_AUTH),
    ("OffsetCommit", [("READ", "group", "{g}"), ("READ", "topic", "{t}")], probe_offset_commit,
     NONE, GROUP_AUTH),
    ("OffsetCommit without the topic", [("READ", "group", "{g}")], probe_offset_commit,
     TOPIC_AUTH, GROUP_AUTH),
    ("OffsetFetch", [("DESCRIBE", "group", "{g}"), ("DESCRIBE", "topic", "{t}")],
     probe_offset_fetch, NONE, GROUP_AUTH),
    ("FindCoordinator", [("DESCRIBE", "group", "{g}")], probe_find_coordinator, NONE, GROUP_AUTH),
    ("DescribeGroups", [("DESCRIBE", "group", "{g}")], probe_describe_groups, NONE, GROUP_AUTH),
    ("DeleteGroups", [("DELETE", "group", "{g}")], probe_delete_groups, NONE, GROUP_AUTH),
    ("InitProducerId(IDEMPOTENT_WRITE)", [("IDEMPOTENT_WRITE", "cluster", "")],
     probe_init_producer_id, NONE, CLUSTER_AUTH),
    ("InitProducerId(WRITE on a topic, KIP-679)", [("WRITE", "topic", "{t}")],
     probe_init_producer_id, NONE, CLUSTER_AUTH),
    ("InitProducerId(transactional)", [("WRITE", "txn", "{x}")], probe_init_producer_id_txn, NONE,
     TXN_AUTH),
    ("DescribeClientQuotas", [("DESCRIBE_CONFIGS", "cluster", "")], probe_describe_quotas, NONE,
     CLUSTER_AUTH),
    ("ListPartitionReassignments", [("DESCRIBE", "cluster", "")], probe_list_reassignments, NONE,
     CLUSTER_AUTH),
    ("CreateAcls", [("ALTER", "cluster", "")], probe_create_acls, NONE, CLUSTER_AUTH),
    ("DescribeAcls", [("DESCRIBE", "cluster", "")], probe_describe_acls, NONE, CLUSTER_AUTH),
]


class AclMatrixTest(AclTestBase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.topic = unique_topic("acl-m")
        itutil.ck_create_topic(cls.broker.bootstrap, cls.topic, 1)
        p = itutil.ck_producer(cls.broker.bootstrap)
        itutil.ck_produce_all(p, [{"topic": cls.topic, "partition": 0, "value": b"v"}])

    def names(self, case):
        return {"t": self.topic, "g": unique_topic("acl-g"), "x": unique_topic("acl-x-")}

    def run_case(self, principal, case, granted):
        name, grants, probe, allowed, denied = case
        n = self.names(case)
        granted_acls = []
        if granted:  # this case's ACLs only: revoked before the next case
            granted_acls = self.grant(principal, [tuple(g[0:2]) + (g[2].format(**n),) +
                                                  tuple(g[3:]) for g in grants], cleanup=False)
        try:
            got = probe(self, self.probe(principal), n)
        finally:
            self.revoke(granted_acls)
        self.assertEqual(got, allowed if granted else denied,
                         "%s for %s %s the permission" % (name, principal.name,
                                                           "with" if granted else "without"))

    def test_matrix(self):
        for principal in PRINCIPALS:
            for case in MATRIX:
                for granted in (False, True):
                    with self.subTest(principal=principal.name, api=case[0], granted=granted):
                        self.run_case(principal, case, granted)
        self.assertBrokerAlive()

    def test_metadata_and_list_groups_leak_nothing(self):
        for principal in PRINCIPALS:
            hidden, shown = unique_topic("acl-hidden"), unique_topic("acl-shown")
            for t in (hidden, shown):
                self.create_topic(t)
            g_hidden, g_shown = unique_topic("acl-gh"), unique_topic("acl-gs")
            with SourceConn(self.broker.port, ADMIN_HOST) as a:  # groups exist (joined by admin)
                for g in (g_hidden, g_shown):
                    err = kp_call(a, JoinGroupRequest[0](g, 10000, "", "consumer",
                                                         [("range", b"")])).error_code
                    self.assertEqual(err, NONE)
            self.grant(principal, [("DESCRIBE", "topic", shown), ("DESCRIBE", "group", g_shown)])
            c = self.probe(principal)
            listed = itutil.metadata_v1(c, None)
            self.assertIn(shown, listed)
            self.assertNotIn(hidden, listed)
            self.assertNotIn(self.topic, listed)
            # Asking by name: refused without saying whether it exists (a missing one alike).
            named = itutil.metadata_v1(c, [hidden, "acl-never-existed"])
            self.assertEqual(named[hidden][0], TOPIC_AUTH)
            self.assertEqual(named["acl-never-existed"][0], TOPIC_AUTH)
            groups = [g[0] for g in kp_call(c, ListGroupsRequest[0]()).groups]
            self.assertIn(g_shown, groups)
            self.assertNotIn(g_hidden, groups)
            # DESCRIBE on the cluster lists every group.
            self.grant(principal, [("DESCRIBE", "cluster", "")])
            groups = [g[0] for g in kp_call(c, ListGroupsRequest[0]()).groups]
            self.assertIn(g_hidden, groups)

    def test_extension_apis(self):
        table = unique_topic("acl-table")
        self.create_topic(table, 1, {"table.type": "primary-key"})
        with SourceConn(self.broker.port, ADMIN_HOST) as a:
            self.assertEqual(itutil.produce(a, 3, {table: {0: build_batch([(b"k1", b"v1", ())])}})
                             [(table, 0)][0], NONE)
        for principal in PRINCIPALS:
            c = self.probe(principal)
            # Nothing granted: every extension API refuses, unknown tables alike.
            for name in (table, "acl-no-such-table"):
                self.assertEqual(lookup(c, name, {0: [b"k1"]})[1][0][0], TOPIC_AUTH)
                self.assertEqual(prefix_lookup(c, name, 0, b"k", 10)[0], TOPIC_AUTH)
                self.assertEqual(scan(c, name, 0, 10)[0], TOPIC_AUTH)
                self.assertEqual(read_changelog(c, name, [(0, 0, 10)])[0], TOPIC_AUTH)
                self.assertEqual(describe_table(c, [name])[1][0].get(2, [0])[0], TOPIC_AUTH)
            # DESCRIBE: the table's description, still no rows.
            self.grant(principal, [("DESCRIBE", "topic", table)])
            self.assertEqual(describe_table(c, [table])[1][0].get(2, [0])[0], NONE)
            self.assertEqual(lookup(c, table, {0: [b"k1"]})[1][0][0], TOPIC_AUTH)
            self.assertEqual(scan(c, table, 0, 10)[0], TOPIC_AUTH)
            # READ: rows.
            self.grant(principal, [("READ", "topic", table)])
            err, parts = lookup(c, table, {0: [b"k1"]})
            self.assertEqual(parts[0][0], NONE)
            self.assertEqual(parts[0][2][0][0], b"v1")
            self.assertEqual(prefix_lookup(c, table, 0, b"k", 10)[0], NONE)
            self.assertEqual(scan(c, table, 0, 10)[0], NONE)
            self.assertEqual(read_changelog(c, table, [(0, 0, 10)])[1][0]["error"], NONE)
            # ReplicaCheckpoint is broker-to-broker: CLUSTER_ACTION.
            body = pb_len(1, table.encode()) + pb_int(2, 0)
            r = c.request(16005, 0, body, flexible=True)
            self.assertEqual(one(pb_parse(r.data[r.pos:]), 1), CLUSTER_AUTH)
            # So is EndTxnOffsets: a client cannot commit a group's offsets through it.
            body = pb_len(1, b"some-group") + pb_int(2, 7) + pb_int(3, 1)
            r = c.request(16006, 0, body, flexible=True)
            self.assertEqual(one(pb_parse(r.data[r.pos:]), 1), CLUSTER_AUTH)

    def test_deny_wins(self):
        for principal in PRINCIPALS:
            c = self.probe(principal)
            self.grant(principal, [("ALL", "topic", "*")])
            self.assertEqual(probe_produce(self, c, {"t": self.topic}), NONE)
            self.grant(principal, [("WRITE", "topic", self.topic[:6], ACLResourcePatternType.PREFIXED)],
                       perm=ACLPermissionType.DENY)
            self.assertEqual(probe_produce(self, c, {"t": self.topic}), TOPIC_AUTH)
            self.assertEqual(probe_fetch(self, c, {"t": self.topic}), NONE,
                             "a DENY of WRITE leaves READ alone")

    def scrape(self):
        # The broker restarted (setUpClass): its metrics port is on the last "metrics" line.
        b = self.broker
        saved = b.log_lines
        b.log_lines = [l for l in saved if "metrics listening" in l][-1:]
        try:
            return Scrape(b)
        finally:
            b.log_lines = saved

    def test_denials_are_counted_and_audited_at_a_bounded_rate(self):
        principal = PRINCIPALS[0]
        before = self.scrape().get("strata_authorization_denials_total", api="Produce")
        lines_before = sum("authorization denied" in l for l in self.broker.log_lines)
        c = self.probe(principal)
        for _ in range(50):
            self.assertEqual(probe_produce(self, c, {"t": self.topic}), TOPIC_AUTH)
        after = self.scrape().get("strata_authorization_denials_total", api="Produce")
        self.assertGreaterEqual(after - before, 50)
        time.sleep(0.3)
        lines = [l for l in self.broker.log_lines if "authorization denied" in l][lines_before:]
        self.assertGreaterEqual(len(lines), 1)
        self.assertLessEqual(len(lines), 3, "at most one line per second per principal+operation")
        self.assertIn("principal=%s" % principal.name, lines[0])
        self.assertIn("operation=WRITE", lines[0])
        time.sleep(1.1)
        self.assertEqual(probe_produce(self, c, {"t": self.topic}), TOPIC_AUTH)
        time.sleep(0.3)
        last = [l for l in self.broker.log_lines if "authorization denied" in l][-1]
        self.assertIn("more denials", last)


class AclAdministrationTest(AclTestBase):
    def test_kafka_python_admin_round_trip(self):
        topic = unique_topic("acl-kp")
        acls = [kp_acl("User:kp", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                       ResourceType.TOPIC, topic),
                kp_acl("User:kp", "10.0.0.1", ACLOperation.WRITE, ACLPermissionType.DENY,
                       ResourceType.TOPIC, topic[:5], ACLResourcePatternType.PREFIXED)]
        result = self.admin.create_acls(acls)
        self.assertEqual(len(result["succeeded"]), 2, result)
        found, err = self.admin.describe_acls(ACLFilter(
            "User:kp", None, ACLOperation.ANY, ACLPermissionType.ANY,
            ResourcePatternFilter(ResourceType.TOPIC, topic, ACLResourcePatternType.MATCH)))
        self.assertEqual(err.errno, 0)
        self.assertEqual(sorted((a.operation, a.host) for a in found),
                         sorted([(ACLOperation.READ, "*"), (ACLOperation.WRITE, "10.0.0.1")]))
        deleted = self.admin.delete_acls([ACLFilter(
            "User:kp", None, ACLOperation.ANY, ACLPermissionType.ANY,
            ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY))])
        self.assertEqual(len(deleted[0][1]), 2)
        found, err = self.admin.describe_acls(ACLFilter(
            "User:kp", None, ACLOperation.ANY, ACLPermissionType.ANY,
            ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY)))
        self.assertEqual(found, [])

    def rdkafka_acl(self, user, password, *args):
        """rdkafka_acl_admin over the SASL_PLAINTEXT listener as `user`; its output lines."""
        tool = os.environ.get("STRATA_RDKAFKA_ACL_ADMIN") or os.path.join(
            harness.ROOT, "build", "test", "integration", "rdkafka_acl_admin")
        sasl = ["-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=PLAIN",
                "-X", "sasl.username=" + user, "-X", "sasl.password=" + password]
        p = subprocess.run([tool, "127.0.0.1:%d" % self.broker.ports["SASL_PLAINTEXT"]] + sasl +
                           list(args), capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout.splitlines()

    def test_librdkafka_c_admin_round_trip_as_a_sasl_super_user(self):
        topic = unique_topic("acl-rd")
        admin = ("admin", "admin-secret")
        self.assertEqual(self.rdkafka_acl(*admin, "create", "TOPIC", topic, "LITERAL", "User:rd",
                                          "*", "READ", "ALLOW"), ["acl NO_ERROR"])
        self.assertEqual(self.rdkafka_acl(*admin, "create", "TOPIC", topic[:6], "PREFIXED",
                                          "User:rd", "10.0.0.9", "WRITE", "DENY"),
                         ["acl NO_ERROR"])
        out = self.rdkafka_acl(*admin, "describe", "TOPIC", topic, "MATCH", "User:rd", "-", "ANY",
                               "ANY")
        self.assertEqual(out[0], "error NO_ERROR")
        self.assertEqual(sorted(out[1:]), sorted([
            "TOPIC %s LITERAL User:rd * READ ALLOW" % topic,
            "TOPIC %s PREFIXED User:rd 10.0.0.9 WRITE DENY" % topic[:6]]))
        # The same ACLs as kafka-python sees them: one store behind every client.
        found, err = self.admin.describe_acls(ACLFilter(
            "User:rd", None, ACLOperation.ANY, ACLPermissionType.ANY,
            ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY)))
        self.assertEqual(len(found), 2)
        # bob is authenticated but no super user and has no ALTER on the cluster.
        self.assertEqual(self.rdkafka_acl("bob", "bob-secret", "create", "TOPIC", topic,
                                          "LITERAL", "User:bob", "*", "ALL", "ALLOW"),
                         ["acl CLUSTER_AUTHORIZATION_FAILED"])
        # The broker answers CLUSTER_AUTHORIZATION_FAILED (the matrix checks the code on the
        # wire); librdkafka 2.0.2 drops DescribeAcls' top-level error and reports no bindings.
        self.assertEqual(self.rdkafka_acl("bob", "bob-secret", "describe", "ANY", "-", "ANY", "-",
                                          "-", "ANY", "ANY"), ["error NO_ERROR"])
        harness.wait_until(lambda: any("principal=User:bob" in l and "api=DescribeAcls" in l
                                       for l in self.broker.log_lines), what="denial logged")
        out = self.rdkafka_acl(*admin, "delete", "ANY", "-", "ANY", "User:rd", "-", "ANY", "ANY")
        self.assertEqual(out[0], "response NO_ERROR")
        self.assertEqual(len(out), 3, out)
        self.assertEqual(self.rdkafka_acl(*admin, "describe", "ANY", "-", "ANY", "User:rd", "-",
                                          "ANY", "ANY"), ["error NO_ERROR"])

    def test_invalid_bindings_get_invalid_request_each(self):
        with SourceConn(self.broker.port, ADMIN_HOST) as c:
            errs = acl_creations(c, [
                (2, "ok-topic", 3, "User:a", "*", 3, 3),       # valid
                (4, "not-the-cluster", 3, "User:a", "*", 7, 3),  # CLUSTER must be kafka-cluster
                (2, "", 3, "User:a", "*", 3, 3),               # empty name
                (2, "t", 3, "no-colon", "*", 3, 3),            # principal without a type
                (2, "t", 1, "User:a", "*", 3, 3),              # pattern ANY
                (2, "t", 3, "User:a", "*", 1, 3),              # operation ANY
                (1, "t", 3, "User:a", "*", 3, 3),              # resource type ANY
                (2, "t", 3, "User:a", "*", 3, 1),              # permission ANY
                (2, "t", 3, "User:a", "*", 99, 3),             # unknown operation
            ])
            self.assertEqual(errs, [NONE] + [INVALID_REQUEST] * 8)
            resp = kp_call(c, CreateAclsRequest[1]([(4, "x", 3, "User:a", "*", 7, 3)]))
            self.assertIn("kafka-cluster", resp.creation_responses[0][1])
            resp = kp_call(c, DescribeAclsRequest[1](2, "ok-topic", 3, None, None, 1, 1))
            self.assertEqual(resp.error_code, NONE)
            self.assertEqual(len(resp.resources), 1)
        self.admin.delete_acls([ACLFilter("User:a", None, ACLOperation.ANY, ACLPermissionType.ANY,
                                          ResourcePatternFilter(ResourceType.ANY, None,
                                                                ACLResourcePatternType.ANY))])

    def test_kafkajs_admin_round_trip(self):
        topic = unique_topic("acl-js")
        env = dict(os.environ, NODE_PATH=os.path.join(JS_DIR, "node_modules"))
        p = subprocess.run(["node", os.path.join(JS_DIR, "acls.js"), self.broker.bootstrap, topic,
                            "User:js"], capture_output=True, text=True, timeout=120, env=env)
        self.assertEqual(p.returncode, 0, "node failed:\n%s\n%s" % (p.stdout, p.stderr))
        line = [l for l in p.stdout.splitlines() if l.startswith("RESULT ")][-1]
        r = json.loads(line[len("RESULT "):])
        self.assertEqual(len(r["described"]), 1)
        self.assertEqual(r["described"][0]["resourceName"], topic)
        self.assertEqual(r["described"][0]["acls"],
                         sorted([["User:js", "*", 3, 3], ["User:js", "*", 4, 2]]))
        self.assertEqual(r["matchedCount"], 3, "MATCH: the literal ACLs and the prefix")
        self.assertEqual(r["deleted"], [{"errorCode": 0, "matching": 2},
                                        {"errorCode": 0, "matching": 1}])
        self.assertEqual(r["after"], 0)

    def cli(self, *args, check=True):
        p = subprocess.run([CLI, "-b", self.broker.bootstrap] + list(args), capture_output=True,
                           text=True, timeout=60)
        if check:
            self.assertEqual(p.returncode, 0, "strata %s: %s%s" % (args, p.stdout, p.stderr))
        return p

    def test_cli_add_list_remove(self):
        topic = unique_topic("acl-cli")
        p = self.cli("-o", "json", "acl", "add", "--allow-principal", "User:cli",
                     "--operation", "Read", "--operation", "describe-configs", "--topic", topic,
                     "--group", "cli-group", "--allow-host", "10.1.1.1", check=False)
        self.assertEqual(p.returncode, 2, "DESCRIBE_CONFIGS is not a group operation")
        self.assertIn("not valid on a GROUP", p.stderr)
        added = json.loads(self.cli("-o", "json", "acl", "add", "--allow-principal", "User:cli",
                                    "--operation", "Read", "--operation", "describe-configs",
                                    "--topic", topic, "--allow-host", "10.1.1.1").stdout)
        self.assertEqual(len(added), 2, "Read and DescribeConfigs on the topic")
        self.cli("acl", "add", "--allow-principal", "User:cli", "--allow-host", "10.1.1.1",
                 "--operation", "Read", "--group", "cli-group")
        p = self.cli("acl", "add", "--allow-principal", "User:cli", "--operation", "Write",
                     "--group", "cli-group", check=False)
        self.assertEqual(p.returncode, 2, "WRITE is not a group operation (kafka-acls refuses)")
        self.cli("acl", "add", "--deny-principal", "User:cli", "--operation", "Write", "--topic",
                 topic[:7], "--resource-pattern-type", "prefixed")
        listed = json.loads(self.cli("-o", "json", "acl", "list", "--principal", "User:cli").stdout)
        self.assertEqual(len(listed), 4)
        matched = json.loads(self.cli("-o", "json", "acl", "list", "--topic", topic,
                                      "--resource-pattern-type", "match").stdout)
        self.assertIn({"principal": "User:cli", "host": "*", "permission": "DENY",
                       "operation": "WRITE", "resource_type": "TOPIC",
                       "resource_name": topic[:7], "pattern_type": "PREFIXED"}, matched)
        text = self.cli("acl", "list", "--topic", topic).stdout
        self.assertIn("DESCRIBE_CONFIGS", text)
        removed = json.loads(self.cli("-o", "json", "acl", "remove", "--topic", topic).stdout)
        self.assertEqual(len(removed), 2, "no principal: every ACL of the literal resource")
        removed = json.loads(self.cli("-o", "json", "acl", "remove", "--allow-principal",
                                      "User:cli", "--allow-host", "10.1.1.1", "--operation",
                                      "Read", "--group", "cli-group").stdout)
        self.assertEqual(len(removed), 1)
        self.cli("acl", "remove", "--topic", topic[:7], "--resource-pattern-type", "prefixed")
        listed = json.loads(self.cli("-o", "json", "acl", "list", "--principal", "User:cli").stdout)
        self.assertEqual(listed, [])

    def test_acls_survive_a_restart(self):
        topic = unique_topic("acl-restart")
        self.admin.create_acls([kp_acl("User:durable", "*", ACLOperation.READ,
                                       ACLPermissionType.ALLOW, ResourceType.TOPIC, topic)])
        self.admin.close()
        self.broker.stop()
        self.broker.start()
        type(self).admin = kp_admin(self.broker.bootstrap)
        found, err = self.admin.describe_acls(ACLFilter(
            "User:durable", None, ACLOperation.ANY, ACLPermissionType.ANY,
            ResourcePatternFilter(ResourceType.TOPIC, topic, ACLResourcePatternType.LITERAL)))
        self.assertEqual(err.errno, 0)
        self.assertEqual([(a.principal, a.operation) for a in found],
                         [("User:durable", ACLOperation.READ)])


class SuperUserTest(BrokerTestCase):
    """super.users: allowed everything, DENY ACLs included."""
    overrides = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                 "super.users": "User:someone-else; User:ANONYMOUS"}

    def test_super_user_passes_every_check(self):
        topic = unique_topic("acl-super")
        itutil.ck_create_topic(self.broker.bootstrap, topic, 1)
        admin = kp_admin(self.broker.bootstrap)
        self.addCleanup(admin.close)
        admin.create_acls([kp_acl("User:ANONYMOUS", "*", ACLOperation.ALL, ACLPermissionType.DENY,
                                  ResourceType.TOPIC, "*")])
        with RawConn(self.broker.port) as c:
            self.assertEqual(probe_produce(self, c, {"t": topic}), NONE)
            self.assertIn(topic, itutil.metadata_v1(c, None))


class AllowEveryoneTest(BrokerTestCase):
    """allow.everyone.if.no.acl.found: a resource with no ACL at all is open; one ACL closes it."""
    overrides = {"authorizer.class.name": "strata", "allow.everyone.if.no.acl.found": "true"}

    def test_open_until_an_acl_names_the_resource(self):
        topic, other = unique_topic("acl-open"), unique_topic("acl-open2")
        for t in (topic, other):
            itutil.ck_create_topic(self.broker.bootstrap, t, 1)
        with RawConn(self.broker.port) as c:
            self.assertEqual(probe_produce(self, c, {"t": topic}), NONE)
            errs = acl_creations(c, [(2, topic, 3, "User:someone-else", "*", 4, 3)])
            self.assertEqual(errs, [NONE], "no ACL on the cluster: CreateAcls is open too")
            self.assertEqual(probe_produce(self, c, {"t": topic}), TOPIC_AUTH)
            self.assertEqual(probe_produce(self, c, {"t": other}), NONE)


class NoAuthorizerTest(BrokerTestCase):
    def test_acl_apis_answer_security_disabled(self):
        with RawConn(self.broker.port) as c:
            self.assertEqual(acl_creations(c, [(2, "t", 3, "User:a", "*", 3, 3)]),
                             [SECURITY_DISABLED])
            self.assertEqual(probe_describe_acls(self, c, {}), SECURITY_DISABLED)
            resp = kp_call(c, DeleteAclsRequest[1]([(1, None, 1, None, None, 1, 1)]))
            self.assertEqual(resp.filter_responses[0][0], SECURITY_DISABLED)
            self.assertEqual(probe_produce(self, c, {"t": "acl-anything"}), UNKNOWN_TOPIC_OR_PARTITION)


class BadAuthorizerConfigTest(unittest.TestCase):
    def test_unknown_authorizer_class_is_refused_at_start(self):
        p = subprocess.run([harness.BROKER, "--override", "authorizer.class.name=com.example.Mine",
                            "--override", "log.dirs=/nonexistent-acl-test"],
                           capture_output=True, text=True, timeout=30)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("authorizer.class.name", p.stdout + p.stderr)
        p = subprocess.run([harness.BROKER, "--override", "super.users=alice"],
                           capture_output=True, text=True, timeout=30)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("super.users", p.stdout + p.stderr)


if __name__ == "__main__":
    unittest.main()
