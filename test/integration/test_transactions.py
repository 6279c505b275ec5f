"""Transactions on a single node (docs/transactions.md), with confluent-kafka (librdkafka)
transactional producers and consumers:
- commit and abort across several partitions of two topics: a read_committed consumer sees exactly
  the committed records, a read_uncommitted one sees every record;
- zombie fencing: a second producer with the same transactional.id aborts the first one's open
  transaction and fences it (its commit fails, its records are never visible to read_committed);
- send_offsets_to_transaction: the group's offsets are committed only when the transaction
  commits (an aborted transaction leaves them unchanged);
- a transaction open longer than its transaction.timeout.ms is aborted by the broker's sweep;
- a consume-transform-produce pipeline (txn_pipeline.py) killed with SIGKILL at random points 10
  times and restarted produces every input record exactly once;
- the coordinator's state survives kill -9 (__transaction_state): an open transaction is committed
  by its producer after the restart, or aborted by a new instance of its transactional id; a crash
  between two COMMIT markers (a failpoint) is finished at start; a transaction whose state is gone
  is aborted at start, so read_committed consumers are not blocked;
- kafka-python 2.0.2 reads uncommitted records and hands markers to the application as records;
- KafkaJS 2.2.4 (js/transactions.js): commit, abort and sendOffsets; its read_committed consumer
  sees exactly the committed records;
- raw frames: ApiVersions advertises the transaction APIs 0-3, FindCoordinator key_type 1 names
  this broker, InitProducerId above transaction.max.timeout.ms is INVALID_TRANSACTION_TIMEOUT, and
  a transactional batch for a partition that is not in the producer's transaction is
  INVALID_TXN_STATE (nothing written)."""
import os
import shutil
import struct
import time
import unittest

import harness
import itutil

E_INVALID_TXN_STATE, E_INVALID_TRANSACTION_TIMEOUT = 48, 50


def consume_all(bootstrap, topics_parts, isolation, timeout=30):
    """Reads every listed partition from the beginning to its end (EOF: the LSO for
    read_committed) and returns the values, sorted."""
    from confluent_kafka import TopicPartition, OFFSET_BEGINNING, KafkaError
    c = itutil.ck_consumer(bootstrap, isolation_level=isolation)
    try:
        tps = [TopicPartition(t, p, OFFSET_BEGINNING) for t, ps in topics_parts for p in ps]
        c.assign(tps)
        eof = set()
        out = []
        deadline = time.time() + timeout
        while len(eof) < len(tps):
            if time.time() > deadline:
                raise AssertionError("EOF on %d of %d partitions within %ss" %
                                     (len(eof), len(tps), timeout))
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    eof.add((m.topic(), m.partition()))
                    continue
                raise AssertionError("consumer error: %s" % m.error())
            eof.discard((m.topic(), m.partition()))
            out.append(m.value().decode())
        return sorted(out)
    finally:
        c.close()


def txn_producer(bootstrap, txn_id, **extra):
    from confluent_kafka import Producer
    conf = {"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 5}
    conf.update({k.replace("_", "."): v for k, v in extra.items()})
    return Producer(conf)


def produce_values(p, targets, values):
    """Produces each value to every (topic, partition) of targets, value suffixed with where."""
    sent = []
    for t, ps in targets:
        for part in ps:
            for v in values:
                s = "%s@%s-%d" % (v, t, part)
                p.produce(t, value=s.encode(), partition=part)
                sent.append(s)
    return sent


class Transactions(itutil.BrokerTestCase):
    overrides = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": "200",
                 "transaction.max.timeout.ms": "300000"}

    def create(self, prefix, partitions):
        t = itutil.unique_topic(prefix)
        itutil.ck_create_topic(self.broker.bootstrap, t, partitions)
        return t

    def test_commit_and_abort_across_partitions_and_two_topics(self):
        a, b = self.create("txa", 3), self.create("txb", 2)
        targets = [(a, [0, 1, 2]), (b, [0, 1])]
        p = txn_producer(self.broker.bootstrap, itutil.unique_topic("tid"))
        p.init_transactions(30)
        p.begin_transaction()
        committed = produce_values(p, targets, ["c1-%d" % i for i in range(5)])
        p.commit_transaction(30)
        p.begin_transaction()
        aborted = produce_values(p, targets, ["ab-%d" % i for i in range(5)])
        p.flush(30)  # the records are in the logs before the abort
        p.abort_transaction(30)
        p.begin_transaction()
        committed += produce_values(p, targets, ["c2-%d" % i for i in range(3)])
        p.commit_transaction(30)
        # Still open while we read: a read_committed reader stops at its first offset.
        p.begin_transaction()
        open_vals = produce_values(p, targets, ["open-%d" % i for i in range(2)])
        p.flush(30)

        rc = consume_all(self.broker.bootstrap, targets, "read_committed")
        self.assertEqual(rc, sorted(committed))
        ru = consume_all(self.broker.bootstrap, targets, "read_uncommitted")
        self.assertEqual(ru, sorted(committed + aborted + open_vals))
        p.commit_transaction(30)
        rc = consume_all(self.broker.bootstrap, targets, "read_committed")
        self.assertEqual(rc, sorted(committed + open_vals))
        self.assertBrokerAlive()

    def test_zombie_is_fenced_by_a_new_instance(self):
        from confluent_kafka import KafkaException
        t = self.create("txz", 2)
        targets = [(t, [0, 1])]
        tid = itutil.unique_topic("tid")
        p1 = txn_producer(self.broker.bootstrap, tid)
        p1.init_transactions(30)
        p1.begin_transaction()
        zombie = produce_values(p1, targets, ["z-%d" % i for i in range(4)])
        p1.flush(30)
        # The new instance aborts p1's open transaction (epoch bump) and takes over.
        p2 = txn_producer(self.broker.bootstrap, tid)
        p2.init_transactions(30)
        p2.begin_transaction()
        good = produce_values(p2, targets, ["g-%d" % i for i in range(4)])
        p2.commit_transaction(30)
        with self.assertRaises(KafkaException):
            produce_values(p1, targets, ["late"])
            p1.commit_transaction(10)
        rc = consume_all(self.broker.bootstrap, targets, "read_committed")
        self.assertEqual(rc, sorted(good))
        for z in zombie:
            self.assertNotIn(z, rc)
        self.assertBrokerAlive()

    def test_send_offsets_to_transaction_commits_offsets_only_on_commit(self):
        from confluent_kafka import TopicPartition
        src, dst = self.create("txin", 2), self.create("txout", 1)
        plain = itutil.ck_producer(self.broker.bootstrap)
        itutil.ck_produce_all(plain, [{"topic": src, "value": b"in-%d" % i, "partition": i % 2}
                                      for i in range(10)])
        group = itutil.unique_topic("eos-group")
        consumer = itutil.ck_consumer(self.broker.bootstrap, group_id=group,
                                      isolation_level="read_committed")
        consumer.assign([TopicPartition(src, 0, 0), TopicPartition(src, 1, 0)])
        got = []
        deadline = time.time() + 30
        while len(got) < 10 and time.time() < deadline:
            m = consumer.poll(0.5)
            if m is not None and not m.error():
                got.append(m)
        self.assertEqual(len(got), 10)
        positions = consumer.position([TopicPartition(src, 0), TopicPartition(src, 1)])
        self.assertEqual(sorted(tp.offset for tp in positions), [5, 5])

        p = txn_producer(self.broker.bootstrap, itutil.unique_topic("tid"))
        p.init_transactions(30)
        p.begin_transaction()
        for m in got:
            p.produce(dst, value=b"out-" + m.value(), partition=0)
        p.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 30)
        p.abort_transaction(30)

        def committed():
            tps = consumer.committed([TopicPartition(src, 0), TopicPartition(src, 1)], timeout=10)
            return sorted(tp.offset for tp in tps)

        self.assertTrue(all(o < 0 for o in committed()), committed())  # nothing committed
        p.begin_transaction()
        for m in got:
            p.produce(dst, value=b"out-" + m.value(), partition=0)
        p.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 30)
        p.commit_transaction(30)
        self.assertEqual(committed(), [5, 5])
        out = consume_all(self.broker.bootstrap, [(dst, [0])], "read_committed")
        self.assertEqual(out, sorted("out-" + m.value().decode() for m in got))
        consumer.close()

    def test_transaction_past_its_timeout_is_aborted(self):
        from confluent_kafka import KafkaException
        t = self.create("txt", 1)
        p = txn_producer(self.broker.bootstrap, itutil.unique_topic("tid"),
                         transaction_timeout_ms=2000, message_timeout_ms=2000)
        p.init_transactions(30)
        p.begin_transaction()
        produce_values(p, [(t, [0])], ["late-%d" % i for i in range(3)])
        p.flush(30)
        time.sleep(3.5)  # the sweep (every 200 ms) aborts it, bumping the epoch
        # The partition's transaction is closed by the ABORT marker: read_committed reaches the end.
        self.assertEqual(consume_all(self.broker.bootstrap, [(t, [0])], "read_committed"), [])
        with self.assertRaises(KafkaException):
            p.commit_transaction(10)
        self.assertTrue(any("aborted" in line and "longer than" in line
                            for line in self.broker.log_lines), "no timeout abort in the log")

    def test_consume_transform_produce_killed_10_times_is_exactly_once(self):
        # txn_pipeline.py copies src -> dst in transactions with send_offsets_to_transaction; it
        # is killed with SIGKILL at random points 10 times and restarted (same transactional.id
        # and group), then runs until src is drained: dst read_committed = src transformed, each
        # record exactly once, and the group's committed offsets = src's ends.
        import random
        import signal
        import subprocess
        import sys
        from confluent_kafka import TopicPartition
        src, dst = self.create("ctp-in", 3), self.create("ctp-out", 3)
        group, tid = itutil.unique_topic("ctpg"), itutil.unique_topic("ctpt")
        n = 3000
        p = itutil.ck_producer(self.broker.bootstrap)
        inputs = []
        for i in range(n):
            v = "r%05d" % i
            p.produce(src, value=v.encode(), partition=i % 3)
            inputs.append("out-%s@%d" % (v, i % 3))
        p.flush(30)
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "txn_pipeline.py")
        rng = random.Random(1234)

        def start(seed):
            return subprocess.Popen([sys.executable, script, self.broker.bootstrap, src, dst,
                                     group, tid, "3", str(seed)],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for cycle in range(10):
            proc = start(cycle)
            try:
                # Kill at a random point once it has made progress (its first commit).
                line = proc.stdout.readline().strip()  # (stderr only on failure: read() waits)
                while line == "READY":
                    line = proc.stdout.readline().strip()
                if not line.startswith("COMMITTED"):
                    self.fail("pipeline did not commit: %s %s" % (line, proc.stderr.read()))
                time.sleep(rng.uniform(0.0, 0.5))
            finally:
                proc.send_signal(signal.SIGKILL)
                proc.wait(10)
        proc = start(99)
        out, err = proc.communicate(timeout=300)
        self.assertEqual(proc.returncode, 0, out + err)
        self.assertIn("DONE", out)

        from confluent_kafka import OFFSET_BEGINNING, KafkaError
        c = itutil.ck_consumer(self.broker.bootstrap, isolation_level="read_committed")
        got = []
        try:
            c.assign([TopicPartition(dst, q, OFFSET_BEGINNING) for q in range(3)])
            eof, deadline = set(), time.time() + 60
            while len(eof) < 3 and time.time() < deadline:
                m = c.poll(0.5)
                if m is None:
                    continue
                if m.error():
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        eof.add(m.partition())
                    continue
                eof.discard(m.partition())
                got.append("%s@%d" % (m.value().decode(), m.partition()))
        finally:
            c.close()
        self.assertEqual(len(got), len(set(got)), "a record came out twice")
        self.assertEqual(sorted(got), sorted(inputs))
        # The kills did cut transactions: read_uncommitted sees their aborted output too.
        everything = consume_all(self.broker.bootstrap, [(dst, [0, 1, 2])], "read_uncommitted")
        self.assertGreater(len(everything), n, "no kill landed inside a transaction")
        # The group of the pipeline (read with its id): committed = the end of each partition.
        g = itutil.ck_consumer(self.broker.bootstrap, group_id=group)
        try:
            ends = g.committed([TopicPartition(src, q) for q in range(3)], timeout=30)
        finally:
            g.close()
        self.assertEqual(sorted(tp.offset for tp in ends), [1000, 1000, 1000])

    def test_kafkajs_commit_abort_and_send_offsets(self):
        import json
        import subprocess
        js = os.path.join(os.path.dirname(os.path.abspath(__file__)), "js")
        t = self.create("txjs", 3)
        group = itutil.unique_topic("gjs")
        p = subprocess.run(["node", os.path.join(js, "transactions.js"), self.broker.bootstrap, t,
                            itutil.unique_topic("tidjs"), group],
                           cwd=js, capture_output=True, text=True, timeout=180)
        self.assertEqual(p.returncode, 0, "node failed:\n%s\n%s" % (p.stdout, p.stderr))
        line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
        self.assertEqual(len(line), 1, p.stdout + p.stderr)
        res = json.loads(line[0][len("RESULT "):])
        committed = sorted(res["committed1"] + res["committed2"])
        self.assertEqual(sorted(res["seen"]), committed, "KafkaJS read_committed consumer")
        targets = [(t, [0, 1, 2])]
        self.assertEqual(consume_all(self.broker.bootstrap, targets, "read_committed"), committed)
        self.assertEqual(consume_all(self.broker.bootstrap, targets, "read_uncommitted"),
                         sorted(committed + res["aborted"]))
        offsets = {int(o["partition"]): o["offset"] for o in res["offsets"][0]["partitions"]}
        self.assertEqual(offsets, {0: "5", 1: "-1", 2: "7"}, "sendOffsets committed with txn 3")

    def test_kafka_python_reads_uncommitted_and_sees_markers_as_records(self):
        # kafka-python 2.0.2 has no isolation level (always read_uncommitted) and its fetcher never
        # checks a batch's control flag: markers reach the application as ordinary records (key =
        # version 0 + type, 0 ABORT / 1 COMMIT; value = version 0 + coordinator epoch). Pinned
        # here because docs/transactions.md warns about it.
        t = self.create("txkp", 1)
        p = txn_producer(self.broker.bootstrap, itutil.unique_topic("tidkp"))
        p.init_transactions(30)
        p.begin_transaction()
        committed = produce_values(p, [(t, [0])], ["c-%d" % i for i in range(3)])
        p.commit_transaction(30)
        p.begin_transaction()
        aborted = produce_values(p, [(t, [0])], ["a-%d" % i for i in range(2)])
        p.flush(30)  # else librdkafka's abort purges them unsent
        p.abort_transaction(30)
        got = itutil.kp_consume(self.broker.bootstrap, t, [0], 7)
        data = [m.value.decode() for m in got if m.key is None]
        markers = [(m.offset, m.key, m.value) for m in got if m.key is not None]
        self.assertEqual(data, committed + aborted)
        self.assertEqual([(o, k) for o, k, _ in markers],
                         [(3, b"\x00\x00\x00\x01"), (6, b"\x00\x00\x00\x00")])
        self.assertEqual([v for _, _, v in markers], [b"\x00\x00\x00\x00\x00\x00"] * 2)

    def test_raw_frames(self):
        t = self.create("txraw", 1)
        with itutil.RawConn(self.broker.port) as conn:
            _, apis = itutil.api_versions(conn)
            for k in (24, 25, 26, 28):
                self.assertEqual(apis.get(k), (0, 3), k)
            # FindCoordinator v1, key_type 1: this broker.
            r = conn.request(10, 1, itutil.str16("raw-tid") + struct.pack(">b", 1))
            r.i32()
            err, _msg, node, _host, port = r.i16(), r.str16(), r.i32(), r.str16(), r.i32()
            self.assertEqual(err, 0)
            self.assertEqual(port, self.broker.port)

            def init(tid, timeout_ms):
                r = conn.request(22, 1, itutil.str16(tid) + struct.pack(">i", timeout_ms))
                r.i32()
                return r.i16(), r.i64(), r.i16()

            self.assertEqual(init("raw-tid", 300001)[0], E_INVALID_TRANSACTION_TIMEOUT)
            err, pid, epoch = init("raw-tid", 60000)
            self.assertEqual(err, 0)
            # A transactional batch of a partition never added to the transaction.
            ts = int(time.time() * 1000)
            raw = itutil.encode_record(0, None, b"nope", ())
            after_crc = struct.pack(">hiqqqhii", 0x10, 0, ts, ts, pid, epoch, 0, 1) + raw
            after_len = struct.pack(">ibI", -1, 2, itutil.crc32c(after_crc)) + after_crc
            batch = struct.pack(">qi", 0, len(after_len)) + after_len
            body = itutil.str16("raw-tid") + struct.pack(">hi", -1, 10000) + itutil.array32(
                [itutil.str16(t) + itutil.array32([struct.pack(">i", 0) + itutil.bytes32(batch)])])
            r = conn.request(0, 7, body)
            r.i32()
            r.str16()
            r.i32()
            _idx, perr = r.i32(), r.i16()
            self.assertEqual(perr, E_INVALID_TXN_STATE)
        self.assertEqual(consume_all(self.broker.bootstrap, [(t, [0])], "read_uncommitted"), [])

    def test_raw_offsets_require_stable_and_fencing_codes_per_version(self):
        t = self.create("txoff", 1)
        u = itutil
        with u.RawConn(self.broker.port) as conn:
            def init(tid):
                r = conn.request(22, 1, u.str16(tid) + struct.pack(">i", 60000))
                r.i32()
                return r.i16(), r.i64(), r.i16()

            def add_offsets(tid, pid, epoch, group):
                r = conn.request(25, 0, u.str16(tid) + struct.pack(">qh", pid, epoch) +
                                 u.str16(group))
                r.i32()
                return r.i16()

            def txn_offset_commit(tid, group, pid, epoch, offset):
                parts = u.array32([struct.pack(">iq", 0, offset) + u.str16(None)])
                body = (u.str16(tid) + u.str16(group) + struct.pack(">qh", pid, epoch) +
                        u.array32([u.str16(t) + parts]))
                r = conn.request(28, 0, body)
                r.i32()
                return r.array(lambda: (r.str16(), r.array(lambda: (r.i32(), r.i16()))))

            def offset_fetch_v7(group, require_stable):
                body = (u.compact_str(group) +
                        u.compact_array([u.compact_str(t) + u.compact_array(
                            [struct.pack(">i", 0)]) + u.uvarint(0)]) +
                        struct.pack(">b", 1 if require_stable else 0) + u.uvarint(0))
                r = conn.request(9, 7, body, flexible=True)
                r.i32()

                def part():
                    out = (r.i32(), r.i64(), r.i32(), r.compact_str(), r.i16())
                    r.tagged()
                    return out

                def topic():
                    name, ps = r.compact_str(), r.compact_array(part)
                    r.tagged()
                    return name, ps

                topics = r.compact_array(topic)
                return topics[0][1][0][1], topics[0][1][0][4]  # offset, error

            def end_txn(tid, pid, epoch, commit, version=0):
                r = conn.request(26, version, u.str16(tid) + struct.pack(">qhb", pid, epoch,
                                                                        1 if commit else 0))
                r.i32()
                return r.i16()

            tid, group = "raw-off-tid", u.unique_topic("raw-group")
            err, pid, epoch = init(tid)
            self.assertEqual(err, 0)
            self.assertEqual(add_offsets(tid, pid, epoch, group), 0)
            self.assertEqual(txn_offset_commit(tid, group, pid, epoch, 42), [(t, [(0, 0)])])
            self.assertEqual(offset_fetch_v7(group, True), (-1, 88))  # UNSTABLE_OFFSET_COMMIT
            self.assertEqual(offset_fetch_v7(group, False), (-1, 0))  # not committed yet
            self.assertEqual(end_txn(tid, pid, epoch, True), 0)
            self.assertEqual(offset_fetch_v7(group, True), (42, 0))
            self.assertEqual(end_txn(tid, pid, epoch, True), 0)  # a retry is idempotent
            self.assertEqual(end_txn(tid, pid, epoch, False), E_INVALID_TXN_STATE)
            # A new instance fences the old epoch: INVALID_PRODUCER_EPOCH before EndTxn v2,
            # PRODUCER_FENCED from v2; TxnOffsetCommit (v0-3) always INVALID_PRODUCER_EPOCH.
            err, pid2, epoch2 = init(tid)
            self.assertEqual((err, pid2, epoch2), (0, pid, epoch + 1))
            self.assertEqual(end_txn(tid, pid, epoch, True, version=1), 47)
            self.assertEqual(end_txn(tid, pid, epoch, True, version=2), 90)
            self.assertEqual(txn_offset_commit(tid, group, pid, epoch, 7), [(t, [(0, 47)])])
            self.assertEqual(add_offsets("nobody", pid, epoch, group), 49)  # unknown id
        self.assertBrokerAlive()


class TransactionsAcrossRestart(itutil.BrokerTestCase):
    """The coordinator's state is durable in __transaction_state: a restart loses no transaction."""

    def restart_same_port(self, clean, env=None):
        # The same port, so that producers connected before find the broker again.
        self.broker.overrides["listeners"] = "PLAINTEXT://127.0.0.1:%d" % self.broker.port
        self.broker.env = env
        self.broker.restart(clean=clean)

    def new_log_lines(self, since):
        return self.broker.log_lines[since:]

    def topic(self, partitions):
        t = itutil.unique_topic("txr")
        itutil.ck_create_topic(self.broker.bootstrap, t, partitions)
        return [(t, list(range(partitions)))]

    def open_transaction(self, targets, prefix, n):
        """A transactional producer with an open transaction holding n values per partition."""
        p = txn_producer(self.broker.bootstrap, itutil.unique_topic("tid"))
        p.init_transactions(30)
        p.begin_transaction()
        sent = produce_values(p, targets, ["%s-%d" % (prefix, i) for i in range(n)])
        p.flush(30)
        return p, sent

    def test_open_transaction_survives_a_crash_and_commits(self):
        targets = self.topic(2)
        p, sent = self.open_transaction(targets, "open", 3)
        mark = len(self.broker.log_lines)
        self.restart_same_port(clean=False)  # kill -9 with the transaction open
        lines = self.new_log_lines(mark)
        self.assertTrue(any("1 ongoing" in line for line in lines), "state not loaded")
        self.assertFalse(any("aborted the transaction of producer" in line for line in lines))
        p.commit_transaction(60)  # the same producer, after the restart
        self.assertEqual(consume_all(self.broker.bootstrap, targets, "read_committed"),
                         sorted(sent))

    def test_new_instance_after_a_crash_aborts_the_open_transaction(self):
        targets = self.topic(2)
        tid = itutil.unique_topic("tid")
        p = txn_producer(self.broker.bootstrap, tid)
        p.init_transactions(30)
        p.begin_transaction()
        kept = produce_values(p, targets, ["kept-%d" % i for i in range(3)])
        p.commit_transaction(30)
        p.begin_transaction()
        lost = produce_values(p, targets, ["lost-%d" % i for i in range(3)])
        p.flush(30)
        del p
        self.broker.restart(clean=False)  # kill -9 with the transaction open
        p2 = txn_producer(self.broker.bootstrap, tid)
        p2.init_transactions(30)  # fences the old instance: its open transaction is aborted
        self.assertEqual(consume_all(self.broker.bootstrap, targets, "read_committed"),
                         sorted(kept))
        self.assertEqual(consume_all(self.broker.bootstrap, targets, "read_uncommitted"),
                         sorted(kept + lost))
        p2.begin_transaction()
        more = produce_values(p2, targets, ["more-%d" % i for i in range(2)])
        p2.commit_transaction(30)
        self.assertEqual(consume_all(self.broker.bootstrap, targets, "read_committed"),
                         sorted(kept + more))

    def test_crash_between_markers_finishes_the_commit_at_start(self):
        import threading
        from confluent_kafka import KafkaException
        # The broker dies (as with kill -9) right before the second COMMIT marker: one partition
        # has its marker, the other two not. The restart finds PrepareCommit and writes the rest.
        self.restart_same_port(clean=True, env={"STRATA_FAILPOINTS": "txn.write_marker=crash@2"})
        targets = self.topic(3)
        p, sent = self.open_transaction(targets, "c", 4)
        outcome = {}

        def commit():
            deadline = time.time() + 90
            while True:
                try:
                    p.commit_transaction(60)
                    outcome["ok"] = True
                    return
                except KafkaException as e:  # retriable while the broker is down
                    if not e.args[0].retriable() or time.time() > deadline:
                        outcome["error"] = e
                        return
                    time.sleep(0.2)

        th = threading.Thread(target=commit)
        th.start()
        harness.wait_until(lambda: not self.broker.alive(), timeout=30, what="the failpoint crash")
        self.assertTrue(any("failpoint txn.write_marker: crashing" in line
                            for line in self.broker.log_lines))
        mark = len(self.broker.log_lines)
        self.restart_same_port(clean=False)
        th.join(120)
        self.assertEqual(outcome, {"ok": True})
        lines = self.new_log_lines(mark)
        self.assertTrue(any("finishing its commit" in line for line in lines), "\n".join(lines))
        self.assertEqual(consume_all(self.broker.bootstrap, targets, "read_committed"),
                         sorted(sent))

    def test_open_transaction_without_coordinator_state_is_aborted_at_start(self):
        # A transaction whose coordinator state is gone (a data directory from a version that kept
        # it in memory; __transaction_state removed) would block read_committed consumers forever.
        targets = self.topic(2)
        p = txn_producer(self.broker.bootstrap, itutil.unique_topic("tid"))
        p.init_transactions(30)
        p.begin_transaction()
        kept = produce_values(p, targets, ["kept-%d" % i for i in range(2)])
        p.commit_transaction(30)
        p.begin_transaction()
        produce_values(p, targets, ["lost-%d" % i for i in range(2)])
        p.flush(30)
        del p
        self.broker.kill()
        logs = os.path.join(self.broker.data_dir, "logs")
        for d in os.listdir(logs):
            if d.startswith("__transaction_state-"):
                shutil.rmtree(os.path.join(logs, d))
        mark = len(self.broker.log_lines)
        self.broker.start()
        self.assertTrue(any("aborted the transaction of producer" in line
                            for line in self.new_log_lines(mark)), "no orphan abort in the log")
        self.assertEqual(consume_all(self.broker.bootstrap, targets, "read_committed"),
                         sorted(kept))


if __name__ == "__main__":
    unittest.main()
