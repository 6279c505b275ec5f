"""Multi-broker integration tests: real etcd members and several strata-broker processes.

- Etcd: one etcd v3 member ($STRATA_ETCD, else /usr/bin/etcd) on loopback client and peer ports
  from the OS, in its own data dir, with fast elections and auto-compaction; kill / stop /
  restart (same ports and data), pause / resume, and put / get through etcd's JSON gateway.
- EtcdCluster(n): n members with a static initial cluster; `endpoints` is the comma-separated list.
- Cluster(n, etcd_endpoints, extra_props): n brokers (harness.BrokerProcess), node.id 1..n, each
  with its own data dir and a port chosen before start (the broker registers its advertised
  address in etcd, so the port is fixed across restarts), a unique coordination.etcd.prefix.
  Brokers are named by node.id: kill(2) is SIGKILL of node 2. Without endpoints each broker is a
  single node (cluster mode off), which is how the harness itself is checked.
- ClusterTestCase: unittest base class that prints every process's log tail when a test fails and
  cleans up what a test registered with self.track(...).

Every child gets SIGKILL when the test process dies (harness._die_with_parent), so a killed test
run leaves nothing behind. Waits use deadlines (harness.wait_until), never fixed sleeps.
"""
import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import itutil  # noqa: E402

ETCD = os.environ.get("STRATA_ETCD") or "/usr/bin/etcd"


_handed_out = set()


def free_port():
    """A loopback port the OS just handed out (bound, then released for the child to take), never
    one this process handed out before (a child may not have bound its port yet)."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _handed_out:
            _handed_out.add(port)
            return port


def all_threads_stopped(pid):
    """Every thread of `pid` is in state T (stopped) per /proc; True for a process that is gone."""
    try:
        tids = os.listdir("/proc/%d/task" % pid)
        for tid in tids:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            if state not in ("T", "t"):
                return False
        return True
    except (FileNotFoundError, ProcessLookupError):
        return True


def port_accepts(port, timeout=0.5):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False


def _tail(path, n):
    try:
        with open(path, errors="replace") as f:
            return f.read().splitlines()[-n:]
    except OSError:
        return []


# ---------------------------------------------------------------- etcd


class Etcd:
    """One etcd member. Standalone unless `initial_cluster` ("name=peer_url,...") names others;
    the caller then starts every member before waiting for health (a quorum is needed)."""

    def __init__(self, name="m0", base_dir=None, initial_cluster=None, token=None,
                 heartbeat_ms=50, election_ms=500):
        self.name = name
        self.owns_dir = base_dir is None
        self.base_dir = base_dir or tempfile.mkdtemp(prefix="strata-etcd-")
        self.data_dir = os.path.join(self.base_dir, name)
        self.log_path = os.path.join(self.base_dir, name + ".log")
        self.client_port = free_port()
        self.peer_port = free_port()
        self.initial_cluster = initial_cluster
        self.token = token or "strata-it-" + uuid.uuid4().hex[:8]
        self.heartbeat_ms = heartbeat_ms
        self.election_ms = election_ms
        self.proc = None
        self._log = None

    @property
    def endpoint(self):
        return "127.0.0.1:%d" % self.client_port

    @property
    def client_url(self):
        return "http://" + self.endpoint

    @property
    def peer_url(self):
        return "http://127.0.0.1:%d" % self.peer_port

    def spawn(self):
        """Starts the process without waiting (again on the same ports and data after a kill)."""
        if self.alive():
            raise RuntimeError("etcd %s is already running" % self.name)
        args = [ETCD, "--name=" + self.name, "--data-dir=" + self.data_dir,
                "--listen-client-urls=" + self.client_url,
                "--advertise-client-urls=" + self.client_url,
                "--listen-peer-urls=" + self.peer_url,
                "--initial-advertise-peer-urls=" + self.peer_url,
                "--initial-cluster=" + (self.initial_cluster or
                                        "%s=%s" % (self.name, self.peer_url)),
                "--initial-cluster-state=new", "--initial-cluster-token=" + self.token,
                # Fast elections: a killed member's successor leads within about a second.
                "--heartbeat-interval=%d" % self.heartbeat_ms,
                "--election-timeout=%d" % self.election_ms,
                # Watches are resumed from a revision: keep an hour of history, not all of it.
                "--auto-compaction-retention=1",
                "--logger=zap", "--log-outputs=stderr"]
        self._close_log()
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT,
                                     preexec_fn=harness._die_with_parent)
        return self

    def start(self, timeout=20):
        self.spawn()
        self.wait_healthy(timeout)
        return self

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def healthy(self):
        """etcd's /health: true once the member is serving and the cluster has a leader."""
        try:
            with urllib.request.urlopen(self.client_url + "/health", timeout=1) as r:
                return json.loads(r.read().decode()).get("health") == "true"
        except (OSError, ValueError, urllib.error.URLError):
            return False

    def wait_healthy(self, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if not self.alive():
                raise RuntimeError("etcd %s exited (%s):\n%s" % (
                    self.name, self.proc.returncode if self.proc else None, self.log_tail()))
            if self.healthy():
                return
            time.sleep(0.05)
        raise RuntimeError("etcd %s not healthy within %ss:\n%s" % (self.name, timeout,
                                                                   self.log_tail()))

    def kill(self):
        """SIGKILL."""
        if self.alive():
            self.proc.send_signal(signal.SIGCONT)  # harmless; a paused member dies either way
            self.proc.kill()
            self.proc.wait()

    def stop(self, timeout=20):
        """SIGTERM and wait."""
        if not self.alive():
            return
        self.proc.send_signal(signal.SIGCONT)
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise RuntimeError("etcd %s ignored SIGTERM for %ss" % (self.name, timeout))

    def restart(self, clean=False, wait=True, timeout=20):
        """kill -9 (or SIGTERM when clean) and start again on the same ports and data."""
        if clean:
            self.stop()
        else:
            self.kill()
        self.spawn()
        if wait:
            self.wait_healthy(timeout)
        return self

    def pause(self):
        self.proc.send_signal(signal.SIGSTOP)
        harness.wait_until(lambda: all_threads_stopped(self.proc.pid), 10, what="etcd stopped")

    def resume(self):
        self.proc.send_signal(signal.SIGCONT)

    # --- the JSON gateway (keys and values travel as base64)

    def _post(self, path, body, timeout=5):
        req = urllib.request.Request(self.client_url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.loads(r.read().decode())

    @staticmethod
    def _b64(s):
        return base64.b64encode(s.encode() if isinstance(s, str) else s).decode()

    def put(self, key, value):
        """Returns the revision of the put."""
        r = self._post("/v3/kv/put", {"key": self._b64(key), "value": self._b64(value)})
        return int(r["header"]["revision"])

    def get(self, key):
        """The value (str) or None."""
        r = self._post("/v3/kv/range", {"key": self._b64(key)})
        kvs = r.get("kvs", [])
        return base64.b64decode(kvs[0]["value"]).decode() if kvs else None

    def get_prefix(self, prefix):
        """{key: value} of every key under prefix (str), e.g. a cluster's broker records."""
        p = prefix.encode()
        end = p[:-1] + bytes([p[-1] + 1])
        r = self._post("/v3/kv/range", {"key": self._b64(p), "range_end": self._b64(end)})
        return {base64.b64decode(kv["key"]).decode(): base64.b64decode(kv.get("value", "")).decode()
                for kv in r.get("kvs", [])}

    def log_tail(self, n=15):
        return "--- etcd %s ---\n%s" % (self.name, "\n".join(_tail(self.log_path, n)))

    def _close_log(self):
        if self._log is not None:
            self._log.close()
            self._log = None

    def cleanup(self):
        self.kill()
        self._close_log()
        if self.owns_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)


class EtcdCluster:
    """n etcd members with a static initial cluster, in one temporary directory."""

    def __init__(self, n=3, **member_args):
        self.base_dir = tempfile.mkdtemp(prefix="strata-etcd-")
        token = "strata-it-" + uuid.uuid4().hex[:8]
        self.members = [Etcd("m%d" % i, self.base_dir, token=token, **member_args)
                        for i in range(n)]
        initial = ",".join("%s=%s" % (m.name, m.peer_url) for m in self.members)
        for m in self.members:
            m.initial_cluster = initial

    @property
    def endpoints(self):
        """"host:port,host:port,..." for coordination.etcd.endpoints."""
        return ",".join(m.endpoint for m in self.members)

    def start(self, timeout=30):
        for m in self.members:  # all at once: none is healthy before a quorum is up
            m.spawn()
        for m in self.members:
            m.wait_healthy(timeout)
        return self

    def __getitem__(self, i):
        return self.members[i]

    def any_alive(self):
        return next(m for m in self.members if m.alive())

    def log_tail(self, n=15):
        return "\n".join(m.log_tail(n) for m in self.members)

    def cleanup(self):
        for m in self.members:
            m.cleanup()
        shutil.rmtree(self.base_dir, ignore_errors=True)


# ---------------------------------------------------------------- brokers


class Cluster:
    """n strata-broker processes, node.id 1..n. etcd_endpoints: "host:port,..." (an Etcd's
    `endpoint` or an EtcdCluster's `endpoints`); None or "" = every broker a single node."""

    def __init__(self, n_brokers=3, etcd_endpoints=None, extra_props=None, prefix=None):
        self.base_dir = tempfile.mkdtemp(prefix="strata-cluster-")
        self.etcd_endpoints = etcd_endpoints or ""
        # One prefix per cluster, so tests sharing an etcd never see each other's state.
        self.prefix = prefix or "/strata-it/" + uuid.uuid4().hex[:12]
        self.ports = {}
        self.brokers = {}
        for node in range(1, n_brokers + 1):
            self.ports[node] = free_port()
            props = {
                "node.id": str(node),
                "listeners": "PLAINTEXT://127.0.0.1:%d" % self.ports[node],
                "metrics.listener": "127.0.0.1:0",
                "schema.registry.listener": "",
                "coordination.etcd.endpoints": self.etcd_endpoints,
                "coordination.etcd.prefix": self.prefix,
                "coordination.lease.ttl.seconds": "2",
            }
            props.update(extra_props or {})
            d = os.path.join(self.base_dir, "broker-%d" % node)
            os.makedirs(d)
            self.brokers[node] = harness.BrokerProcess(overrides=props, data_dir=d)

    @property
    def node_ids(self):
        return sorted(self.brokers)

    def broker(self, node):
        return self.brokers[node]

    def address(self, node):
        return "127.0.0.1:%d" % self.ports[node]

    def bootstrap(self, only_alive=True):
        """Comma-separated addresses of the (running) brokers, for bootstrap.servers."""
        return ",".join(self.address(n) for n in self.node_ids
                        if not only_alive or self.brokers[n].alive())

    def alive(self, node):
        return self.brokers[node].alive()

    def start(self, node=None, timeout=30):
        """Starts one broker (again, with the same data dir and port), or all of them."""
        for n in ([node] if node is not None else self.node_ids):
            b = self.brokers[n]
            b.start(timeout)
            if b.port != self.ports[n]:
                raise RuntimeError("broker %d listens on %s, not %d" % (n, b.port, self.ports[n]))
        return self

    def kill(self, node):
        """SIGKILL: a crash."""
        b = self.brokers[node]
        if b.alive():
            b.proc.send_signal(signal.SIGCONT)
        b.kill()

    def stop(self, node, timeout=30):
        """SIGTERM and wait: a clean shutdown. Returns the exit code."""
        b = self.brokers[node]
        if b.alive():
            b.proc.send_signal(signal.SIGCONT)  # a paused broker cannot shut down
        return b.stop(timeout)

    def pause(self, node):
        """SIGSTOP: the process hangs with its connections open (its etcd lease runs out).
        Returns once the kernel reports every thread stopped (the signal is asynchronous: on a
        loaded machine a request sent right after it could still be answered)."""
        pid = self.brokers[node].proc.pid
        self.brokers[node].proc.send_signal(signal.SIGSTOP)
        harness.wait_until(lambda: all_threads_stopped(pid), 10, what="broker %d stopped" % node)

    def resume(self, node):
        self.brokers[node].proc.send_signal(signal.SIGCONT)

    def api_versions_ok(self, node):
        try:
            with itutil.RawConn(self.ports[node], timeout=2) as c:
                err, keys = itutil.api_versions(c)
                return err == 0 and bool(keys)
        except (OSError, ConnectionError, AssertionError):
            return False

    def wait_ready(self, nodes=None, timeout=30):
        """Each (given, else running) broker's port accepts and answers ApiVersions."""
        nodes = list(nodes) if nodes is not None else [n for n in self.node_ids if self.alive(n)]
        deadline = time.time() + timeout
        for n in nodes:
            while not self.api_versions_ok(n):
                if not self.alive(n):
                    raise RuntimeError("broker %d exited:\n%s" % (n, self.log_tail(n)))
                if time.time() > deadline:
                    raise RuntimeError("broker %d not answering ApiVersions within %ss:\n%s" %
                                       (n, timeout, self.log_tail(n)))
                time.sleep(0.05)
        return self

    def log_tail(self, node=None, n=40):
        nodes = [node] if node is not None else self.node_ids
        return "\n".join("--- broker %d ---\n%s" % (i, "\n".join(self.brokers[i].log_lines[-n:]))
                         for i in nodes)

    def cleanup(self):
        for n in self.node_ids:
            self.kill(n)
            self.brokers[n].cleanup()  # (does not own the dir: removed below)
        shutil.rmtree(self.base_dir, ignore_errors=True)


# ---------------------------------------------------------------- unittest base


class ClusterTestCase(unittest.TestCase):
    """Tracks the etcds and clusters a test starts (self.track(x)), prints their log tails when
    the test fails, and cleans them up after each test."""

    def setUp(self):
        self._tracked = []

    def track(self, thing):
        self._tracked.append(thing)
        return thing

    def run(self, result=None):
        before = len(result.failures) + len(result.errors) if result is not None else 0
        self._failed_logs = None
        out = super().run(result)
        if result is not None and len(result.failures) + len(result.errors) > before:
            sys.stderr.write("\n--- log tails for %s ---\n%s\n---\n" % (self.id(),
                                                                      self._failed_logs or ""))
        return out

    def shared(self):
        """Processes the class shares across tests (e.g. its etcd): logged on failure, not
        cleaned up here."""
        return []

    def tearDown(self):
        # The logs are read before cleanup removes the processes (run() prints them on failure).
        self._failed_logs = "\n".join(t.log_tail() for t in self.shared() + self._tracked)
        for t in reversed(self._tracked):
            t.cleanup()
