"""Load soak with abusive clients (issue 11, "Hardening"; not CI): one release strata-broker,
a well-behaved confluent-kafka producer (acks=all) + consumer measured unloaded (baseline), then
again while these abusers are held against the same broker:

  idle        N connections that send one ApiVersions and then nothing (default 10,000)
  slowloris   N connections that send a frame's size prefix promising --slowloris-size bytes and
              then one byte every --slowloris-interval s; when the broker closes one (its
              socket.request.read.timeout.ms), it reconnects and starts over (default 1,000)
  never-read  N connections that pipeline --never-read-requests large Fetch requests of a
              populated partition and never read a byte of the answers
  bomb        a Produce loop of record batches that are small on the wire (gzip/zstd/lz4, a few
              hundred KiB at most) but inflate to hundreds of MiB: each must be refused with a
              Kafka error (CORRUPT_MESSAGE / MESSAGE_TOO_LARGE / INVALID_RECORD) and nothing
              appended
  amplifier   Lookups (extension API 16000) on a primary-key table naming one ~1 MB row
              --amplifier-keys times (a ~25 KB request) with max_bytes = 2^31-1, in a loop on
              --amplifiers connections that read the answers, plus --amplifiers-never-read
              connections that pipeline such Lookups and never read: every answer must stay
              within the broker's cap (64 MiB of values + one row)

and optionally once more after the abusers are gone (each phase's topic is deleted after it, so
every phase meets the same page cache). Measured: the broker's peak RSS (VmHWM) and
RSS sampled every second, broker CPU seconds (utime+stime) per phase, the well-behaved produce
and consume MB/s under load / baseline, what every abuser saw, and at the end whether the broker
is alive and serves a Metadata request and a produce+consume round trip. Exits 1 if the broker
died, its peak RSS passed --rss-bound-mib, a throughput ratio is below --min-ratio, a bomb was
not refused or an amplified answer was not bounded; 2 on a setup error.

Run from anywhere with Debian's python3 (confluent-kafka, kafka-python):
  STRATA_BROKER=build/broker/strata-broker /usr/bin/python3 tools/perf/soak_load.py
  ... --idle 500 --slowloris 50 --duration 10          # a quick functional run
tools/soak.sh load [ARGS] runs it; the recorded run is in docs/benchmarks.md ("Soak: abusive
clients"). The abusers run in child processes of this script (--role holder|hammer); a holder
keeps at most about its RLIMIT_NOFILE of sockets, so more holders are started when the hard limit
is low.
"""
import argparse
import heapq
import json
import math
import os
import re
import resource
import select
import signal
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "test", "integration"))
import itutil  # noqa: E402
from itutil import RawConn  # noqa: E402
from test_pk_tables import API_LOOKUP, pb_int, pb_len, produce_v8  # noqa: E402
from test_pk_reads import lookup_bounded  # noqa: E402

MIB = 1 << 20
LOOKUP_MAX_MAX_BYTES = 64 * MIB  # broker/handlers/ext_lookup.cc kMaxMaxBytes
BOMB_REFUSALS = {2: "CORRUPT_MESSAGE", 10: "MESSAGE_TOO_LARGE", 87: "INVALID_RECORD"}
BOMB_DEFAULT_MIB = {"gzip": 512, "zstd": 1024, "lz4": 200}  # inflated sizes (wire < 1 MB each)
AMP_KEY = b"big"


def now():
    return time.monotonic()


def raise_nofile(want):
    """Raises this process's RLIMIT_NOFILE towards `want` (the hard limit too when privileged).
    Returns the soft limit reached."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if want > hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, want))
            return want
        except (ValueError, OSError):
            pass
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = min(max(want, soft), hard) if hard != resource.RLIM_INFINITY else max(want, soft)
    if target != soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


# ================================================================== holder: sockets held open


class Holder:
    """Idle, slowloris and never-read connections in one epoll loop (single thread)."""

    def __init__(self, cfg):
        self.cfg = cfg
        self.port = cfg["port"]
        self.ep = select.epoll()
        self.socks = {}  # fd -> state dict
        self.stop = False
        self.t_start = now()
        self.corr = 0
        self.idle = dict(target=cfg["idle"], connected=0, connect_failures=0,
                         api_versions_answered=0, closed_by_broker=0, unexpected_bytes=0,
                         first_close_after_s=None)
        self.slow = dict(target=cfg["slowloris"], opened=0, connect_failures=0,
                         closed_by_broker=0, closed_by_send_error=0, bytes_dribbled=0,
                         lifetimes=[], open_at_end=0, oldest_open_s=0.0)
        self.nr = dict(target=cfg["never_read"], connected=0, connect_failures=0,
                       requests_fully_sent=0, request_bytes_pending=0, peer_hangup=0,
                       bytes_unread_in_socket=0)
        self.nrl = dict(target=cfg["never_read_lookups"], connected=0, connect_failures=0,
                        requests_fully_sent=0, request_bytes_pending=0, peer_hangup=0,
                        bytes_unread_in_socket=0)
        self.slow_queue = []  # heap of (next send time, fd, generation)
        self.lookup_body = lookup_body(cfg["pk_topic"], cfg["amplifier_keys"], 2**31 - 1)
        self.reconnect_due = []  # times at which a slowloris slot reconnects

    # -------------------------------------------------------------- helpers

    def connect(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(10)
        s.connect(("127.0.0.1", self.port))
        s.setblocking(False)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return s

    def register(self, s, state, events):
        state["sock"] = s
        self.socks[s.fileno()] = state
        self.ep.register(s.fileno(), events)

    def drop(self, fd):
        st = self.socks.pop(fd, None)
        if st is None:
            return None
        try:
            self.ep.unregister(fd)
        except (OSError, ValueError):
            pass
        st["sock"].close()
        st["dead"] = True
        return st

    # -------------------------------------------------------------- idle

    def open_idle(self, n):
        frame_cache = itutil.request_frame(itutil.API_API_VERSIONS, 0, 1, b"", client_id="soak-idle")
        for i in range(n):
            if self.stop:
                return
            try:
                s = self.connect()
            except OSError:
                self.idle["connect_failures"] += 1
                continue
            self.idle["connected"] += 1
            st = dict(kind="idle", buf=bytearray(), answered=False)
            self.register(s, st, select.EPOLLIN | select.EPOLLRDHUP)
            if self.cfg["idle_api_versions"]:
                try:
                    s.send(frame_cache)
                except OSError:
                    pass
            if i % 200 == 199:
                self.poll(0)

    def on_idle(self, fd, st, ev):
        try:
            data = st["sock"].recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.idle["closed_by_broker"] += 1
            if self.idle["first_close_after_s"] is None:
                self.idle["first_close_after_s"] = round(now() - self.t_start, 1)
            self.drop(fd)
            return
        if st["answered"]:
            self.idle["unexpected_bytes"] += len(data)
            return
        st["buf"] += data
        b = st["buf"]
        if len(b) >= 4 and len(b) >= 4 + struct.unpack(">i", b[:4])[0]:
            st["answered"] = True
            self.idle["api_versions_answered"] += 1
            self.idle["unexpected_bytes"] += len(b) - 4 - struct.unpack(">i", b[:4])[0]
            st["buf"] = bytearray()

    # -------------------------------------------------------------- slowloris

    def open_slow(self):
        try:
            s = self.connect()
        except OSError:
            self.slow["connect_failures"] += 1
            self.reconnect_due.append(now() + 1.0)
            return
        self.slow["opened"] += 1
        # size prefix + an ApiVersions v0 header's first bytes; the rest never comes in time
        prefix = struct.pack(">i", self.cfg["slowloris_size"]) + b"\x00\x12\x00\x00"
        try:
            s.send(prefix)
        except OSError:
            pass
        t = now()
        st = dict(kind="slow", t0=t, gen=self.slow["opened"])
        self.register(s, st, select.EPOLLIN | select.EPOLLRDHUP)
        # spread first dribbles over one interval
        first = t + self.cfg["slowloris_interval"] * ((self.slow["opened"] * 0.618) % 1.0)
        heapq.heappush(self.slow_queue, (first, s.fileno(), st["gen"]))

    def slow_closed(self, fd, st, how):
        self.slow[how] += 1
        self.slow["lifetimes"].append(now() - st["t0"])
        self.drop(fd)
        if self.cfg["slowloris_reconnect"] and not self.stop:
            # a connection refused or closed at once backs off a second (no tight loop)
            self.reconnect_due.append(now() + (1.0 if now() - st["t0"] < 1.0 else 0.0))

    def on_slow(self, fd, st, ev):
        try:
            data = st["sock"].recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.slow_closed(fd, st, "closed_by_broker")

    def dribble(self):
        t = now()
        interval = self.cfg["slowloris_interval"]
        q = self.slow_queue
        while q and q[0][0] <= t:
            due, fd, gen = heapq.heappop(q)
            st = self.socks.get(fd)
            if st is None or st.get("kind") != "slow" or st["gen"] != gen:
                continue  # closed (its descriptor may be reused)
            try:
                st["sock"].send(b"\x00")
                self.slow["bytes_dribbled"] += 1
            except BlockingIOError:
                pass
            except OSError:
                self.slow_closed(fd, st, "closed_by_send_error")
                continue
            heapq.heappush(q, (max(due + interval, t), fd, gen))

    # -------------------------------------------------------------- never read

    def fetch_frame(self, corr):
        mb = self.cfg["never_read_max_bytes"]
        body = struct.pack(">iiiib", -1, 0, 1, mb, 0)
        body += itutil.array32([itutil.str16(self.cfg["fetch_topic"]) +
                                itutil.array32([struct.pack(">iqi", 0, 0, mb)])])
        return itutil.request_frame(itutil.API_FETCH, 4, corr, body, client_id="soak-never-read")

    def lookup_frame(self, corr):
        return itutil.request_frame(API_LOOKUP, 0, corr, self.lookup_body,
                                    client_id="soak-never-read-lookup", flexible=True)

    def open_never_read(self, n, kind):
        stats = self.nr if kind == "nr" else self.nrl
        for _ in range(n):
            try:
                s = self.connect()
            except OSError:
                stats["connect_failures"] += 1
                continue
            stats["connected"] += 1
            if kind == "nr":
                frames = [self.fetch_frame(c) for c in range(1, self.cfg["never_read_requests"] + 1)]
            else:
                frames = [self.lookup_frame(c) for c in range(1, self.cfg["lookup_pipeline"] + 1)]
            st = dict(kind=kind, out=bytearray(b"".join(frames)), frame_len=len(frames[0]),
                      sent=0, total=len(frames), hup=False)
            self.register(s, st, select.EPOLLOUT | select.EPOLLRDHUP)
            self.push_out(s.fileno(), st)

    def push_out(self, fd, st):
        while st["out"]:
            try:
                n = st["sock"].send(st["out"][:1 << 20])
            except BlockingIOError:
                return
            except OSError:
                st["out"] = bytearray()
                return
            del st["out"][:n]
            st["sent"] += n
        try:  # all sent: wait for a hang-up only
            self.ep.modify(fd, select.EPOLLRDHUP)
        except OSError:
            pass

    def on_never_read(self, fd, st, ev):
        if ev & (select.EPOLLRDHUP | select.EPOLLHUP | select.EPOLLERR):
            if not st["hup"]:
                st["hup"] = True
                (self.nr if st["kind"] == "nr" else self.nrl)["peer_hangup"] += 1
            try:
                self.ep.modify(fd, 0)
            except OSError:
                pass
            return
        if ev & select.EPOLLOUT:
            self.push_out(fd, st)

    # -------------------------------------------------------------- loop

    def poll(self, timeout):
        for fd, ev in self.ep.poll(timeout, 4096):
            st = self.socks.get(fd)
            if st is None:
                continue
            k = st["kind"]
            if k == "idle":
                self.on_idle(fd, st, ev)
            elif k == "slow":
                self.on_slow(fd, st, ev)
            else:
                self.on_never_read(fd, st, ev)

    def run(self):
        signal.signal(signal.SIGTERM, lambda *_: setattr(self, "stop", True))
        c = self.cfg
        self.open_never_read(c["never_read"], "nr")
        self.open_never_read(c["never_read_lookups"], "nrl")
        for _ in range(c["slowloris"]):
            self.open_slow()
        self.open_idle(c["idle"])
        t_ready_deadline = now() + 60
        while (c["idle_api_versions"] and not self.stop and now() < t_ready_deadline and
               self.idle["api_versions_answered"] + self.idle["closed_by_broker"] <
               self.idle["connected"]):
            self.poll(0.1)
            self.dribble()
        emit(dict(event="ready", role="holder", setup_s=round(now() - self.t_start, 1),
                  idle=self.idle["connected"], slowloris=self.slow["opened"],
                  never_read=self.nr["connected"], never_read_lookups=self.nrl["connected"]))
        while not self.stop:
            self.poll(0.05)
            self.dribble()
            t = now()
            due = [x for x in self.reconnect_due if x <= t]
            if due:
                self.reconnect_due = [x for x in self.reconnect_due if x > t]
                for _ in due[:200]:
                    self.open_slow()
                self.reconnect_due += due[200:]
        self.finish()

    def finish(self):
        t = now()
        for fd, st in list(self.socks.items()):
            if st["kind"] == "slow":
                self.slow["open_at_end"] += 1
                self.slow["oldest_open_s"] = max(self.slow["oldest_open_s"], t - st["t0"])
            elif st["kind"] in ("nr", "nrl"):
                stats = self.nr if st["kind"] == "nr" else self.nrl
                stats["requests_fully_sent"] += (st["sent"] // st["frame_len"])
                stats["request_bytes_pending"] += len(st["out"])
                try:
                    import fcntl
                    import termios
                    q = fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0")
                    stats["bytes_unread_in_socket"] += struct.unpack("i", q)[0]
                except OSError:
                    pass
        lt = self.slow.pop("lifetimes")
        self.slow["lifetime_s"] = (dict(min=round(min(lt), 1), median=round(statistics.median(lt), 1),
                                        max=round(max(lt), 1)) if lt else None)
        self.slow["oldest_open_s"] = round(self.slow["oldest_open_s"], 1)
        self.idle["still_open"] = sum(1 for s in self.socks.values() if s["kind"] == "idle")
        emit(dict(event="stats", role="holder", idle=self.idle, slowloris=self.slow,
                  never_read=self.nr, never_read_lookups=self.nrl))
        for fd in list(self.socks):
            self.drop(fd)


# ================================================================== hammer: bombs and Lookups


def bomb_batch(codec, inflated):
    """One record batch whose single record's value is `inflated` zero bytes, compressed with
    `codec` as a stream (never held uncompressed here)."""
    import zlib
    body_head = b"\x00" + itutil.varint(0) + itutil.varint(0) + itutil.varint(-1) + itutil.varint(inflated)
    body_len = len(body_head) + inflated + 1
    head = itutil.varint(body_len) + body_head
    chunk = b"\x00" * MIB
    if codec == "gzip":
        c = zlib.compressobj(9, zlib.DEFLATED, 31)
        parts = [c.compress(head)]
        flush = c.flush
    elif codec == "zstd":
        import zstandard
        c = zstandard.ZstdCompressor(level=3).compressobj()
        parts = [c.compress(head)]
        flush = c.flush
    elif codec == "lz4":
        import lz4.frame
        c = lz4.frame.LZ4FrameCompressor()
        parts = [c.begin(), c.compress(head)]
        flush = c.flush
    else:
        raise ValueError(codec)
    left = inflated
    while left:
        n = min(left, MIB)
        parts.append(c.compress(chunk if n == MIB else chunk[:n]))
        left -= n
    parts.append(c.compress(b"\x00"))  # no headers
    parts.append(flush())
    blob = b"".join(parts)
    return itutil.build_batch([(None, b"", [])], compression=codec, records_blob=blob, record_count=1)


class Hammer:
    def __init__(self, cfg):
        self.cfg = cfg
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.bomb = dict(sent=0, codes={}, connection_closed=0, wire_bytes={}, inflated_mib={},
                         max_latency_ms=0.0)
        self.amp = dict(connections=cfg["amplifiers"], requests=0, errors={}, connection_closed=0,
                        request_bytes=0, max_response_bytes=0, response_bytes_total=0,
                        max_rows_served=0, min_rows_served=None, max_latency_ms=0.0)
        self.batches = []

    def bomb_loop(self):
        conn = None
        i = 0
        while not self.stop.is_set():
            codec, inflated, batch = self.batches[i % len(self.batches)]
            i += 1
            version = 7 if codec == "zstd" else 3
            try:
                if conn is None:
                    conn = RawConn(self.cfg["port"], timeout=60, client_id="soak-bomb")
                t = now()
                res = itutil.produce(conn, version, {self.cfg["bomb_topic"]: {0: batch}}, acks=1,
                                     timeout_ms=30000)
                ms = (now() - t) * 1000
                err = list(res.values())[0][0]
                with self.lock:
                    self.bomb["sent"] += 1
                    key = "%s:%d" % (codec, err)
                    self.bomb["codes"][key] = self.bomb["codes"].get(key, 0) + 1
                    self.bomb["max_latency_ms"] = max(self.bomb["max_latency_ms"], round(ms, 1))
            except (OSError, ConnectionError, ValueError) as e:
                with self.lock:
                    self.bomb["connection_closed"] += 1
                    self.bomb.setdefault("last_exception", repr(e))
                if conn:
                    conn.close()
                conn = None
            self.stop.wait(self.cfg["bomb_interval"])
        if conn:
            conn.close()

    def amp_loop(self):
        conn = None
        topic = self.cfg["pk_topic"]
        keys = [AMP_KEY] * self.cfg["amplifier_keys"]
        while not self.stop.is_set():
            try:
                if conn is None:
                    conn = RawConn(self.cfg["port"], timeout=120, client_id="soak-amplifier")
                t = now()
                top, msg, res, size = lookup_bounded(conn, topic, {0: keys}, 2**31 - 1)
                ms = (now() - t) * 1000
                with self.lock:
                    a = self.amp
                    a["requests"] += 1
                    err = top or res.get(0, (-1, []))[0]
                    if err:
                        a["errors"][str(err)] = a["errors"].get(str(err), 0) + 1
                    served = sum(1 for r in res.get(0, (0, []))[1] if not r[2])
                    a["max_rows_served"] = max(a["max_rows_served"], served)
                    a["min_rows_served"] = (served if a["min_rows_served"] is None
                                            else min(a["min_rows_served"], served))
                    a["max_response_bytes"] = max(a["max_response_bytes"], size)
                    a["response_bytes_total"] += size
                    a["max_latency_ms"] = max(a["max_latency_ms"], round(ms, 1))
                del res
            except (OSError, ConnectionError, ValueError) as e:
                with self.lock:
                    self.amp["connection_closed"] += 1
                    self.amp.setdefault("last_exception", repr(e))
                if conn:
                    conn.close()
                conn = None
            self.stop.wait(self.cfg["amplifier_interval"])
        if conn:
            conn.close()

    def run(self):
        signal.signal(signal.SIGTERM, lambda *_: self.stop.set())
        t0 = now()
        for codec in self.cfg["bomb_codecs"]:
            mib = self.cfg["bomb_mib"] or BOMB_DEFAULT_MIB[codec]
            b = bomb_batch(codec, mib * MIB)
            self.batches.append((codec, mib, b))
            self.bomb["wire_bytes"][codec] = len(b)
            self.bomb["inflated_mib"][codec] = mib
        self.amp["request_bytes"] = len(lookup_body(self.cfg["pk_topic"], self.cfg["amplifier_keys"],
                                                    2**31 - 1)) + 30
        threads = []
        if self.batches and self.cfg["bomb_interval"] >= 0:
            threads.append(threading.Thread(target=self.bomb_loop, daemon=True))
        for _ in range(self.cfg["amplifiers"]):
            threads.append(threading.Thread(target=self.amp_loop, daemon=True))
        for t in threads:
            t.start()
        emit(dict(event="ready", role="hammer", setup_s=round(now() - t0, 1)))
        while not self.stop.is_set():
            self.stop.wait(0.5)
        for t in threads:
            t.join(30)
        with self.lock:
            emit(dict(event="stats", role="hammer", bomb=self.bomb, amplifier=self.amp))


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


# ================================================================== the orchestrator


class Child:
    def __init__(self, role, cfg):
        self.role = role
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--role", role, "--cfg", json.dumps(cfg)],
            stdout=subprocess.PIPE, text=True, preexec_fn=die_with_parent)
        self.ready = threading.Event()
        self.stats = None
        self.ready_msg = None
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if msg.get("event") == "ready":
                self.ready_msg = msg
                self.ready.set()
            elif msg.get("event") == "stats":
                self.stats = msg
        self.ready.set()

    def cpu_s(self):
        return proc_cpu_s(self.proc.pid)

    def stop(self, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        time.sleep(0.2)
        return self.stats


def die_with_parent():
    import ctypes
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
    except OSError:
        pass


def proc_cpu_s(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            parts = f.read().rsplit(")", 1)[1].split()
        return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return None


def proc_status(pid):
    out = {}
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "VmHWM", "Threads"):
                    out[k] = int(v.split()[0])
    except OSError:
        pass
    return out


METRICS_RE = re.compile(r"metrics listening on http://([0-9.]+):(\d+)/metrics")


class Monitor(threading.Thread):
    """Samples the broker every second: RSS, peak RSS, CPU, descriptors, and two gauges of its
    metrics endpoint; kills the broker past --rss-abort-mib (a safety net for the machine)."""

    def __init__(self, broker, abort_kib):
        super().__init__(daemon=True)
        self.broker = broker
        self.pid = broker.proc.pid
        self.abort_kib = abort_kib
        self.samples = []  # (t, rss_kib, hwm_kib, cpu_s, fds, conns, queued_bytes, phase)
        self.phase = "setup"
        self.stop = threading.Event()
        self.aborted = None
        self.metrics_url = None
        for line in broker.log_lines:
            m = METRICS_RE.search(line)
            if m:
                self.metrics_url = "http://%s:%s/metrics" % m.groups()

    def scrape(self):
        if not self.metrics_url:
            return None, None
        try:
            with urllib.request.urlopen(self.metrics_url, timeout=2) as r:
                text = r.read().decode()
        except OSError:
            return None, None
        vals = {}
        for name in ("strata_connections_active", "strata_connections_queued_response_bytes"):
            m = re.search(r"^%s(?:\{[^}]*\})? ([0-9.e+]+)$" % name, text, re.M)
            vals[name] = float(m.group(1)) if m else None
        return vals["strata_connections_active"], vals["strata_connections_queued_response_bytes"]

    def run(self):
        while not self.stop.is_set():
            st = proc_status(self.pid)
            if not st:
                break
            try:
                fds = len(os.listdir("/proc/%d/fd" % self.pid))
            except OSError:
                fds = None
            conns, queued = self.scrape()
            self.samples.append((now(), st.get("VmRSS"), st.get("VmHWM"), proc_cpu_s(self.pid),
                                 fds, conns, queued, self.phase))
            if self.abort_kib and st.get("VmRSS", 0) > self.abort_kib:
                self.aborted = "RSS %d MiB > --rss-abort-mib" % (st["VmRSS"] // 1024)
                os.kill(self.pid, signal.SIGKILL)
                break
            self.stop.wait(1.0)

    def phase_stats(self, phase):
        s = [x for x in self.samples if x[7] == phase and x[1] is not None]
        if not s:
            return {}
        return dict(rss_max_mib=round(max(x[1] for x in s) / 1024, 1),
                    rss_mean_mib=round(statistics.mean(x[1] for x in s) / 1024, 1),
                    fds_max=max((x[4] or 0) for x in s),
                    connections_max=max((x[5] or 0) for x in s),
                    queued_response_mib_max=round(max((x[6] or 0) for x in s) / MIB, 1))


class Prober(threading.Thread):
    """Every 2 s a fresh connection: ApiVersions + Metadata, timed."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port = port
        self.stop = threading.Event()
        self.results = []  # (phase, ms or None)
        self.phase = "setup"

    def run(self):
        while not self.stop.wait(2.0):
            t = now()
            try:
                with RawConn(self.port, timeout=10) as c:
                    ok = itutil.api_versions(c, 3)[0] == 0
                    itutil.metadata_v1(c, [])
                self.results.append((self.phase, (now() - t) * 1000 if ok else None))
            except (OSError, ConnectionError, ValueError):
                self.results.append((self.phase, None))

    def phase_stats(self, phase):
        r = [x[1] for x in self.results if x[0] == phase]
        ok = sorted(x for x in r if x is not None)
        if not r:
            return {}
        return dict(probes=len(r), failed=len(r) - len(ok),
                    p50_ms=round(ok[len(ok) // 2], 1) if ok else None,
                    max_ms=round(ok[-1], 1) if ok else None)


def well_behaved(bootstrap, topic, partitions, duration, msg_bytes, consume_timeout):
    """Produce for `duration` s (acks=all), then consume everything back. -> dict."""
    from confluent_kafka import Consumer, Producer, TopicPartition, OFFSET_BEGINNING, KafkaError
    value = os.urandom(msg_bytes)
    state = dict(delivered=0, errors=0, first_error=None)

    def cb(err, msg):
        if err is None:
            state["delivered"] += 1
        else:
            state["errors"] += 1
            if state["first_error"] is None:
                state["first_error"] = str(err)

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                  "enable.idempotence": False, "message.timeout.ms": 120000,
                  "client.id": "soak-well-behaved"})
    produced = 0
    t0 = now()
    end = t0 + duration
    i = 0
    while now() < end:
        try:
            p.produce(topic, value, partition=i % partitions, on_delivery=cb)
            produced += 1
            i += 1
        except BufferError:
            p.poll(0.01)
            continue
        if i % 1000 == 0:
            p.poll(0)
    left = p.flush(180)
    t_prod = now() - t0
    out = dict(produced=produced, delivered=state["delivered"], produce_errors=state["errors"],
               first_error=state["first_error"], undelivered=left, produce_s=round(t_prod, 2),
               produce_mb_s=round(state["delivered"] * msg_bytes / 1e6 / t_prod, 1))
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "soak-unused",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest",
                  "client.id": "soak-well-behaved"})
    c.assign([TopicPartition(topic, q, OFFSET_BEGINNING) for q in range(partitions)])
    want = state["delivered"]
    got = nbytes = 0
    t_start = now()
    t_last = None
    deadline = now() + consume_timeout
    consume_errors = 0
    while got < want and now() < deadline:
        msgs = c.consume(num_messages=10000, timeout=1.0)
        for m in msgs:
            if m.error():
                if m.error().code() != KafkaError._PARTITION_EOF:
                    consume_errors += 1
                continue
            got += 1
            nbytes += len(m.value())
        if msgs:
            t_last = now()
    c.close()
    # from the assignment (connect, metadata and the first fetch included) to the last message
    span = (t_last - t_start) if t_last else None
    out.update(consumed=got, consume_errors=consume_errors,
               consume_s=round(span, 2) if span else None,
               consume_mb_s=round(nbytes / 1e6 / span, 1) if span else 0.0)
    return out


def set_quota(bootstrap, spec):
    """ENTITY:KEY=VALUE[,...] -> `strata quota alter` (the CLI next to the broker binary)."""
    entity, _, values = spec.partition(":")
    args = []
    for part in entity.split("+"):
        name, _, value = part.partition("=")
        if name not in ("client-id", "client-id-default", "user", "user-default"):
            raise SystemExit("--quota: unknown entity %r" % part)
        args += ["--" + name] + ([value] if value else [])
    cli = os.environ.get("STRATA_CLI") or os.path.join(ROOT, "build", "tools", "cli", "strata")
    subprocess.run([cli, "--bootstrap-server", bootstrap, "quota", "alter"] + args +
                   ["--add", values], check=True, timeout=60)
    print("quota: %s %s" % (entity, values), flush=True)


def create_topic(bootstrap, name, partitions, config=None):
    itutil.ck_create_topic(bootstrap, name, partitions, config)


def populate(bootstrap, topic, mib):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 20})
    v = os.urandom(1000)
    n = mib * MIB // 1000
    for _ in range(n):
        while True:
            try:
                p.produce(topic, v, partition=0)
                break
            except BufferError:
                p.poll(0.05)
    if p.flush(120):
        raise RuntimeError("populating %s did not finish" % topic)


def lookup_body(topic, keys, max_bytes):
    part = pb_int(1, 0) + b"".join(pb_len(2, AMP_KEY) for _ in range(keys))
    return pb_len(1, pb_len(1, topic.encode()) + pb_len(2, part)) + pb_int(2, max_bytes)


def high_watermark(port, topic):
    with RawConn(port) as c:
        r = itutil.fetch_v4(c, topic, 0, 0, max_wait_ms=0, max_bytes=1)
        return r["high_watermark"]


def final_health(broker, topic):
    """Alive, answers Metadata on a new connection, and a produce + consume round trip."""
    out = dict(alive=broker.alive())
    if not out["alive"]:
        return out
    try:
        with RawConn(broker.port, timeout=15) as c:
            md = itutil.metadata_v1(c, [topic])
            out["metadata"] = md.get(topic, (None,))[0] == 0
        vals = [b"final-%d" % i for i in range(100)]
        p = itutil.ck_producer(broker.bootstrap)
        itutil.ck_produce_all(p, [{"topic": topic, "value": v, "partition": 0} for v in vals], 60)
        got = itutil.ck_consume(broker.bootstrap, topic, [0], 100, timeout=60)
        out["round_trip"] = [m.value() for m in got] == vals
    except Exception as e:  # noqa: BLE001 - reported, then counted as a failure
        out["error"] = repr(e)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--role", choices=["holder", "hammer"], help=argparse.SUPPRESS)
    ap.add_argument("--cfg", help=argparse.SUPPRESS)
    ap.add_argument("--broker", default=os.environ.get("STRATA_BROKER") or
                    os.path.join(ROOT, "build", "broker", "strata-broker"),
                    help="strata-broker binary (also $STRATA_BROKER)")
    g = ap.add_argument_group("well-behaved client")
    g.add_argument("--duration", type=float, default=30, help="seconds of producing per phase")
    g.add_argument("--message-bytes", type=int, default=1000)
    g.add_argument("--partitions", type=int, default=4)
    g.add_argument("--rounds", type=int, default=1,
                   help="abuse + measured run + unloaded run, this many times on the same broker "
                        "(RSS that keeps growing from round to round is a leak)")
    g.add_argument("--no-after", action="store_true",
                   help="skip the third, unloaded run after the abusers are gone")
    g = ap.add_argument_group("abusers")
    g.add_argument("--idle", type=int, default=10000)
    g.add_argument("--no-idle-api-versions", action="store_true",
                   help="idle connections send nothing at all (default: one ApiVersions)")
    g.add_argument("--slowloris", type=int, default=1000)
    g.add_argument("--slowloris-size", type=int, default=1 * MIB,
                   help="frame size the slowloris prefix promises")
    g.add_argument("--slowloris-interval", type=float, default=3.0,
                   help="seconds between two dribbled bytes of one connection")
    g.add_argument("--no-slowloris-reconnect", action="store_true")
    g.add_argument("--never-read", type=int, default=50, help="connections pipelining Fetches")
    g.add_argument("--never-read-requests", type=int, default=256,
                   help="Fetch requests each never-read connection pipelines")
    g.add_argument("--never-read-max-bytes", type=int, default=50 * MIB,
                   help="max_bytes (request and partition) of each never-read Fetch")
    g.add_argument("--populate-mib", type=int, default=64,
                   help="MiB in the partition the never-read Fetches ask for")
    g.add_argument("--bomb-interval", type=float, default=0.5,
                   help="seconds between two bombs (-1: no bombs)")
    g.add_argument("--bomb-codecs", default="gzip,zstd,lz4")
    g.add_argument("--bomb-mib", type=int, default=0,
                   help="inflated MiB of every bomb (0: gzip 512, zstd 1024, lz4 200)")
    g.add_argument("--amplifiers", type=int, default=2,
                   help="connections looping amplifying Lookups and reading the answers")
    g.add_argument("--amplifier-interval", type=float, default=1.0,
                   help="pause between two Lookups of one amplifier")
    g.add_argument("--amplifier-keys", type=int, default=5000,
                   help="times one Lookup names the large row")
    g.add_argument("--amplifiers-never-read", type=int, default=4,
                   help="connections pipelining amplifying Lookups and never reading")
    g.add_argument("--lookup-pipeline", type=int, default=8,
                   help="Lookups each never-reading amplifier pipelines")
    g.add_argument("--row-bytes", type=int, default=1000000,
                   help="the large row's value (fits the default max.message.bytes)")
    g.add_argument("--abuser-nice", type=int, default=0,
                   help="nice value of the abuser processes: 19 keeps their own client-side CPU "
                        "(Python parsing answers) from competing with the broker and the "
                        "well-behaved client on a small machine, as abusers on other hosts would")
    g.add_argument("--settle", type=float, default=5.0,
                   help="seconds between the abusers being in place and the measured run")
    g = ap.add_argument_group("checks")
    g.add_argument("--rss-bound-mib", type=float, default=1024)
    g.add_argument("--min-ratio", type=float, default=0.9)
    g.add_argument("--rss-abort-mib", type=float, default=6144,
                   help="kill the broker past this RSS (protects the machine; counts as a failure)")
    g.add_argument("--json", help="write every figure to this file")
    g.add_argument("--quota", action="append", default=[], metavar="ENTITY:KEY=VALUE[,...]",
                   help="a client quota set once the broker is up, through `strata quota alter`; "
                   "ENTITY is client-id=NAME, client-id-default, user=NAME or user-default "
                   "(e.g. client-id-default:request_percentage=10; the abusers' client ids are "
                   "soak-idle, soak-never-read, soak-never-read-lookup, "
                   "soak-bomb and soak-amplifier; the well-behaved pair's soak-well-behaved)")
    g.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                   help="another broker setting (for reproductions: the soak's figures are "
                        "meant with the defaults)")
    args = ap.parse_args()

    if args.role:
        cfg = json.loads(args.cfg)
        raise_nofile(cfg.get("nofile", 1024))
        if cfg.get("nice"):
            os.nice(cfg["nice"])
        (Holder if args.role == "holder" else Hammer)(cfg).run()
        return 0
    return orchestrate(args)


def orchestrate(args):
    import harness
    harness.BROKER = args.broker
    if not os.path.exists(args.broker):
        print("no broker binary at %s (set STRATA_BROKER or --broker)" % args.broker, file=sys.stderr)
        return 2
    held = args.idle + args.slowloris + args.never_read + args.amplifiers_never_read
    # What a deployment expecting this many clients changes: a bounded max.connections with
    # headroom, open.files.reserved sized to it (+100, docs/operations.md), and the descriptor
    # limit (systemd LimitNOFILE) so that the reservation is at most half of it. Everything else
    # (idle reaper, frame deadline, request pool, response budget, message size) stays default.
    max_conns = int(math.ceil((held + 100) / 1000.0)) * 1000 + 1000
    reserved = max_conns + 100
    # The broker gets 65536 descriptors (a common LimitNOFILE) when this process may raise its
    # hard limit that far, else the hard limit it has (the broker then reserves at most half).
    own = raise_nofile(max(held + 1024, 65536, 2 * reserved))
    broker_nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if broker_nofile == resource.RLIM_INFINITY or broker_nofile > max(65536, 2 * reserved):
        broker_nofile = max(65536, 2 * reserved)
    overrides = {"max.connections": str(max_conns), "open.files.reserved": str(reserved)}
    for kv in args.override:
        k, _, v = kv.partition("=")
        overrides[k] = v
    per_holder = max(256, own - 256)
    n_holders = max(1, int(math.ceil(held / float(per_holder))))
    machine = dict(cores=os.cpu_count(), loadavg_start=os.getloadavg(),
                   mem_total_mib=int(open("/proc/meminfo").readline().split()[1]) // 1024,
                   own_nofile=own, holders=n_holders, broker_nofile=broker_nofile)
    print("machine: %d cores, load average %.2f %.2f %.2f, %d MiB RAM; this script's open-files "
          "limit %d -> %d holder process(es); broker nofile %d" % (
              machine["cores"], *machine["loadavg_start"], machine["mem_total_mib"], own, n_holders,
              broker_nofile), flush=True)
    print("broker overrides: %s" % " ".join("%s=%s" % kv for kv in overrides.items()), flush=True)

    b = harness.BrokerProcess(overrides=overrides, nofile=broker_nofile)
    b.start()
    for q in args.quota:
        set_quota(b.bootstrap, q)
    mon = Monitor(b, int(args.rss_abort_mib * 1024))
    mon.start()
    prober = Prober(b.port)
    prober.start()
    results = dict(args=vars(args), machine=machine, overrides=overrides, phases={})
    children = []
    failures = []
    try:
        bs = b.bootstrap
        tag = "%x" % (int(time.time()) & 0xffffff)
        fetch_topic, bomb_topic, pk_topic = "soak-fetch-" + tag, "soak-bomb-" + tag, "soak-pk-" + tag
        create_topic(bs, fetch_topic, 1)
        create_topic(bs, bomb_topic, 1)
        create_topic(bs, pk_topic, 1, {"table.type": "primary-key"})
        # every topic now: under load a CreateTopics may wait as long as any other request
        names = ["baseline", "final"] + [x + ("" if r == 1 else "-%d" % r) for r in
                                          range(1, args.rounds + 1) for x in ("loaded", "after")]
        wb_topics = {name: "soak-wb-%s-%s" % (name, tag) for name in names}
        for t in wb_topics.values():
            create_topic(bs, t, args.partitions)
        populate(bs, fetch_topic, args.populate_mib)
        with RawConn(b.port, timeout=60) as c:
            err, _, _, msg = produce_v8(c, pk_topic, 0, [(AMP_KEY, os.urandom(args.row_bytes), [])])
            if err:
                raise RuntimeError("writing the large row failed: %d %s" % (err, msg))

        def phase(name):
            mon.phase = prober.phase = name
            topic = wb_topics[name]
            cpu0, t0 = proc_cpu_s(b.proc.pid), now()
            print("[%s] well-behaved producer %.0f s, then consumer ..." % (name, args.duration), flush=True)
            r = well_behaved(bs, topic, args.partitions, args.duration, args.message_bytes,
                             consume_timeout=max(120, args.duration * 4))
            cpu1 = proc_cpu_s(b.proc.pid)
            r["broker_cpu_s"] = round(cpu1 - cpu0, 1) if cpu1 is not None else None
            r["wall_s"] = round(now() - t0, 1)
            r["loadavg"] = os.getloadavg()
            r.update(mon.phase_stats(name))
            r["probe"] = prober.phase_stats(name)
            results["phases"][name] = r
            print("[%s] produce %.1f MB/s, consume %.1f MB/s, broker CPU %s s, RSS max %s MiB" % (
                name, r["produce_mb_s"], r["consume_mb_s"], r["broker_cpu_s"], r.get("rss_max_mib")),
                flush=True)
            # A phase writes several GB: kept, they push the next phases' records out of the page
            # cache, and those consumers read from the disk (measured: 0.7x the rate, idle
            # connections or not). Deleted, every phase meets the same cache.
            admin = itutil.ck_admin(bs)  # held until the answer: a dropped client aborts it
            admin.delete_topics([topic])[topic].result(60)
            return r

        base = phase("baseline")

        hcfg = dict(port=b.port, idle_api_versions=not args.no_idle_api_versions,
                    slowloris_size=args.slowloris_size, slowloris_interval=args.slowloris_interval,
                    slowloris_reconnect=not args.no_slowloris_reconnect,
                    never_read_requests=args.never_read_requests,
                    never_read_max_bytes=args.never_read_max_bytes, fetch_topic=fetch_topic,
                    lookup_pipeline=args.lookup_pipeline, pk_topic=pk_topic,
                    amplifier_keys=args.amplifier_keys, nice=args.abuser_nice)

        def split(n, k, i):
            return n // k + (1 if i < n % k else 0)

        results["rounds"] = []
        for rnd in range(1, args.rounds + 1):
            suffix = "" if rnd == 1 else "-%d" % rnd
            # ---- abusers in place
            mon.phase = prober.phase = "abuse-setup" + suffix
            cpu_setup0 = proc_cpu_s(b.proc.pid)
            t_setup = now()
            for i in range(n_holders):
                cfg = dict(hcfg, idle=split(args.idle, n_holders, i),
                           slowloris=split(args.slowloris, n_holders, i),
                           never_read=split(args.never_read, n_holders, i),
                           never_read_lookups=split(args.amplifiers_never_read, n_holders, i))
                cfg["nofile"] = cfg["idle"] + cfg["slowloris"] + cfg["never_read"] + \
                    cfg["never_read_lookups"] + 256
                children.append(Child("holder", cfg))
            children.append(Child("hammer", dict(
                port=b.port, bomb_topic=bomb_topic, pk_topic=pk_topic,
                bomb_codecs=[c for c in args.bomb_codecs.split(",") if c], bomb_mib=args.bomb_mib,
                bomb_interval=args.bomb_interval, amplifiers=args.amplifiers,
                amplifier_keys=args.amplifier_keys, amplifier_interval=args.amplifier_interval,
                nice=args.abuser_nice)))
            for ch in children:
                if not ch.ready.wait(600) or ch.ready_msg is None:
                    raise RuntimeError("%s process did not get ready (exit %s)" % (ch.role, ch.proc.poll()))
                print("abuser ready: %s" % json.dumps(ch.ready_msg), flush=True)
            time.sleep(args.settle)
            rr = dict(round=rnd)
            rr["abuse_setup"] = dict(wall_s=round(now() - t_setup, 1),
                                     broker_cpu_s=round(proc_cpu_s(b.proc.pid) - cpu_setup0, 1),
                                     **mon.phase_stats("abuse-setup" + suffix))
            child_cpu0 = {ch.proc.pid: ch.cpu_s() for ch in children}
            phase("loaded" + suffix)
            rr["abuser_cpu_s_during_loaded"] = {
                "%s-%d" % (ch.role, ch.proc.pid): round((ch.cpu_s() or 0) - (child_cpu0[ch.proc.pid] or 0), 1)
                for ch in children}
            mon.phase = prober.phase = "abuse-stop" + suffix
            held_s = now() - t_setup
            stats = [ch.stop() for ch in children]
            rr["abusers_held_s"] = round(held_s, 1)
            rr["abusers"] = merge_stats([s for s in stats if s])
            for ch, st in zip(children, stats):
                if st is None:
                    failures.append("%s process gave no statistics (exit %s)" % (ch.role, ch.proc.returncode))
            children = []
            results["rounds"].append(rr)
            time.sleep(2)
            if not args.no_after and b.alive():
                phase("after" + suffix)
            if not b.alive():
                break
        mon.phase = prober.phase = "final"
        results["bomb_topic_high_watermark"] = high_watermark(b.port, bomb_topic) if b.alive() else None
        results["final"] = final_health(b, wb_topics["final"])
    except Exception as e:  # noqa: BLE001
        failures.append("run aborted: %r" % (e,))
        if not b.alive():
            failures.append("broker died")
    finally:
        for ch in children:
            ch.stop(10)
        time.sleep(1.5)
        mon.stop.set()
        prober.stop.set()
        mon.join(5)
        hwm = proc_status(b.proc.pid).get("VmHWM") if b.alive() else None
        if hwm is None and mon.samples:
            hwm = max(x[2] or 0 for x in mon.samples)
        results["rss_peak_mib"] = round(hwm / 1024, 1) if hwm else None
        results["rss_samples_mib"] = [(round(x[0] - mon.samples[0][0], 1), round((x[1] or 0) / 1024, 1),
                                       x[5], x[7]) for x in mon.samples]
        results["broker_cpu_s_total"] = proc_cpu_s(b.proc.pid) if b.alive() else None
        results["loadavg_end"] = os.getloadavg()
        results["broker_alive_at_end"] = b.alive()
        results["broker_exit"] = b.proc.poll()
        results["broker_log_counts"] = log_counts(b.log_lines)
        if not b.alive():
            results["broker_log_tail"] = b.log_lines[-40:]
        if mon.aborted:
            failures.append("broker killed: " + mon.aborted)
        try:
            if b.alive():
                rc = b.stop(60)
                results["broker_stop_exit"] = rc
        except RuntimeError as e:
            failures.append(str(e))
        b.cleanup()
    failures += check(results, args)
    results["failures"] = failures
    report(results, args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1, default=str)
    return 1 if failures else 0


def merge_stats(stats):
    """Sums the holders' counters; keeps the hammer's."""
    out = {}
    for s in stats:
        for k, v in s.items():
            if k in ("event", "role"):
                continue
            if k not in out:
                out[k] = json.loads(json.dumps(v))
                continue
            for kk, vv in v.items():
                if isinstance(vv, (int, float)) and not isinstance(vv, bool) and \
                        isinstance(out[k].get(kk), (int, float)):
                    out[k][kk] = (max(out[k][kk], vv) if kk.startswith(("oldest", "first"))
                                  else out[k][kk] + vv)
                elif isinstance(vv, dict) and isinstance(out[k].get(kk), dict) and kk == "lifetime_s":
                    o = out[k][kk]
                    out[k][kk] = dict(min=min(o["min"], vv["min"]), median=o["median"],
                                      max=max(o["max"], vv["max"]))
                elif out[k].get(kk) is None:
                    out[k][kk] = vv
    return out


def log_counts(lines):
    pats = {
        "frame read timeout (slowloris)": "did not arrive within socket.request.read.timeout.ms",
        "idle close": "idle for connections.max.idle.ms",
        "accept failed": "accept failed",
        "closed at accept (limit)": "max.connections",
        "bad frame size": "outside [",
        "handler failed": "handler failed",
        "error lines": "[error]",
        "critical lines": "[critical]",
    }
    return {k: sum(1 for l in lines if p in l) for k, p in pats.items()}


def check(r, args):
    f = []
    if not r.get("broker_alive_at_end"):
        f.append("broker not alive at the end (exit %s)" % r.get("broker_exit"))
    if r.get("broker_stop_exit") not in (0, None):
        f.append("broker's clean stop exited %s" % r.get("broker_stop_exit"))
    if r.get("rss_peak_mib") and r["rss_peak_mib"] > args.rss_bound_mib:
        f.append("peak RSS %.0f MiB > bound %.0f MiB" % (r["rss_peak_mib"], args.rss_bound_mib))
    ph = r["phases"]
    loaded = [n for n in ph if n.startswith("loaded")]
    if "baseline" not in ph or not loaded:
        f.append("no measured run under load")
    else:
        for name in loaded:
            for k in ("produce_mb_s", "consume_mb_s"):
                base, load = ph["baseline"][k], ph[name][k]
                ratio = load / base if base else 0.0
                r.setdefault("ratios", {}).setdefault(name, {})[k] = round(ratio, 3)
                if ratio < args.min_ratio:
                    f.append("%s %s %.1f / baseline %.1f = %.2f < %.2f" % (
                        name, k, load, base, ratio, args.min_ratio))
    for name, p in ph.items():
        # a message that timed out on the client may still have been appended: consumed can be
        # more than delivered; fewer is a loss
        if p["produce_errors"] or p["undelivered"] or p["consumed"] < p["delivered"]:
            f.append("%s: well-behaved client errors (produce errors %d (%s), undelivered %d, "
                     "consumed %d of %d delivered)" % (name, p["produce_errors"], p["first_error"],
                                                       p["undelivered"], p["consumed"], p["delivered"]))
    for rr in r.get("rounds", []):
        ab = rr.get("abusers", {})
        tag = "round %d: " % rr["round"] if len(r["rounds"]) > 1 else ""
        bomb = ab.get("bomb")
        if bomb and args.bomb_interval >= 0:
            bad = {k: v for k, v in bomb["codes"].items() if int(k.split(":")[1]) not in BOMB_REFUSALS}
            if bad:
                f.append(tag + "bombs not refused with a Kafka error: %s" % bad)
            if not bomb["sent"]:
                f.append(tag + "no bomb was answered")
        amp = ab.get("amplifier")
        if amp and args.amplifiers:
            cap = LOOKUP_MAX_MAX_BYTES + args.row_bytes + MIB
            if amp["max_response_bytes"] > cap:
                f.append(tag + "a Lookup answer of %d bytes > cap %d" % (amp["max_response_bytes"], cap))
            if not amp["requests"]:
                f.append(tag + "no amplifying Lookup was answered")
            if amp["errors"]:
                f.append(tag + "amplifying Lookups got errors %s" % amp["errors"])
    if r.get("bomb_topic_high_watermark"):
        f.append("bomb topic high watermark %s: something was appended" % r["bomb_topic_high_watermark"])
    fin = r.get("final", {})
    if not (fin.get("alive") and fin.get("metadata") and fin.get("round_trip")):
        f.append("final health check failed: %s" % fin)
    return f


def report(r, args):
    ph = r["phases"]
    w = sys.stdout.write
    w("\n=== soak: abusive clients ===\n")
    m = r["machine"]
    w("machine: %d cores, %d MiB, load average at start %.2f, at end %.2f\n" % (
        m["cores"], m["mem_total_mib"], m["loadavg_start"][0], r["loadavg_end"][0]))
    w("broker overrides: %s (everything else default)\n" % " ".join(
        "%s=%s" % kv for kv in r["overrides"].items()))
    w("\n%-10s %9s %9s %7s %7s %8s %8s %7s %6s %9s %9s\n" % (
        "phase", "prod MB/s", "cons MB/s", "wall s", "CPU s", "RSS max", "RSS avg", "conns",
        "load1", "probe p50", "probe max"))
    for name, p in ph.items():
        pr = p.get("probe") or {}
        w("%-10s %9.1f %9.1f %7s %7s %8s %8s %7s %6.2f %9s %9s\n" % (
            name, p["produce_mb_s"], p["consume_mb_s"], p["wall_s"], p["broker_cpu_s"],
            p.get("rss_max_mib"), p.get("rss_mean_mib"), int(p.get("connections_max") or 0),
            p["loadavg"][0], pr.get("p50_ms"), pr.get("max_ms")))
    w("(wall s: produce --duration s + flush + consume back; probe: ApiVersions + Metadata on a new "
      "connection every 2 s, ms)\n")
    for name, rt in (r.get("ratios") or {}).items():
        w("ratio %s/baseline: produce %.3f, consume %.3f (bound >= %.2f)\n" % (
            name, rt["produce_mb_s"], rt["consume_mb_s"], args.min_ratio))
    for name in [n for n in ph if n.startswith("after")]:
        a = ph[name]
        w("(noise: %s/baseline produce %.3f, consume %.3f)\n" % (
            name, a["produce_mb_s"] / (ph["baseline"]["produce_mb_s"] or 1),
            a["consume_mb_s"] / (ph["baseline"]["consume_mb_s"] or 1)))
    w("broker peak RSS (VmHWM): %s MiB (bound %.0f MiB)\n" % (r.get("rss_peak_mib"), args.rss_bound_mib))
    for rr in r.get("rounds", []):
        s = rr["abuse_setup"]
        w("round %d: abusers set up in %s s (broker CPU %s s, RSS max %s MiB, connections %s), "
          "held %s s; abuser processes' CPU s during the measured run: %s\n" % (
              rr["round"], s["wall_s"], s["broker_cpu_s"], s.get("rss_max_mib"),
              s.get("connections_max"), rr["abusers_held_s"], rr["abuser_cpu_s_during_loaded"]))
        ab = rr.get("abusers") or {}
        for k in ("idle", "slowloris", "never_read", "never_read_lookups", "bomb", "amplifier"):
            if k in ab:
                w("  %-19s %s\n" % (k, json.dumps(ab[k], sort_keys=True)))
    w("bomb topic high watermark: %s\n" % r.get("bomb_topic_high_watermark"))
    w("broker log: %s\n" % json.dumps(r.get("broker_log_counts")))
    w("final: %s\n" % json.dumps(r.get("final")))
    if r.get("broker_log_tail"):
        w("broker log tail:\n  %s\n" % "\n  ".join(r["broker_log_tail"]))
    if r["failures"]:
        w("FAIL:\n  - %s\n" % "\n  - ".join(r["failures"]))
    else:
        w("PASS\n")


if __name__ == "__main__":
    sys.exit(main())
