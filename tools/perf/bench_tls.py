"""TLS vs plaintext on one broker: strata-perf produce and consume (librdkafka) of the same
records through a PLAINTEXT and an SSL listener of one broker, alternating, three rounds; records/s
(wall time of the strata-perf process) and the broker's CPU-seconds per GiB of payload from
/proc/<pid>/stat. Certificates from test/integration/tls_util.py. Run from the repository root:
  /usr/bin/python3 tools/perf/bench_tls.py
Results in docs/benchmarks.md ("TLS vs plaintext")."""
import json, os, subprocess, sys, tempfile, time
sys.path.insert(0, "test/integration")
import harness, tls_util
PERF = os.environ.get("STRATA_PERF", "build/tools/perf/strata-perf")
pki = tls_util.make_pki(tempfile.mkdtemp(prefix="pki-"))
b = harness.BrokerProcess(overrides={
    "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
    "ssl.keystore.location": pki["server"], "metrics.listener": "", "schema.registry.listener": ""})
b.start()
def cpu():
    with open("/proc/%d/stat" % b.proc.pid) as f:
        parts = f.read().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")
def run(kind, listener, size, n):
    topic = "tb-%s-%s-%d-%d" % (kind, listener, size, time.time_ns())
    props = []
    if listener == "SSL":
        props = ["security.protocol=SSL", "ssl.ca.location=" + pki["ca"]]
    addr = "127.0.0.1:%d" % b.ports[listener]
    if kind == "produce":
        args = [PERF, "produce", "--bootstrap", addr, "--topic", topic, "--num-records", str(n),
                "--record-size", str(size)] + sum([["--producer-prop", p] for p in props], [])
        c0, t0 = cpu(), time.time()
        out = subprocess.run(args, capture_output=True, text=True, timeout=300)
        return time.time() - t0, cpu() - c0, out.stdout.strip().splitlines()[-1:], topic
results = {}
for rnd in range(3):
    for size, n in ((100, 1000000), (1024, 300000)):
        for listener in ("PLAINTEXT", "SSL"):
            wall, cpus, line, topic = run("produce", listener, size, n)
            gib = size * n / 2**30
            results.setdefault((size, listener), []).append((n / wall, cpus / gib))
            # consume the same topic
            addr = "127.0.0.1:%d" % b.ports[listener]
            props = [] if listener == "PLAINTEXT" else ["--consumer-prop", "security.protocol=SSL", "--consumer-prop", "ssl.ca.location=" + pki["ca"]]
            c0, t0 = cpu(), time.time()
            subprocess.run([PERF, "consume", "--bootstrap", addr, "--topic", topic, "--num-records", str(n)] + props, capture_output=True, text=True, timeout=300)
            w = time.time() - t0; cc = cpu() - c0
            results.setdefault((size, listener, "consume"), []).append((n / w, cc / gib))
            print(rnd, size, listener, "produce %.0f rec/s %.2f cpu-s/GiB" % results[(size, listener)][-1],
                  "consume %.0f rec/s %.2f cpu-s/GiB" % results[(size, listener, "consume")][-1], flush=True)
b.stop(); b.cleanup()
