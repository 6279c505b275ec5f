"""The embedded Schema Registry's read rate, GET /schemas/ids/{id}, with and without basic auth
(tools/bench.sh, section `registry`; docs/benchmarks.md).

Two brokers on loopback, one with schema.registry.authentication.method=none and one with basic
(a SCRAM user of the broker), the same schema registered on each. wrk (keep-alive connections,
one thread) reads the schema by id from each in alternating rounds of `seconds`; each round's
broker CPU comes from /proc. Prints one JSON line per round:
{"phase": "none"|"basic", "round", "requests", "req_per_s", "p50_us", "p99_us",
 "broker_cpu_s", "wrk_cpu_s"}.

usage: python3 bench_registry.py BROKER CLI WORKDIR ROUNDS SECONDS CONNECTIONS"""
import base64
import json
import os
import re
import resource
import subprocess
import sys
import time
import urllib.request

from proc_cpu import cpu_seconds as cpu_s

SCHEMA = json.dumps({"type": "record", "name": "Txn", "namespace": "bench",
                     "fields": [{"name": "account", "type": "string"},
                                {"name": "amount", "type": "double"},
                                {"name": "count", "type": ["null", "long"], "default": None}]})
USER, PASSWORD = "bench", "bench-password"
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


def start_broker(binary, workdir, name, extra):
    data = os.path.join(workdir, name)
    os.makedirs(data, exist_ok=True)
    log = open(os.path.join(workdir, name + ".log"), "w+")
    args = [binary, "--override", "listeners=PLAINTEXT://127.0.0.1:0",
            "--override", "schema.registry.listener=http://127.0.0.1:0",
            "--override", "metrics.listener=127.0.0.1:0",
            "--override", "log.dirs=" + data]
    for k, v in extra.items():
        args += ["--override", "%s=%s" % (k, v)]
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 30
    kafka = registry = None
    while time.time() < deadline and not (kafka and registry):
        if proc.poll() is not None:
            break
        log.seek(0)
        text = log.read()
        m = re.search(r"listening on PLAINTEXT://127\.0\.0\.1:(\d+)", text)
        kafka = m and "127.0.0.1:" + m.group(1)
        m = re.search(r"schema registry serving (http://[0-9.]+:\d+)", text)
        registry = m and m.group(1)
        time.sleep(0.05)
    if not (kafka and registry):
        proc.kill()
        log.seek(0)
        raise SystemExit("bench_registry: broker %s did not start:\n%s" % (name, log.read()))
    return proc, kafka, registry


def register(url, auth):
    headers = {"Content-Type": CONTENT_TYPE}
    if auth:
        headers["Authorization"] = auth
    req = urllib.request.Request(url + "/subjects/bench-value/versions",
                                 json.dumps({"schema": SCHEMA}).encode(), headers, method="POST")
    deadline = time.time() + 30
    while True:
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return json.loads(r.read())["id"]
        except OSError as e:  # `_schemas` is created on the first write: a few tries
            if time.time() > deadline:
                raise SystemExit("bench_registry: register at %s failed: %s" % (url, e))
            time.sleep(0.2)


def duration_us(text):
    m = re.fullmatch(r"([0-9.]+)(us|ms|s)", text)
    return float(m.group(1)) * {"us": 1, "ms": 1e3, "s": 1e6}[m.group(2)]


def wrk(url, seconds, connections, auth):
    args = ["wrk", "-t1", "-c%d" % connections, "-d%ds" % seconds, "--latency"]
    if auth:
        args += ["-H", "Authorization: " + auth]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(args + [url], capture_output=True, text=True, check=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    m = re.search(r"(\d+) requests in", out)
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if not m or errors:
        raise SystemExit("bench_registry: wrk failed or got errors:\n" + out)
    pct = dict(re.findall(r"^\s+(50|99)%\s+(\S+)$", out, re.M))
    return {"requests": int(m.group(1)),
            "req_per_s": float(re.search(r"Requests/sec:\s+([0-9.]+)", out).group(1)),
            "p50_us": duration_us(pct["50"]), "p99_us": duration_us(pct["99"]),
            "wrk_cpu_s": round((after.ru_utime + after.ru_stime) -
                               (before.ru_utime + before.ru_stime), 3)}


def main():
    binary, cli, workdir, rounds, seconds, connections = sys.argv[1:7]
    rounds, seconds, connections = int(rounds), int(seconds), int(connections)
    auth = "Basic " + base64.b64encode(("%s:%s" % (USER, PASSWORD)).encode()).decode()
    procs = []
    try:
        plain, _, plain_url = start_broker(binary, workdir, "registry-none", {})
        procs.append(plain)
        basic, basic_kafka, basic_url = start_broker(
            binary, workdir, "registry-basic", {"schema.registry.authentication.method": "basic"})
        procs.append(basic)
        subprocess.run([cli, "-b", basic_kafka, "user", "create", USER, "--password", PASSWORD],
                       check=True, capture_output=True)
        targets = {"none": (plain, "%s/schemas/ids/%d" % (plain_url, register(plain_url, None)),
                            None),
                   "basic": (basic, "%s/schemas/ids/%d" % (basic_url, register(basic_url, auth)),
                             auth)}
        for name, (_, url, a) in targets.items():  # warm-up (connections, the remembered login)
            wrk(url, 1, connections, a)
        for rnd in range(rounds):
            for name in (("none", "basic") if rnd % 2 == 0 else ("basic", "none")):
                proc, url, a = targets[name]
                c0 = cpu_s(proc.pid)
                r = wrk(url, seconds, connections, a)
                r.update({"phase": name, "round": rnd,
                          "broker_cpu_s": round(cpu_s(proc.pid) - c0, 3)})
                print(json.dumps(r), flush=True)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


if __name__ == "__main__":
    main()
