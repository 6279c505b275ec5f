#!/usr/bin/env python3
"""Captures golden Kafka request frames from real clients through a recording TCP proxy.

The proxy sits between a client and a running strata-broker and forwards every byte unchanged in
both directions. On the client->broker stream it also splits the bytes into Kafka frames (int32
size prefix + payload) and saves the payload (request header + body) of the first request of each
(api key, version) per client as <out>/<client>_<api-name>_v<version>.bin. Api names are the
snake_case stems of protocol/schemas/*.schema (api<N> for keys without a schema).

Clients must come back through the proxy after bootstrap, so the broker is started with
advertised.listeners pointing at the proxy's port (no response is ever patched).

Usage:
  # Proxy only, in front of a broker you started yourself with
  #   --override advertised.listeners=PLAINTEXT://127.0.0.1:<listen-port>
  tools/capture_frames.py proxy --listen-port 19092 --upstream 127.0.0.1:9092 \
      --client kcat --out /tmp/frames

  # Everything: for each client family, a fresh broker (empty log dir) + proxy, then the
  # client's scripted sessions (librdkafka: confluent_kafka AdminClient then kcat produce and
  # consume; kafka-python admin, producer, consumer; KafkaJS admin and producer).
  tools/capture_frames.py capture --out test/unit/messages/golden

Python 3 standard library only; the clients themselves must be installed (tools/setup.sh).
"""
import argparse
import os
import re
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_BROKER = os.path.join(ROOT, "build", "broker", "strata-broker")
KAFKAJS = os.path.join(ROOT, "test", "integration", "js", "node_modules", "kafkajs")
LISTEN_RE = re.compile(r"listening on PLAINTEXT://([0-9.]+):(\d+)")
MAX_FRAME = 16 * 1024  # golden frames stay small; larger ones are reported and skipped
TOPIC = "golden"


def api_names():
    """api key -> snake_case name, from the 'api <key> <Name>' line of each schema file."""
    names = {}
    schema_dir = os.path.join(ROOT, "protocol", "schemas")
    for fn in sorted(os.listdir(schema_dir)) if os.path.isdir(schema_dir) else []:
        if not fn.endswith(".schema"):
            continue
        with open(os.path.join(schema_dir, fn)) as f:
            for line in f:
                m = re.match(r"\s*api\s+(\d+)\s+\w+", line)
                if m:
                    names[int(m.group(1))] = fn[:-len(".schema")]
                    break
    return names


class Recorder:
    """Saves the first frame of each (client, api key, version) into `out_dir`. Thread-safe."""

    def __init__(self, out_dir):
        self.out_dir = out_dir
        self.names = api_names()
        self.seen = set()
        self.saved = []  # file names, in capture order
        self.lock = threading.Lock()
        os.makedirs(out_dir, exist_ok=True)

    def record(self, client, frame):
        if len(frame) < 4:
            return
        api_key, version = struct.unpack(">hh", frame[:4])
        key = (client, api_key, version)
        name = "%s_%s_v%d.bin" % (client, self.names.get(api_key, "api%d" % api_key), version)
        with self.lock:
            if key in self.seen:
                return
            self.seen.add(key)
            if len(frame) > MAX_FRAME:
                print("capture: skipping %s (%d bytes > %d)" % (name, len(frame), MAX_FRAME),
                      file=sys.stderr)
                return
            with open(os.path.join(self.out_dir, name), "wb") as f:
                f.write(frame)
            self.saved.append(name)
            print("capture: %s (%d bytes)" % (name, len(frame)), file=sys.stderr)


class FrameSplitter:
    """Accumulates a byte stream and yields complete Kafka frame payloads."""

    def __init__(self):
        self.buf = bytearray()

    def feed(self, data):
        self.buf += data
        frames = []
        while len(self.buf) >= 4:
            (size,) = struct.unpack(">i", self.buf[:4])
            if size < 0:  # not a Kafka stream any more; stop splitting
                self.buf.clear()
                break
            if len(self.buf) < 4 + size:
                break
            frames.append(bytes(self.buf[4:4 + size]))
            del self.buf[:4 + size]
        return frames


class Proxy:
    """A recording TCP proxy on 127.0.0.1:<port> (0 = any free port) to `upstream`.

    `client` (the label used in file names) may be changed between client sessions.
    """

    def __init__(self, recorder, client, upstream=None, port=0):
        self.recorder = recorder
        self.client = client
        self.upstream = upstream  # (host, port); may be set after construction
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.closing = False
        self.conns = []
        self.lock = threading.Lock()

    def start(self):
        threading.Thread(target=self._accept_loop, daemon=True).start()
        return self

    def close(self):
        self.closing = True
        try:
            self.sock.close()
        except OSError:
            pass
        with self.lock:
            for s in self.conns:
                try:
                    s.close()
                except OSError:
                    pass

    def _accept_loop(self):
        while not self.closing:
            try:
                client_sock, _ = self.sock.accept()
            except OSError:
                return
            try:
                up = socket.create_connection(self.upstream, timeout=10)
                up.settimeout(None)
            except OSError as e:
                print("capture: upstream connect failed: %s" % e, file=sys.stderr)
                client_sock.close()
                continue
            for s in (client_sock, up):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self.lock:
                self.conns += [client_sock, up]
            label = self.client
            threading.Thread(target=self._pump, args=(client_sock, up, label), daemon=True).start()
            threading.Thread(target=self._pump, args=(up, client_sock, None), daemon=True).start()

    def _pump(self, src, dst, label):
        """Forwards src->dst verbatim; when `label` is set, records the frames seen."""
        splitter = FrameSplitter() if label else None
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if splitter:
                    for frame in splitter.feed(data):
                        self.recorder.record(label, frame)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


class Broker:
    """A strata-broker on a free port, advertising the proxy's port, with its own log dir."""

    def __init__(self, binary, advertised_port):
        self.binary = binary
        self.dir = tempfile.mkdtemp(prefix="strata-golden-")
        self.advertised_port = advertised_port
        self.proc = None
        self.port = None

    def start(self, timeout=30):
        args = [self.binary,
                "--override", "listeners=PLAINTEXT://127.0.0.1:0",
                "--override", "metrics.listener=127.0.0.1:0",
                "--override", "schema.registry.listener=",
                "--override", "advertised.listeners=PLAINTEXT://127.0.0.1:%d" % self.advertised_port,
                "--override", "log.dirs=" + os.path.join(self.dir, "logs")]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, errors="replace")
        seen = threading.Event()

        def pump():
            for line in self.proc.stdout:
                m = LISTEN_RE.search(line)
                if m and self.port is None:
                    self.port = int(m.group(2))
                    seen.set()
        threading.Thread(target=pump, daemon=True).start()
        if not seen.wait(timeout):
            self.stop()
            raise RuntimeError("strata-broker did not report its port")
        return self

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def run(args, **kw):
    print("capture: $ %s" % " ".join(args), file=sys.stderr)
    subprocess.run(args, check=True, timeout=120, **kw)


def session_librdkafka_admin(bootstrap):
    admin = (
        "from confluent_kafka.admin import AdminClient, NewTopic\n"
        "a = AdminClient({'bootstrap.servers': %r})\n"
        "for f in a.create_topics([NewTopic(%r, num_partitions=1, replication_factor=1)]).values():\n"
        "    f.result()\n" % (bootstrap, TOPIC))
    run(["/usr/bin/python3", "-c", admin])


def session_librdkafka_kcat(bootstrap):
    run(["kcat", "-b", bootstrap, "-P", "-t", TOPIC, "-p", "0", "-k", "k1", "-H", "h1=x"],
        input=b"v1\n")
    run(["kcat", "-b", bootstrap, "-C", "-t", TOPIC, "-p", "0", "-o", "beginning", "-e"],
        stdout=subprocess.DEVNULL)


def session_kafka_python(bootstrap):
    script = (
        "from kafka import KafkaAdminClient, KafkaProducer, KafkaConsumer, TopicPartition\n"
        "from kafka.admin import NewTopic\n"
        "b = %r\n"
        "a = KafkaAdminClient(bootstrap_servers=b)\n"
        "a.create_topics([NewTopic(%r, num_partitions=1, replication_factor=1)])\n"
        "a.close()\n"
        "p = KafkaProducer(bootstrap_servers=b)\n"
        "p.send(%r, key=b'k1', value=b'v1', headers=[('h1', b'x')], partition=0).get(30)\n"
        "p.close()\n"
        "c = KafkaConsumer(bootstrap_servers=b, group_id=None, enable_auto_commit=False)\n"
        "tp = TopicPartition(%r, 0)\n"
        "c.assign([tp])\n"
        "c.seek_to_beginning(tp)\n"
        "got = []\n"
        "for _ in range(20):\n"
        "    for recs in c.poll(timeout_ms=500).values():\n"
        "        got += recs\n"
        "    if got:\n"
        "        break\n"
        "c.close()\n"
        "assert got and got[0].value == b'v1', got\n" % (bootstrap, TOPIC, TOPIC, TOPIC))
    run(["/usr/bin/python3", "-c", script])


def session_kafkajs(bootstrap):
    script = (
        "const { Kafka, logLevel } = require(%s);\n"
        "(async () => {\n"
        "  const kafka = new Kafka({ brokers: [%s], logLevel: logLevel.WARN });\n"
        "  const admin = kafka.admin();\n"
        "  await admin.connect();\n"
        "  await admin.createTopics({ topics: [{ topic: %s, numPartitions: 1 }] });\n"
        "  await admin.listTopics();\n"
        "  await admin.disconnect();\n"
        "  const producer = kafka.producer();\n"
        "  await producer.connect();\n"
        "  await producer.send({ topic: %s, acks: -1, messages: [\n"
        "    { partition: 0, key: 'k1', value: 'v1', headers: { h1: 'x' } }] });\n"
        "  await producer.disconnect();\n"
        "})().catch((e) => { console.error(e); process.exit(1); });\n"
        % tuple('"%s"' % s for s in (KAFKAJS, bootstrap, TOPIC, TOPIC)))
    run(["node", "-e", script])


# Client families, each run against its own fresh broker (empty log dir) and proxy; within a
# family the sessions run in order on the same broker, each recorded under its own label.
SESSIONS = {
    # Both librdkafka 2.0.2: confluent_kafka's AdminClient creates the topic, then kcat
    # produces to it and consumes it.
    "librdkafka": [("librdkafka-admin", session_librdkafka_admin),
                   ("librdkafka-kcat", session_librdkafka_kcat)],
    "kafka-python": [("kafka-python", session_kafka_python)],
    "kafkajs": [("kafkajs", session_kafkajs)],
}


def cmd_capture(opts):
    recorder = Recorder(opts.out)
    for family in opts.clients.split(","):
        proxy = Proxy(recorder, None).start()
        broker = Broker(opts.broker, proxy.port)
        try:
            broker.start()
            proxy.upstream = ("127.0.0.1", broker.port)
            for label, session in SESSIONS[family]:
                proxy.client = label
                session("127.0.0.1:%d" % proxy.port)
                time.sleep(0.5)  # let the session's last frames reach the recorder
        finally:
            proxy.close()
            broker.stop()
    print("capture: %d frames in %s" % (len(recorder.saved), opts.out), file=sys.stderr)
    for name in recorder.saved:
        print(name)


def cmd_proxy(opts):
    host, port = opts.upstream.rsplit(":", 1)
    proxy = Proxy(Recorder(opts.out), opts.client, (host, int(port)), opts.listen_port).start()
    print("capture: proxy on 127.0.0.1:%d -> %s, recording '%s' frames into %s"
          % (proxy.port, opts.upstream, opts.client, opts.out), file=sys.stderr)
    try:
        while True:
            select.select([], [], [], 3600)
    except KeyboardInterrupt:
        proxy.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("proxy", help="run the recording proxy in front of a running broker")
    p.add_argument("--listen-port", type=int, default=0)
    p.add_argument("--upstream", required=True, help="broker host:port")
    p.add_argument("--client", required=True, help="label used in the frame file names")
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_proxy)
    c = sub.add_parser("capture", help="start brokers and proxies and run every client session")
    c.add_argument("--out", required=True)
    c.add_argument("--broker", default=DEFAULT_BROKER)
    c.add_argument("--clients", default=",".join(SESSIONS))
    c.set_defaults(func=cmd_capture)
    opts = ap.parse_args()
    opts.func(opts)


if __name__ == "__main__":
    main()
