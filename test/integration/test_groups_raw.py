"""Group coordinator wire behaviour with hand-built frames (issue 3): the JoinGroup handshake,
Java's error codes for bad input (unknown topic/partition, wrong generation, oversized metadata,
unknown member/group), metadata round trip through OffsetFetch, OffsetDelete, and ApiVersions.
"""
import struct
import sys
import time
import unittest

import itutil
from itutil import str16, bytes32, array32, RawConn

JOIN, SYNC, HEARTBEAT, LEAVE, COMMIT, FETCH = 11, 14, 12, 13, 8, 9
DESCRIBE, LIST, DELETE_GROUPS, OFFSET_DELETE = 15, 16, 42, 47

NONE, UNKNOWN_TOPIC, OFFSET_METADATA_TOO_LARGE = 0, 3, 12
ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, INVALID_SESSION_TIMEOUT = 22, 25, 26
REBALANCE_IN_PROGRESS, GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP = 27, 69, 68
MEMBER_ID_REQUIRED, GROUP_SUBSCRIBED_TO_TOPIC, INVALID_GROUP_ID = 79, 86, 24


def subscription(topics):
    return struct.pack(">h", 0) + array32([str16(t) for t in topics]) + bytes32(b"")


def join_v5(conn, group, member_id, topics, session_ms=6000, instance=None):
    body = (str16(group) + struct.pack(">ii", session_ms, 10000) + str16(member_id) +
            str16(instance) + str16("consumer") +
            array32([str16("range") + bytes32(subscription(topics))]))
    r = conn.request(JOIN, 5, body)
    r.i32()
    err, gen, proto, leader, member = r.i16(), r.i32(), r.str16(), r.str16(), r.str16()
    members = r.array(lambda: (r.str16(), r.str16(), r.bytes32()))
    return dict(error=err, generation=gen, protocol=proto, leader=leader, member_id=member,
                members=members)


def sync_v3(conn, group, gen, member_id, assignments):
    body = (str16(group) + struct.pack(">i", gen) + str16(member_id) + str16(None) +
            array32([str16(m) + bytes32(a) for m, a in assignments]))
    r = conn.request(SYNC, 3, body)
    r.i32()
    return r.i16(), r.bytes32()


def heartbeat_v3(conn, group, gen, member_id):
    r = conn.request(HEARTBEAT, 3, str16(group) + struct.pack(">i", gen) + str16(member_id) +
                     str16(None))
    r.i32()
    return r.i16()


def commit_v7(conn, group, gen, member_id, parts):
    """parts: [(topic, partition, offset, metadata)] → {(topic, partition): error}"""
    topics = {}
    for t, p, o, md in parts:
        topics.setdefault(t, []).append(struct.pack(">iqi", p, o, -1) + str16(md))
    body = (str16(group) + struct.pack(">i", gen) + str16(member_id) + str16(None) +
            array32([str16(t) + array32(ps) for t, ps in topics.items()]))
    r = conn.request(COMMIT, 7, body)
    r.i32()
    out = {}
    for _ in range(r.i32()):
        name = r.str16()
        for _ in range(r.i32()):
            idx, err = r.i32(), r.i16()
            out[(name, idx)] = err
    return out


def fetch_v5(conn, group, topic, partitions):
    body = str16(group) + array32([str16(topic) + array32([struct.pack(">i", p) for p in partitions])])
    r = conn.request(FETCH, 5, body)
    r.i32()
    out = {}
    for _ in range(r.i32()):
        name = r.str16()
        for _ in range(r.i32()):
            idx, off, epoch, md, err = r.i32(), r.i64(), r.i32(), r.str16(), r.i16()
            out[(name, idx)] = (off, epoch, md, err)
    return r.i16(), out


def offset_delete(conn, group, topic, partitions):
    body = str16(group) + array32([str16(topic) + array32([struct.pack(">i", p) for p in partitions])])
    r = conn.request(OFFSET_DELETE, 0, body)
    err = r.i16()
    r.i32()
    out = {}
    for _ in range(r.i32()):
        name = r.str16()
        for _ in range(r.i32()):
            idx, perr = r.i32(), r.i16()
            out[(name, idx)] = perr
    return err, out


def delete_groups_list(conn, groups):
    r = conn.request(DELETE_GROUPS, 1, array32([str16(g) for g in groups]))
    r.i32()
    return r.array(lambda: (r.str16(), r.i16()))


def delete_groups(conn, groups):
    return dict(delete_groups_list(conn, groups))


class GroupsRawTest(itutil.BrokerTestCase):
    overrides = {"group.initial.rebalance.delay.ms": 0}

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.topic = itutil.unique_topic("graw")
        itutil.ck_create_topic(cls.broker.bootstrap, cls.topic, partitions=2)

    def conn(self):
        return RawConn(self.broker.port)

    def stable_member(self, conn, group):
        first = join_v5(conn, group, "", [self.topic])
        self.assertEqual(first["error"], MEMBER_ID_REQUIRED)
        self.assertTrue(first["member_id"])
        j = join_v5(conn, group, first["member_id"], [self.topic])
        self.assertEqual(j["error"], NONE)
        self.assertEqual(j["leader"], j["member_id"])
        self.assertEqual(j["protocol"], "range")
        self.assertEqual(len(j["members"]), 1)
        err, assignment = sync_v3(conn, group, j["generation"], j["member_id"],
                                  [(j["member_id"], b"\x00\x01")])
        self.assertEqual(err, NONE)
        self.assertEqual(assignment, b"\x00\x01")
        return j["member_id"], j["generation"]

    def test_api_versions_advertise_group_apis(self):
        with self.conn() as c:
            err, apis = itutil.api_versions(c)
        self.assertEqual(err, 0)
        expect = {JOIN: (0, 9), SYNC: (0, 5), HEARTBEAT: (0, 4), LEAVE: (0, 5), COMMIT: (2, 9),
                  FETCH: (1, 9), DESCRIBE: (0, 5), LIST: (0, 5), DELETE_GROUPS: (0, 2),
                  OFFSET_DELETE: (0, 0)}
        for k, v in expect.items():
            self.assertEqual(apis.get(k), v, "api %d" % k)

    def test_member_id_too_long_for_its_version_closes_that_connection(self):
        # A member id is the client id + "-" + a UUID: from a 32,767-byte client id it no longer
        # fits JoinGroup v5's int16-length string. The broker must not send the string with a
        # length that wrapped; it closes that connection (a Java broker fails to serialize it)
        # and serves on.
        group = "long-client-" + itutil.unique_topic("g")
        body = (str16(group) + struct.pack(">ii", 6000, 10000) + str16("") + str16(None) +
                str16("consumer") + array32([str16("range") + bytes32(subscription([self.topic]))]))
        with RawConn(self.broker.port, client_id="c" * 32767) as c:
            c.send_raw(itutil.request_frame(JOIN, 5, 1, body, client_id=c.client_id))
            self.assertTrue(c.wait_closed(), "the connection stays open")
        # Flexible versions carry the same member id as a compact string: answered.
        with RawConn(self.broker.port, client_id="c" * 32767) as c:
            flex = (itutil.compact_str(group) + struct.pack(">ii", 6000, 10000) +
                    itutil.compact_str("") + itutil.compact_str(None) +
                    itutil.compact_str("consumer") +
                    itutil.compact_array([itutil.compact_str("range") +
                                          itutil.uvarint(len(subscription([self.topic])) + 1) +
                                          subscription([self.topic]) + b"\x00"]) +
                    itutil.compact_str(None) + b"\x00")
            r = c.request(JOIN, 9, flex, flexible=True)
            r.i32()  # throttle
            err = r.i16()
            r.i32()  # generation
            r.compact_str()  # protocol type
            r.compact_str()  # protocol name
            r.compact_str()  # leader
            r.i8()  # skip_assignment
            member = r.compact_str()
            self.assertEqual(err, MEMBER_ID_REQUIRED)
            self.assertEqual(len(member), 32767 + 1 + 36)
            self.assertTrue(member.startswith("c" * 32767 + "-"))
        with self.conn() as c:
            self.stable_member(c, group + "-short")
        self.assertBrokerAlive()

    def test_group_state_lives_in_an_internal_topic(self):
        """Committed offsets are records of __consumer_offsets (50 partitions, Metadata marks it
        internal); Produce to it is refused with INVALID_TOPIC_EXCEPTION."""
        group = itutil.unique_topic("gint")
        with self.conn() as c:
            self.stable_member(c, group)
        c = itutil.ck_consumer(self.broker.bootstrap, **{"group.id": group + "-simple"})
        try:
            from confluent_kafka import TopicPartition
            c.commit(offsets=[TopicPartition(self.topic, 0, 7)], asynchronous=False)
        finally:
            c.close()
        with self.conn() as c:
            body = itutil.array32([itutil.str16("__consumer_offsets")])
            r = c.request(3, 1, body)  # Metadata v1: internal flag per topic
            r.array(lambda: (r.i32(), r.str16(), r.i32(), r.str16()))
            r.i32()
            self.assertEqual(r.i32(), 1)
            self.assertEqual((r.i16(), r.str16(), r.i8()), (0, "__consumer_offsets", 1))
            self.assertEqual(r.i32(), 50)
            batch = itutil.build_batch([(None, b"forged", ())])
            resp = itutil.produce(c, 3, {"__consumer_offsets": {0: batch}})
            self.assertEqual(resp[("__consumer_offsets", 0)][0], 17)  # INVALID_TOPIC_EXCEPTION
        # The commit is a record of its group's partition (Kafka's hash rule).
        h = 0
        for unit in struct.unpack(">%dH" % len(group + "-simple"),
                                  (group + "-simple").encode("utf-16-be")):
            h = (h * 31 + unit) & 0xFFFFFFFF
        h = h - (1 << 32) if h >= 1 << 31 else h
        part = (0 if h == -(1 << 31) else abs(h)) % 50
        from confluent_kafka import TopicPartition
        c = itutil.ck_consumer(self.broker.bootstrap, **{"group.id": group + "-reader"})
        try:
            low, high = c.get_watermark_offsets(TopicPartition("__consumer_offsets", part),
                                                timeout=10)
        finally:
            c.close()
        self.assertGreaterEqual(high, 1, "partition %d holds the commit" % part)

    def test_bad_commits_get_java_error_codes(self):
        group = itutil.unique_topic("g-bad")
        with self.conn() as c:
            member, gen = self.stable_member(c, group)
            res = commit_v7(c, group, gen, member, [
                (self.topic, 0, 10, "ok"),
                (self.topic, 7, 10, None),                 # no such partition
                ("no-such-topic-xyz", 0, 10, None),        # no such topic
                (self.topic, 1, 10, "x" * 4097),           # offset.metadata.max.bytes = 4096
            ])
            self.assertEqual(res[(self.topic, 0)], NONE)
            self.assertEqual(res[(self.topic, 7)], UNKNOWN_TOPIC)
            self.assertEqual(res[("no-such-topic-xyz", 0)], UNKNOWN_TOPIC)
            self.assertEqual(res[(self.topic, 1)], OFFSET_METADATA_TOO_LARGE)
            res = commit_v7(c, group, gen + 1, member, [(self.topic, 0, 11, None)])
            self.assertEqual(res[(self.topic, 0)], ILLEGAL_GENERATION)
            res = commit_v7(c, group, gen, "stranger", [(self.topic, 0, 11, None)])
            self.assertEqual(res[(self.topic, 0)], UNKNOWN_MEMBER_ID)
            res = commit_v7(c, "never-seen-group", 3, "m", [(self.topic, 0, 11, None)])
            self.assertEqual(res[(self.topic, 0)], ILLEGAL_GENERATION)
            self.assertEqual(heartbeat_v3(c, group, gen + 1, member), ILLEGAL_GENERATION)
            self.assertEqual(heartbeat_v3(c, group, gen, "stranger"), UNKNOWN_MEMBER_ID)
            self.assertEqual(heartbeat_v3(c, "never-seen-group", 1, "m"), UNKNOWN_MEMBER_ID)
            self.assertEqual(heartbeat_v3(c, group, gen, member), NONE)
            self.assertEqual(sync_v3(c, group, gen - 1, member, [])[0], ILLEGAL_GENERATION)
            self.assertEqual(join_v5(c, group, "", [self.topic], session_ms=10)["error"],
                             INVALID_SESSION_TIMEOUT)
            self.assertEqual(join_v5(c, "", "", [self.topic])["error"], INVALID_GROUP_ID)
            self.assertEqual(join_v5(c, "never-seen-2", "ghost", [self.topic])["error"],
                             UNKNOWN_MEMBER_ID)
            # Metadata (incl. non-ASCII) round-trips; unknown partitions answer -1 with no error.
            top, got = fetch_v5(c, group, self.topic, [0, 1])
            self.assertEqual(top, NONE)
            self.assertEqual(got[(self.topic, 0)], (10, -1, "ok", NONE))
            self.assertEqual(got[(self.topic, 1)][0], -1)
        self.assertBrokerAlive()

    def test_offset_delete_and_delete_groups(self):
        group = itutil.unique_topic("g-del")
        with self.conn() as c:
            member, gen = self.stable_member(c, group)
            self.assertEqual(commit_v7(c, group, gen, member, [(self.topic, 0, 5, "m")]),
                             {(self.topic, 0): NONE})
            err, parts = offset_delete(c, group, self.topic, [0])
            self.assertEqual(err, NONE)
            self.assertEqual(parts[(self.topic, 0)], GROUP_SUBSCRIBED_TO_TOPIC)
            self.assertEqual(delete_groups(c, [group, "never-seen-3"]),
                             {group: NON_EMPTY_GROUP, "never-seen-3": GROUP_ID_NOT_FOUND})
            self.assertEqual(offset_delete(c, "never-seen-3", self.topic, [0])[0], GROUP_ID_NOT_FOUND)
            # Leave (v0 form): the group empties and its offsets become deletable.
            r = c.request(LEAVE, 0, str16(group) + str16(member))
            self.assertEqual(r.i16(), NONE)
            err, parts = offset_delete(c, group, self.topic, [0, 9])
            self.assertEqual(err, NONE)
            self.assertEqual(parts, {(self.topic, 0): NONE, (self.topic, 9): UNKNOWN_TOPIC})
            self.assertEqual(fetch_v5(c, group, self.topic, [0])[1][(self.topic, 0)][0], -1)
            # A name given twice is one group: deleted, answered once (Kafka answers distinct names).
            self.assertEqual(delete_groups_list(c, [group, "never-seen-4", group]),
                             [(group, NONE), ("never-seen-4", GROUP_ID_NOT_FOUND)])
            self.assertEqual(delete_groups(c, [group]), {group: GROUP_ID_NOT_FOUND})

    def test_join_waits_for_rebalance_and_keeps_response_order(self):
        group = itutil.unique_topic("g-order")
        with self.conn() as a, self.conn() as b:
            member, gen = self.stable_member(a, group)
            # b joins: its JoinGroup is answered only once a rejoins (or the rebalance times out).
            first = join_v5(b, group, "", [self.topic])
            b.corr += 1
            body = (str16(group) + struct.pack(">ii", 6000, 10000) + str16(first["member_id"]) +
                    str16(None) + str16("consumer") +
                    array32([str16("range") + bytes32(subscription([self.topic]))]))
            b.send_raw(itutil.request_frame(JOIN, 5, b.corr, body))
            time.sleep(0.3)
            self.assertEqual(heartbeat_v3(a, group, gen, member), REBALANCE_IN_PROGRESS)
            ja = join_v5(a, group, member, [self.topic])
            self.assertEqual(ja["generation"], gen + 1)
            self.assertEqual(len(ja["members"]), 2)
            data = b.recv_frame()
            rb = itutil.Reader(data)
            self.assertEqual(rb.i32(), b.corr)
            rb.i32()
            self.assertEqual(rb.i16(), NONE)
            self.assertEqual(rb.i32(), gen + 1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
