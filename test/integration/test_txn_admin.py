"""Transaction administration on a single node (docs/transactions.md, "Finding and ending stuck
transactions"): ListTransactions (66), DescribeTransactions (65), DescribeProducers (61) and
WriteTxnMarkers (27), through `strata txn` and raw frames, with confluent-kafka transactional
producers:
- list/describe a transaction open in a producer (state, producer id and epoch, timeout, start
  time, partitions) and its filters; after the commit it is CompleteCommit with no partitions;
- DescribeProducers names the open transaction's first offset on each partition;
- `strata txn abort --start-offset` ends a hanging transaction (its producer killed with SIGKILL
  long before its transaction.timeout.ms): a read_committed consumer stuck at its first offset
  reads on, and never sees the hanging records;
- errors: TRANSACTIONAL_ID_NOT_FOUND, UNKNOWN_TOPIC_OR_PARTITION, unknown state filters, and the
  advertised versions;
- with an authorizer: an id the principal may not DESCRIBE is left out of the listing and is
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED to describe; DescribeProducers needs READ on the topic,
  WriteTxnMarkers CLUSTER_ACTION."""
import json
import os
import signal
import struct
import subprocess
import sys
import textwrap
import time
import unittest

import itutil
import test_transactions as txn

CLI = os.environ.get("STRATA_CLI") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "tools", "cli", "strata")
u = itutil

E_UNKNOWN_TOPIC_OR_PARTITION = 3
E_TOPIC_AUTHORIZATION_FAILED = 29
E_CLUSTER_AUTHORIZATION_FAILED = 31
E_TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
E_TRANSACTIONAL_ID_NOT_FOUND = 105


def cli(bootstrap, *args, expect=0):
    p = subprocess.run([CLI, "-b", bootstrap, "-o", "json"] + list(args), capture_output=True,
                       text=True, timeout=60)
    if expect is not None and p.returncode != expect:
        raise AssertionError("strata %s: rc %d (want %d)\n%s%s" % (
            " ".join(args), p.returncode, expect, p.stdout, p.stderr))
    return json.loads(p.stdout) if p.stdout.strip() else None


# ------------------------------------------------------------------ raw frames (flexible v0/v1)

def tag():
    return u.uvarint(0)


def list_transactions(conn, states=(), pids=(), duration=None):
    body = u.compact_array([u.compact_str(s) for s in states]) + u.compact_array(
        [struct.pack(">q", p) for p in pids])
    version = 0
    if duration is not None:
        body += struct.pack(">q", duration)
        version = 1
    r = conn.request(66, version, body + tag(), flexible=True)
    r.i32()
    err = r.i16()
    unknown = r.compact_array(r.compact_str)
    states = r.compact_array(lambda: (r.compact_str(), r.i64(), r.compact_str(), r.tagged())[:3])
    return err, unknown, states


def describe_transactions(conn, ids):
    r = conn.request(65, 0, u.compact_array([u.compact_str(i) for i in ids]) + tag(),
                     flexible=True)
    r.i32()

    def topic():
        t = (r.compact_str(), r.compact_array(r.i32))
        r.tagged()
        return t

    def state():
        s = {"error": r.i16(), "id": r.compact_str(), "state": r.compact_str(),
             "timeout_ms": r.i32(), "start_ms": r.i64(), "producer_id": r.i64(),
             "epoch": r.i32(), "topics": r.compact_array(topic)}
        r.tagged()
        return s

    return r.compact_array(state)


def describe_producers(conn, topic, partitions):
    body = u.compact_array([u.compact_str(topic) + u.compact_array(
        [struct.pack(">i", p) for p in partitions]) + tag()]) + tag()
    r = conn.request(61, 0, body, flexible=True)
    r.i32()

    def producer():
        p = {"producer_id": r.i64(), "epoch": r.i32(), "last_sequence": r.i32(),
             "last_timestamp": r.i64(), "coordinator_epoch": r.i32(), "txn_start": r.i64()}
        r.tagged()
        return p

    def partition():
        p = (r.i32(), r.i16(), r.compact_str(), r.compact_array(producer))
        r.tagged()
        return p

    def topic_():
        t = (r.compact_str(), r.compact_array(partition))
        r.tagged()
        return t

    topics = r.compact_array(topic_)
    return {p[0]: (p[1], p[3]) for _, ps in topics for p in ps}


def write_txn_marker_v0(conn, topic, partition, pid, epoch, commit=False, coordinator_epoch=0):
    body = u.array32([struct.pack(">qhb", pid, epoch, 1 if commit else 0) +
                      u.array32([u.str16(topic) + u.array32([struct.pack(">i", partition)])]) +
                      struct.pack(">i", coordinator_epoch)])
    r = conn.request(27, 0, body)
    markers = r.array(lambda: (r.i64(), r.array(lambda: (r.str16(), r.array(
        lambda: (r.i32(), r.i16()))))))
    return markers[0][1][0][1][0][1]


def write_txn_marker_v1(conn, topic, partition, pid, epoch, commit=False):
    body = u.compact_array([struct.pack(">qhb", pid, epoch, 1 if commit else 0) + u.compact_array(
        [u.compact_str(topic) + u.compact_array([struct.pack(">i", partition)]) + tag()]) +
        struct.pack(">i", 0) + tag()]) + tag()
    r = conn.request(27, 1, body, flexible=True)

    def part():
        p = (r.i32(), r.i16())
        r.tagged()
        return p

    def topic_():
        t = (r.compact_str(), r.compact_array(part))
        r.tagged()
        return t

    def marker():
        m = (r.i64(), r.compact_array(topic_))
        r.tagged()
        return m

    return r.compact_array(marker)[0][1][0][1][0][1]


HANGING_PRODUCER = textwrap.dedent("""
    import sys, time
    from confluent_kafka import Producer
    bootstrap, tid, topic = sys.argv[1:4]
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid,
                  "transaction.timeout.ms": 3600000, "linger.ms": 5})
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(3):
        p.produce(topic, value=("hanging-%d" % i).encode(), partition=0)
    p.flush(30)
    print("ready", flush=True)
    time.sleep(600)
""")


class TxnAdmin(itutil.BrokerTestCase):
    overrides = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": "200",
                 "transaction.max.timeout.ms": "3600000"}

    def create(self, prefix, partitions):
        t = itutil.unique_topic(prefix)
        itutil.ck_create_topic(self.broker.bootstrap, t, partitions)
        return t

    def listed(self, *args):
        return {t["transactional_id"]: t for t in
                cli(self.broker.bootstrap, "txn", "list", *args)["transactions"]}

    def test_list_describe_and_producers_of_an_open_transaction(self):
        t = self.create("txadm", 2)
        tid = itutil.unique_topic("tid")
        p = txn.txn_producer(self.broker.bootstrap, tid, transaction_timeout_ms=120000)
        p.init_transactions(30)
        p.begin_transaction()
        txn.produce_values(p, [(t, [0])], ["c-%d" % i for i in range(3)])  # offsets 0..2
        p.commit_transaction(30)  # marker at 3
        before = int(time.time() * 1000)
        p.begin_transaction()
        txn.produce_values(p, [(t, [0, 1])], ["o-%d" % i for i in range(2)])
        p.flush(30)

        got = self.listed()[tid]
        self.assertEqual(got["state"], "Ongoing")
        pid = got["producer_id"]
        self.assertGreaterEqual(pid, 0)
        self.assertIn(tid, self.listed("--state", "Ongoing", "--state", "PrepareAbort"))
        self.assertNotIn(tid, self.listed("--state", "CompleteCommit"))
        self.assertIn(tid, self.listed("--producer-id", str(pid)))
        self.assertNotIn(tid, self.listed("--producer-id", str(pid + 1000)))
        self.assertNotIn(tid, self.listed("--min-duration-ms", "3600000"))
        time.sleep(0.05)
        self.assertIn(tid, self.listed("--min-duration-ms", "10"))

        d = cli(self.broker.bootstrap, "txn", "describe", tid)
        self.assertEqual(d["state"], "Ongoing")
        self.assertEqual(d["producer_id"], pid)
        self.assertEqual(d["producer_epoch"], 0)
        self.assertEqual(d["timeout_ms"], 120000)
        self.assertLessEqual(before, d["start_time_ms"])
        self.assertLessEqual(d["start_time_ms"], int(time.time() * 1000))
        self.assertEqual(d["topic_partitions"], [{"topic": t, "partitions": [0, 1]}])

        prods = cli(self.broker.bootstrap, "txn", "producers", t)["producers"]
        mine = {pr["partition"]: pr for pr in prods if pr["producer_id"] == pid}
        self.assertEqual(sorted(mine), [0, 1])
        self.assertEqual(mine[0]["current_txn_start_offset"], 4)  # after 3 records + a marker
        self.assertEqual(mine[1]["current_txn_start_offset"], 0)
        self.assertEqual(mine[0]["producer_epoch"], 0)
        self.assertEqual(mine[0]["last_sequence"], 4)  # 5 records of this producer
        # The coordinator epoch of the producer's last marker: the single node's 0; none yet: -1.
        self.assertEqual(mine[0]["coordinator_epoch"], 0)
        self.assertEqual(mine[1]["coordinator_epoch"], -1)
        one = cli(self.broker.bootstrap, "txn", "producers", t, "--partition", "1")["producers"]
        self.assertEqual({pr["partition"] for pr in one}, {1})

        p.commit_transaction(30)
        self.assertEqual(self.listed()[tid]["state"], "CompleteCommit")
        d = cli(self.broker.bootstrap, "txn", "describe", tid)
        self.assertEqual((d["state"], d["topic_partitions"], d["start_time_ms"]),
                         ("CompleteCommit", [], None))
        prods = cli(self.broker.bootstrap, "txn", "producers", t, "-p", "0")["producers"]
        self.assertEqual([pr["current_txn_start_offset"] for pr in prods
                          if pr["producer_id"] == pid], [None])
        self.assertBrokerAlive()

    def test_abort_ends_a_hanging_transaction(self):
        t = self.create("txhang", 1)
        proc = subprocess.Popen([sys.executable, "-c", HANGING_PRODUCER, self.broker.bootstrap,
                                 itutil.unique_topic("tid"), t], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            ready = proc.stdout.readline().strip()
        finally:
            proc.send_signal(signal.SIGKILL)  # the transaction stays open: nobody will end it
            _, err = proc.communicate()
        self.assertEqual(ready, "ready", err)
        plain = itutil.ck_producer(self.broker.bootstrap)
        after = ["after-%d" % i for i in range(4)]
        for v in after:
            plain.produce(t, value=v.encode(), partition=0)
        plain.flush(30)
        # Stuck: the LSO stays at the hanging transaction's first offset.
        self.assertEqual(txn.consume_all(self.broker.bootstrap, [(t, [0])], "read_committed"), [])
        prods = cli(self.broker.bootstrap, "txn", "producers", t)["producers"]
        open_at = [pr["current_txn_start_offset"] for pr in prods
                   if pr["current_txn_start_offset"] is not None]
        self.assertEqual(open_at, [0])

        # No transaction starts at offset 1; a partition that does not exist.
        cli(self.broker.bootstrap, "txn", "abort", "--topic", t, "--partition", "0",
            "--start-offset", "1", expect=1)
        err = cli(self.broker.bootstrap, "txn", "abort", "--topic", t, "--partition", "7",
                  "--start-offset", "0", expect=1)
        self.assertEqual(err["error"]["name"], "UNKNOWN_TOPIC_OR_PARTITION")

        out = cli(self.broker.bootstrap, "txn", "abort", "--topic", t, "--partition", "0",
                  "--start-offset", "0")
        self.assertTrue(out["aborted"])
        self.assertEqual(txn.consume_all(self.broker.bootstrap, [(t, [0])], "read_committed"),
                         sorted(after))
        ru = txn.consume_all(self.broker.bootstrap, [(t, [0])], "read_uncommitted")
        self.assertEqual(ru, sorted(after + ["hanging-%d" % i for i in range(3)]))
        prods = cli(self.broker.bootstrap, "txn", "producers", t)["producers"]
        self.assertTrue(all(pr["current_txn_start_offset"] is None for pr in prods), prods)
        # Done: nothing starts there any more.
        cli(self.broker.bootstrap, "txn", "abort", "--topic", t, "--partition", "0",
            "--start-offset", "0", expect=1)
        self.assertTrue(any("WriteTxnMarkers: ABORT marker" in line
                            for line in self.broker.log_lines))
        self.assertBrokerAlive()

    def test_raw_frames_versions_and_errors(self):
        t = self.create("txraw", 1)
        with itutil.RawConn(self.broker.port) as conn:
            _, apis = itutil.api_versions(conn)
            self.assertEqual([apis.get(k) for k in (27, 61, 65, 66)],
                             [(0, 1), (0, 0), (0, 0), (0, 1)])
            states = describe_transactions(conn, ["no-such-tid"])
            self.assertEqual([(s["id"], s["error"]) for s in states],
                             [("no-such-tid", E_TRANSACTIONAL_ID_NOT_FOUND)])
            err, unknown, listed = list_transactions(conn, states=["Bogus"])
            self.assertEqual((err, unknown, listed), (0, ["Bogus"], []))
            err, unknown, _ = list_transactions(conn, states=["Ongoing", "ongoing"], duration=0)
            self.assertEqual((err, unknown), (0, ["ongoing"]))
            self.assertEqual(describe_producers(conn, t, [0, 3]),
                             {0: (0, []), 3: (E_UNKNOWN_TOPIC_OR_PARTITION, [])})
            self.assertEqual(describe_producers(conn, "no-such-topic", [0]),
                             {0: (E_UNKNOWN_TOPIC_OR_PARTITION, [])})
            self.assertEqual(write_txn_marker_v0(conn, t, 5, 1, 0), E_UNKNOWN_TOPIC_OR_PARTITION)
            # Coordinator epochs: a marker from an older coordinator than the producer's last
            # marker is TRANSACTION_COORDINATOR_FENCED (52) and writes nothing; DescribeProducers
            # reports the epoch of the last marker.
            pid = 424242
            self.assertEqual(write_txn_marker_v0(conn, t, 0, pid, 0, coordinator_epoch=5), 0)
            end = describe_producers(conn, t, [0])
            self.assertEqual([q["coordinator_epoch"] for q in end[0][1] if q["producer_id"] == pid],
                             [5])
            self.assertEqual(write_txn_marker_v0(conn, t, 0, pid, 0, coordinator_epoch=4), 52)
            self.assertEqual(describe_producers(conn, t, [0]), end, "nothing was written")
            self.assertEqual(write_txn_marker_v0(conn, t, 0, pid, 0, coordinator_epoch=5), 0)
            self.assertEqual(write_txn_marker_v1(conn, "no-such-topic", 0, 1, 0),
                             E_UNKNOWN_TOPIC_OR_PARTITION)
        err = cli(self.broker.bootstrap, "txn", "describe", "no-such-tid", expect=1)
        self.assertEqual(err["error"]["name"], "TRANSACTIONAL_ID_NOT_FOUND")
        err = cli(self.broker.bootstrap, "txn", "list", "--state", "Bogus", expect=1)
        self.assertIn("Bogus", err["error"]["message"])
        self.assertBrokerAlive()


class TxnAdminAcls(itutil.BrokerTestCase):
    overrides = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                 "allow.everyone.if.no.acl.found": "true"}

    def test_describe_read_and_cluster_action_are_checked(self):
        b = self.broker.bootstrap
        secret = itutil.unique_topic("secret")
        itutil.ck_create_topic(b, secret, 1)
        hidden, shown = itutil.unique_topic("hidden"), itutil.unique_topic("shown")
        with itutil.RawConn(self.broker.port) as conn:
            for tid in (hidden, shown):  # WRITE on the id: allowed while it has no ACLs
                r = conn.request(22, 1, u.str16(tid) + struct.pack(">i", 60000))
                r.i32()
                self.assertEqual(r.i16(), 0)
        anon = "User:ANONYMOUS"
        cli(b, "acl", "add", "--deny-principal", anon, "--operation", "Describe",
            "--transactional-id", hidden)
        cli(b, "acl", "add", "--deny-principal", anon, "--operation", "Read", "--topic", secret)
        cli(b, "acl", "add", "--deny-principal", anon, "--operation", "ClusterAction", "--cluster")
        with itutil.RawConn(self.broker.port) as conn:
            _, _, listed = list_transactions(conn)
            ids = [s[0] for s in listed]
            self.assertIn(shown, ids)
            self.assertNotIn(hidden, ids)
            states = describe_transactions(conn, [hidden, shown])
            self.assertEqual([(s["id"], s["error"], s["state"]) for s in states],
                             [(hidden, E_TRANSACTIONAL_ID_AUTHORIZATION_FAILED, ""),
                              (shown, 0, "Empty")])
            self.assertEqual(describe_producers(conn, secret, [0]),
                             {0: (E_TOPIC_AUTHORIZATION_FAILED, [])})
            self.assertEqual(write_txn_marker_v1(conn, secret, 0, 1, 0),
                             E_CLUSTER_AUTHORIZATION_FAILED)
        self.assertBrokerAlive()


if __name__ == "__main__":
    unittest.main()
