"""Clients that vanish mid-response must not take the broker down. With the metrics endpoint off
(`metrics.listener=`, so that only the broker's own handling can be what keeps SIGPIPE away),
raw connections ask for tens of MB — a Fetch of 8 partitions from offset 0 (answered with
sendfile(2)), a PK table's ReadChangelog (16003) and Scan (16002) with large budgets — and close the
socket right after sending or after reading a few bytes, half of them with SO_LINGER 0 (an RST).
The broker then writes into a dead socket: without SIGPIPE ignored that kills the process (exit by
signal 13). Meanwhile a well-behaved client keeps producing and fetching, and at the end the broker
is alive and serves a produce + consume."""
import os
import socket
import struct
import threading
import time
import unittest

import itutil
from itutil import BrokerTestCase, RawConn, array32, str16, unique_topic
from test_pk_reads import read_changelog, scan
from test_pk_tables import murmur2_partition, pb_int, pb_len

API_SCAN = 16002
API_READ_CHANGELOG = 16003
LOG_PARTITIONS = 8
LOG_VALUE = 100 * 1024
LOG_MESSAGES_PER_PARTITION = 60  # 8 x 60 x 100 KiB = 48 MiB
PK_PARTITIONS = 2
PK_VALUE = 64 * 1024
PK_ROWS = 160  # 10 MiB of rows, 5 MiB per partition
ROUNDS = 20


def fetch_v4_body(topic, partitions, max_bytes=50 << 20, partition_max_bytes=50 << 20):
    """Fetch v4 from offset 0 of every partition, answered at once (max_wait 0, min_bytes 1)."""
    body = struct.pack(">iiiib", -1, 0, 1, max_bytes, 0)
    parts = [struct.pack(">iqi", p, 0, partition_max_bytes) for p in partitions]
    return body + array32([str16(topic) + array32(parts)])


def read_changelog_body(topic, partitions):
    body = pb_len(1, topic.encode())
    for p in partitions:  # max_records 10000, max_bytes 16 MiB (the clamp)
        body += pb_len(2, pb_int(1, p) + pb_int(2, 0) + pb_int(3, 10000) + pb_int(4, 16 << 20))
    return body


def scan_body(topic, partition):
    return pb_len(1, topic.encode()) + pb_int(2, partition) + pb_int(3, 10000) + \
        pb_int(5, 16 << 20)


class DisconnectsTest(BrokerTestCase):
    overrides = {"metrics.listener": ""}

    def abandon(self, api_key, body, round_no):
        """Sends one request on a fresh connection and drops the connection: right after sending
        (even rounds) or after the first few response bytes (odd rounds); every other pair of
        rounds with SO_LINGER 0, so the close is an RST instead of a FIN."""
        s = socket.create_connection(("127.0.0.1", self.broker.port), timeout=10)
        try:
            if round_no % 4 >= 2:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            # Small receive buffer: the broker's writes back up and it is mid-response at close.
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.sendall(itutil.request_frame(api_key, 0 if api_key >= 16000 else 4, round_no + 1,
                                           body, flexible=api_key >= 16000))
            if round_no % 2:
                try:
                    s.recv(64)
                except OSError:
                    pass
        finally:
            s.close()

    def broker_state(self):
        rc = self.broker.proc.poll()
        return "alive" if rc is None else "exited with %d (negative = killed by that signal)" % rc

    def test_abandoned_large_responses_do_not_kill_the_broker(self):
        from confluent_kafka import KafkaError  # noqa: F401 (fails early if the client is missing)
        b = self.broker.bootstrap
        t0 = time.time()
        log_topic = unique_topic("disc-log")
        pk_topic = unique_topic("disc-pk")
        ok_topic = unique_topic("disc-ok")
        itutil.ck_create_topic(b, log_topic, LOG_PARTITIONS)
        itutil.ck_create_topic(b, pk_topic, PK_PARTITIONS, {"table.type": "primary-key"})
        itutil.ck_create_topic(b, ok_topic, 1)
        blob = os.urandom(LOG_VALUE + 4096)  # incompressible; each value a different slice
        producer = itutil.ck_producer(b, linger_ms=20, batch_size=1000000)
        itutil.ck_produce_all(producer, (
            dict(topic=log_topic, partition=p, value=blob[i:i + LOG_VALUE])
            for i in range(LOG_MESSAGES_PER_PARTITION) for p in range(LOG_PARTITIONS)), timeout=120)
        pk_blob = os.urandom(PK_VALUE + 4096)
        rows = []
        for i in range(PK_ROWS):
            key = b"row-%04d" % i
            rows.append(dict(topic=pk_topic, key=key, partition=murmur2_partition(key, PK_PARTITIONS),
                             value=pk_blob[i:i + PK_VALUE]))
        itutil.ck_produce_all(producer, rows, timeout=120)
        print("\nfilled 48 MiB of log and %d PK rows in %.1f s" % (PK_ROWS, time.time() - t0))

        # The well-behaved client: produce one record, fetch it back, over and over.
        stop = threading.Event()
        rounds = [0]
        failures = []

        def well_behaved():
            try:
                with RawConn(self.broker.port, timeout=30) as conn:
                    while not stop.is_set():
                        v = b"ok-%d" % rounds[0]
                        batch = itutil.build_batch([(None, v, [])])
                        res = itutil.produce(conn, 3, {ok_topic: {0: batch}})
                        err, base = res[(ok_topic, 0)]
                        assert err == 0, err
                        f = itutil.fetch_v4(conn, ok_topic, 0, base, 0)
                        assert f["error"] == 0, f
                        got = [rec for _, _, _, rec in itutil.iter_batches(f["records"])]
                        assert got and v in got[0], "record %d not fetched back" % base
                        rounds[0] += 1
            except Exception as e:  # noqa: BLE001 (reported by the main thread)
                failures.append(repr(e))

        t = threading.Thread(target=well_behaved, daemon=True)
        t.start()
        fetch = fetch_v4_body(log_topic, range(LOG_PARTITIONS))
        changelog = read_changelog_body(pk_topic, range(PK_PARTITIONS))
        t1 = time.time()
        try:
            for i in range(ROUNDS):
                for api, body in ((1, fetch), (API_READ_CHANGELOG, changelog),
                                  (API_SCAN, scan_body(pk_topic, i % PK_PARTITIONS))):
                    if not self.broker.alive():
                        break
                    try:
                        self.abandon(api, body, i)
                    except OSError:
                        pass  # a broker that died mid-round refuses or resets: checked below
                time.sleep(0.05)  # let the broker reach the dead sockets
                self.assertTrue(self.broker.alive(), "broker died in round %d: %s\n%s" % (
                    i, self.broker_state(), "\n".join(self.broker.log_lines[-20:])))
        finally:
            time.sleep(0.5)
            stop.set()
            t.join(30)
        print("%d abandoned rounds in %.1f s; the well-behaved client did %d round trips" %
              (ROUNDS, time.time() - t1, rounds[0]))
        self.assertBrokerAlive()
        self.assertEqual(failures, [], "the well-behaved client failed (broker %s)" %
                         self.broker_state())
        self.assertGreater(rounds[0], 0)

        # Still serving: a fresh produce + consume with a real client.
        itutil.ck_produce_all(itutil.ck_producer(b), [dict(topic=ok_topic, value=b"after")])
        got = itutil.ck_consume(b, ok_topic, [0], rounds[0] + 1)
        self.assertEqual(got[-1].value(), b"after")
        # And the abandoned reads still work for a client that waits for them.
        with RawConn(self.broker.port, timeout=60) as conn:
            f = itutil.fetch_v4(conn, log_topic, 0, 0, 0, max_bytes=4 << 20)
            self.assertEqual(f["error"], 0)
            self.assertGreater(len(f["records"]), LOG_VALUE)
            in_p0 = sum(murmur2_partition(r["key"], PK_PARTITIONS) == 0 for r in rows)
            err, _, got_rows, _, msg = scan(conn, pk_topic, 0, 10000, max_bytes=16 << 20)
            self.assertEqual(err, 0, msg)
            self.assertEqual(len(got_rows), in_p0)
            err, res = read_changelog(conn, pk_topic, [(0, 0, 10000, 16 << 20)])
            self.assertEqual(err, 0)
            self.assertEqual(len(res[0]["changes"]), in_p0)
        self.assertBrokerAlive()


if __name__ == "__main__":
    unittest.main(verbosity=2)
