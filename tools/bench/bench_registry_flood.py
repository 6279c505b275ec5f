"""A flood of wrong passwords on the Schema Registry's basic auth (one broker, one SCRAM-SHA-512
user): `wrk -t2 -c16 -d6s` sending a wrong password while a remembered client sends GET /subjects
every 50 ms on a new connection; prints the broker's cores (from /proc), the flood's answers/s
and the remembered client's p50 / max. docs/benchmarks.md, "Wrong-password floods".

usage: /usr/bin/python3 tools/bench/bench_registry_flood.py   (after a build of build/; needs wrk)"""
import base64
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "test", "integration"))
os.environ.setdefault("STRATA_BROKER", os.path.join(ROOT, "build", "broker", "strata-broker"))
import harness  # noqa: E402
import itutil  # noqa: E402
b = harness.BrokerProcess(overrides={
    "schema.registry.listener": "http://127.0.0.1:0",
    "schema.registry.authentication.method": "basic",
    "sasl.scram.bootstrap.users": "SCRAM-SHA-512=[name=gus,password=right]"})
b.start()
try:
    url = itutil.registry_url(b)
    good = "Basic " + base64.b64encode(b"gus:right").decode()
    bad = "Basic " + base64.b64encode(b"gus:wrong").decode()
    def get(auth):
        req = urllib.request.Request(url + "/subjects", headers={"Authorization": auth})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status
        except urllib.error.HTTPError as e:
            return e.code
    assert get(good) == 200  # remembered from now on
    pid = b.proc.pid
    def cpu():
        f = open("/proc/%d/stat" % pid).read().split(")")[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
    lat = []
    stop = threading.Event()
    def remembered():
        while not stop.is_set():
            t0 = time.time(); s = get(good); lat.append((time.time() - t0) * 1000)
            assert s == 200, s
            time.sleep(0.05)
    th = threading.Thread(target=remembered); th.start()
    c0, t0 = cpu(), time.time()
    out = subprocess.run(["wrk", "-t2", "-c16", "-d6s", "-H", "Authorization: " + bad, url + "/subjects"],
                         capture_output=True, text=True).stdout
    c1, t1 = cpu(), time.time()
    stop.set(); th.join()
    rps = [l for l in out.splitlines() if "Requests/sec" in l]
    print("broker cores %.2f, wrong-password %s, remembered p50 %.1f ms max %.1f ms (n=%d)" % (
        (c1 - c0) / (t1 - t0), rps[0].split()[-1] if rps else "?", statistics.median(lat), max(lat), len(lat)))
finally:
    b.stop(); b.cleanup()
