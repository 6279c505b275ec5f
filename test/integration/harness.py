"""Starts a real strata-broker process for integration tests.

Used by every test_*.py here with Debian's /usr/bin/python3 (which has kafka-python and
confluent-kafka). The broker binary comes from $STRATA_BROKER (set by meson), else build/.
Each BrokerProcess gets its own data dir and an OS-assigned port (listeners=...:0); the bound
port is read from the broker's "listening on" log line.
"""
import ctypes
import os
import re
import resource
import shutil
import signal
import subprocess
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BROKER = os.environ.get("STRATA_BROKER", os.path.join(ROOT, "build", "broker", "strata-broker"))
LISTEN_RE = re.compile(r"(?<!metrics )listening on (\w+)://([0-9.]+):(\d+)")


def _die_with_parent():
    # The broker gets SIGKILL if the test process dies, so a killed test run leaves no broker behind.
    PR_SET_PDEATHSIG = 1
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass


class BrokerProcess:
    def __init__(self, overrides=None, data_dir=None, nofile=None):
        """nofile: RLIMIT_NOFILE (soft and hard) of the broker, as `ulimit -n` would set it."""
        self.data_dir = data_dir or tempfile.mkdtemp(prefix="strata-it-")
        self.nofile = nofile
        self.owns_dir = data_dir is None
        self.overrides = dict(overrides or {})
        self.env = None  # extra environment of the next start (e.g. STRATA_FAILPOINTS)
        self.proc = None
        self.port = None
        self.ports = {}  # listener name -> bound port
        self._port_name = None
        self.log_lines = []
        self._port_seen = threading.Event()

    @property
    def bootstrap(self):
        return "127.0.0.1:%d" % self.port

    def start(self, timeout=30):
        # metrics.listener: a free port too (issue 6), so parallel brokers never collide on 9644.
        args = [BROKER, "--override", "listeners=PLAINTEXT://127.0.0.1:0",
                "--override", "metrics.listener=127.0.0.1:0",
                "--override", "schema.registry.listener=http://127.0.0.1:0",
                "--override", "log.dirs=" + os.path.join(self.data_dir, "logs")]
        for k, v in self.overrides.items():
            args += ["--override", "%s=%s" % (k, v)]
        self._port_seen.clear()
        self.port = None
        self._port_name = None
        self.ports = {}
        self._close_pipe()
        nofile = self.nofile

        def preexec():
            _die_with_parent()
            if nofile is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

        env = dict(os.environ, **self.env) if self.env else None
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, errors="replace", preexec_fn=preexec, env=env)
        threading.Thread(target=self._pump, args=(self.proc,), daemon=True).start()
        if not self._port_seen.wait(timeout):
            self.kill()
            raise RuntimeError("broker did not start:\n" + "\n".join(self.log_lines[-50:]))
        # Every listener's line (they are logged one after another).
        listeners = self.overrides.get("listeners", "PLAINTEXT://127.0.0.1:0")
        expected = len([x for x in listeners.split(",") if x.strip()])
        deadline = time.time() + timeout
        while len(self.ports) < expected and time.time() < deadline:
            time.sleep(0.01)
        return self

    def _pump(self, proc):
        for line in proc.stdout:
            line = line.rstrip("\n")
            self.log_lines.append(line)
            if os.environ.get("STRATA_IT_VERBOSE"):
                print("[broker] " + line, flush=True)
            m = LISTEN_RE.search(line)
            if m:
                name, port = m.group(1), int(m.group(3))
                self.ports[name] = port
                # `port`: the PLAINTEXT listener (what most tests use), else the first one.
                if self.port is None or (name == "PLAINTEXT" and self._port_name != name):
                    self.port, self._port_name = port, name
                self._port_seen.set()

    def _close_pipe(self):
        if self.proc is not None and self.proc.stdout is not None and self.proc.poll() is not None:
            self.proc.stdout.close()

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout=30):
        """SIGTERM and wait: a clean shutdown. Returns the exit code."""
        if not self.alive():
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError("broker ignored SIGTERM for %ss" % timeout)

    def kill(self):
        """SIGKILL: a crash."""
        if self.alive():
            self.proc.kill()
            self.proc.wait()

    def restart(self, clean=True):
        if clean:
            self.stop()
        else:
            self.kill()
        return self.start()

    def cleanup(self):
        self.kill()
        self._close_pipe()
        if self.owns_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)


def wait_until(predicate, timeout=20, interval=0.05, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    raise AssertionError("timed out waiting for " + what)
