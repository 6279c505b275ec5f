"""Connection limits over raw sockets: max.connections.per.ip closes connections past the limit
at accept; connections.max.idle.ms closes idle ones (but not one waiting in a long-poll);
and one whose client stopped reading a response; socket.request.read.timeout.ms closes a
connection that sent a frame's size and then stalls (slowloris), which holds only the bytes it
sent of the request pool; queued.max.request.bytes pauses reading while the request pool is used
up and resumes once it is given back; max.broker.partitions refuses CreateTopics/CreatePartitions past it;
the broker raises its open-files soft limit to the hard limit at start, and refuses partitions
whose estimated descriptors would pass that limit less open.files.reserved. Between cases the
broker keeps serving new connections."""
import resource
import socket
import struct
import time
import unittest

import harness
import itutil
from itutil import RawConn, unique_topic

PER_IP = 6
IDLE_MS = 1500
READ_TIMEOUT_MS = 1000
POOL = 1 << 20


def closed_within(sock, seconds):
    """True when the peer closes `sock` (EOF or reset) within `seconds`."""
    sock.settimeout(0.2)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            data = sock.recv(4096)
            if not data:
                return True
        except socket.timeout:
            continue
        except (ConnectionResetError, BrokenPipeError):
            return True
    return False


class ConnectionLimits(itutil.BrokerTestCase):
    overrides = {
        "max.connections.per.ip": str(PER_IP),
        "connections.max.idle.ms": str(IDLE_MS),
        "socket.request.read.timeout.ms": str(READ_TIMEOUT_MS),
        "queued.max.request.bytes": str(POOL),
        "max.broker.partitions": "8",
    }

    def assertServing(self):
        self.assertBrokerAlive()
        with RawConn(self.broker.port) as conn:
            err, keys = itutil.api_versions(conn, 3)
            self.assertEqual(err, 0)
            self.assertIn(18, keys)

    def test_connections_past_the_per_ip_limit_are_closed(self):
        time.sleep(IDLE_MS / 1000 + 1)  # earlier tests' connections are gone
        conns = [RawConn(self.broker.port) for _ in range(PER_IP)]
        try:
            for c in conns:  # each of the allowed ones is served
                self.assertEqual(itutil.api_versions(c, 0)[0], 0)
            extra = RawConn(self.broker.port)
            try:
                self.assertTrue(closed_within(extra.sock, 5), "connection past the limit kept open")
            finally:
                extra.close()
            self.assertEqual(itutil.api_versions(conns[0], 0)[0], 0)  # the others still work
        finally:
            for c in conns:
                c.close()
        time.sleep(0.3)
        self.assertServing()  # room again once they closed

    def test_idle_connection_is_closed_but_a_long_poll_is_not(self):
        idle = RawConn(self.broker.port)
        busy = None
        try:
            self.assertEqual(itutil.api_versions(idle, 0)[0], 0)
            topic = itutil.unique_topic("idle")
            itutil.ck_create_topic(self.broker.bootstrap, topic, 1)
            t0 = time.monotonic()
            self.assertTrue(closed_within(idle.sock, IDLE_MS / 1000 + 5), "idle connection kept")
            self.assertGreaterEqual(time.monotonic() - t0, IDLE_MS / 1000 * 0.8)
            # A Fetch waiting longer than the idle time has a request in flight: it is answered.
            busy = RawConn(self.broker.port)
            start = time.monotonic()
            r = itutil.fetch_v4(busy, topic, 0, 0, max_wait_ms=IDLE_MS + 1500)
            self.assertEqual(r["error"], 0)
            self.assertGreaterEqual(time.monotonic() - start, (IDLE_MS + 1500) / 1000 * 0.8)
        finally:
            idle.close()
            if busy:
                busy.close()
        self.assertServing()

    def test_stalled_frame_is_closed_after_the_read_timeout(self):
        conn = RawConn(self.broker.port)
        try:
            conn.send_raw(struct.pack(">i", 5000) + b"\x00\x12\x00\x00")  # size + 4 of 5000 bytes
            t0 = time.monotonic()
            self.assertTrue(closed_within(conn.sock, READ_TIMEOUT_MS / 1000 + 5), "stalled frame kept")
            elapsed = time.monotonic() - t0
            self.assertGreaterEqual(elapsed, READ_TIMEOUT_MS / 1000 * 0.8)
            self.assertLess(elapsed, IDLE_MS / 1000)  # the read deadline, not the idle reaper
        finally:
            conn.close()
        self.assertServing()

    def test_reading_pauses_while_the_request_pool_is_used_up(self):
        # Unloaded: an ApiVersions round trip is fast.
        with RawConn(self.broker.port) as c:
            t0 = time.monotonic()
            self.assertEqual(itutil.api_versions(c, 0)[0], 0)
            self.assertLess(time.monotonic() - t0, 0.5)
        # A frame of 2 MiB is started and 1.2 MiB of it sent (more than the 1 MiB pool: a frame
        # larger than the pool is still read while it holds the pool alone), then it stalls; a
        # second connection's request waits until the first one is closed by the read timeout
        # and its bytes go back to the pool, then it is answered.
        holder = RawConn(self.broker.port)
        try:
            holder.send_raw(struct.pack(">i", 2 << 20) + b"\x00\x12\x00\x00" +
                            b"\x00" * (1200 << 10))
            time.sleep(0.3)
            with RawConn(self.broker.port) as c:
                t0 = time.monotonic()
                self.assertEqual(itutil.api_versions(c, 0)[0], 0)
                waited = time.monotonic() - t0
            self.assertGreaterEqual(waited, READ_TIMEOUT_MS / 1000 * 0.5,
                                    "request was read while the pool was used up")
            self.assertTrue(closed_within(holder.sock, 5))
        finally:
            holder.close()
        self.assertServing()

    def test_slowloris_holds_only_the_bytes_it_sent(self):
        # 4 connections (max.connections.per.ip is 6) announce 1 MiB frames (the whole pool
        # each) and trickle 8 bytes: the pool is taken as bytes arrive, so they hold a few KiB
        # of it at most and a well-behaved
        # request is read at once; each of them is still closed by the read deadline, counted
        # from its size prefix.
        lorises = [RawConn(self.broker.port) for _ in range(4)]
        try:
            for c in lorises:
                c.send_raw(struct.pack(">i", 1 << 20) + b"\x00\x12\x00\x00\x00\x00\x00\x01")
            time.sleep(0.2)
            with RawConn(self.broker.port) as c:
                t0 = time.monotonic()
                self.assertEqual(itutil.api_versions(c, 0)[0], 0)
                self.assertLess(time.monotonic() - t0, READ_TIMEOUT_MS / 1000 / 2,
                                "a trickling frame held the request pool")
            t0 = time.monotonic()
            for c in lorises:
                self.assertTrue(closed_within(c.sock, READ_TIMEOUT_MS / 1000 + 5),
                                "trickling frame kept past the read deadline")
            self.assertLess(time.monotonic() - t0, IDLE_MS / 1000 + 1)
        finally:
            for c in lorises:
                c.close()
        self.assertServing()

    def test_client_that_stops_reading_a_response_is_reaped_as_idle(self):
        # Kafka's rule: a connection that moves no bytes for connections.max.idle.ms is idle,
        # also when it is because its client stopped reading a response (which would otherwise
        # pin that response forever).
        topic = itutil.unique_topic("stall")
        itutil.ck_create_topic(self.broker.bootstrap, topic, 1)
        p = itutil.ck_producer(self.broker.bootstrap)
        value = b"x" * 100000
        itutil.ck_produce_all(p, [{"topic": topic, "partition": 0, "value": value}
                                  for _ in range(120)])
        del p  # its connections count against max.connections.per.ip
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: small window
        sock.connect(("127.0.0.1", self.broker.port))
        try:
            body = struct.pack(">iiiib", -1, 0, 1, 32 << 20, 0)
            body += itutil.array32([itutil.str16(topic) + itutil.array32(
                [struct.pack(">iqi", 0, 0, 32 << 20)])])
            sock.sendall(itutil.request_frame(1, 4, 1, body))
            time.sleep(IDLE_MS / 1000 + 2)  # reads nothing meanwhile
            received, closed = 0, False
            sock.settimeout(3)
            try:
                while True:
                    chunk = sock.recv(1 << 20)
                    if not chunk:
                        closed = True
                        break
                    received += len(chunk)
            except (ConnectionResetError, BrokenPipeError):
                closed = True
            except socket.timeout:
                pass
            self.assertTrue(closed, "connection kept open with a stalled response (%d bytes "
                            "read)" % received)
            self.assertLess(received, 120 * 100000, "the whole response was written")
        finally:
            sock.close()
        self.assertServing()

    def test_open_files_soft_limit_is_raised_to_the_hard_limit(self):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        low = min(256, hard)
        if low == hard:
            self.skipTest("hard RLIMIT_NOFILE is too low to lower the soft one under it")
        resource.setrlimit(resource.RLIMIT_NOFILE, (low, hard))  # inherited by the broker
        try:
            b = harness.BrokerProcess().start()
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        try:
            with open("/proc/%d/limits" % b.proc.pid) as f:
                line = next(l for l in f if l.startswith("Max open files"))
            got_soft, got_hard = line.split()[3:5]
            self.assertEqual(int(got_soft), hard, line)
            self.assertEqual(int(got_hard), hard, line)
            expect = "open files limit: %d (soft limit was %d, hard limit %d)" % (hard, low, hard)
            self.assertTrue(any(expect in l for l in b.log_lines), "\n".join(b.log_lines[:20]))
        finally:
            b.stop()
            b.cleanup()

    def test_zz_partition_cap_refuses_creations_past_it(self):
        from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
        from confluent_kafka import KafkaException
        admin = AdminClient({"bootstrap.servers": self.broker.bootstrap})

        def create(name, n):
            fut = admin.create_topics([NewTopic(name, n, 1)])[name]
            try:
                fut.result(30)
                return 0
            except KafkaException as e:
                return e.args[0].code()

        def grow(name, n):
            fut = admin.create_partitions([NewPartitions(name, n)])[name]
            try:
                fut.result(30)
                return 0
            except KafkaException as e:
                return e.args[0].code()

        md = admin.list_topics(timeout=10)
        held = sum(len(t.partitions) for t in md.topics.values())
        a = unique_topic("cap-a")
        self.assertEqual(create(a, 8 - held - 2), 0)
        self.assertEqual(create(unique_topic("cap-b"), 3), 44)  # POLICY_VIOLATION
        self.assertEqual(grow(a, 8 - held), 0)  # exactly at the cap
        self.assertEqual(grow(a, 8 - held + 1), 44)
        self.assertServing()

    def test_zz_descriptor_budget_refuses_creations_past_it(self):
        """Under `ulimit -n 300` (soft and hard: the broker cannot raise it) with
        open.files.reserved=100, partitions may hold about 200 descriptors, 4 per new log
        partition: 60 partitions get POLICY_VIOLATION and nothing is created, 4 are created and
        serve produce and consume, growing them to 60 is refused; the estimate and the budget are
        gauges."""
        from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
        from confluent_kafka import KafkaException
        from test_metrics import Scrape
        b = harness.BrokerProcess(overrides={"open.files.reserved": "100"}, nofile=300).start()
        try:
            self.assertTrue(any("open files limit: 300 " in l for l in b.log_lines),
                            "\n".join(b.log_lines[:20]))
            admin = AdminClient({"bootstrap.servers": b.bootstrap})

            def code(fut):
                try:
                    fut.result(30)
                    return 0, ""
                except KafkaException as e:
                    return e.args[0].code(), e.args[0].str()

            before = Scrape(b)
            self.assertEqual(before.get("strata_partition_open_files_budget"), 200)
            held = before.get("strata_partition_open_files_estimate")
            big, small = unique_topic("fd-big"), unique_topic("fd-small")
            err, msg = code(admin.create_topics([NewTopic(big, 60, 1)])[big])
            self.assertEqual(err, 44, msg)  # POLICY_VIOLATION
            self.assertIn("open.files.reserved", msg)
            self.assertNotIn(big, admin.list_topics(timeout=10).topics)
            self.assertEqual(code(admin.create_topics([NewTopic(small, 4, 1)])[small]), (0, ""))
            err, msg = code(admin.create_partitions([NewPartitions(small, 60)])[small])
            self.assertEqual(err, 44, msg)
            self.assertEqual(len(admin.list_topics(timeout=10).topics[small].partitions), 4)
            self.assertEqual(Scrape(b).get("strata_partition_open_files_estimate"), held + 16)
            p = itutil.ck_producer(b.bootstrap)
            itutil.ck_produce_all(p, [{"topic": small, "partition": i % 4, "value": b"v%d" % i}
                                      for i in range(40)])
            got = itutil.ck_consume(b.bootstrap, small, range(4), 40)
            self.assertEqual(sorted(m.value() for m in got), sorted(b"v%d" % i for i in range(40)))
            with RawConn(b.port) as conn:
                self.assertEqual(itutil.api_versions(conn, 3)[0], 0)
            self.assertTrue(b.alive())
        finally:
            b.stop()
            b.cleanup()


if __name__ == "__main__":
    unittest.main(verbosity=2)
