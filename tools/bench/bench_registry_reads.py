"""The Schema Registry on a 3-broker cluster (etcd, test/integration/cluster_harness.py): the
rate of GET /schemas/ids/{id} on one keep-alive connection, on the writer (the leader of
`_schemas`) and on a broker that is not (answering from its replica's copy), 3 rounds of 3,000,
with the brokers' CPU per request from /proc. docs/schema-registry.md, "In a cluster".

usage: /usr/bin/python3 tools/bench/bench_registry_reads.py   (after a build of build/)"""
import http.client
import json
import os
import sys
import time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "test", "integration"))
import cluster_harness  # noqa: E402
import itutil  # noqa: E402
from cluster_clients import admin as cluster_admin  # noqa: E402
from proc_cpu import cpu_seconds as cpu  # noqa: E402


etcd = cluster_harness.Etcd().start()
cl = cluster_harness.Cluster(3, etcd_endpoints=etcd.endpoint, extra_props={
    "schema.registry.listener": "http://127.0.0.1:0", "schema.registry.topic.replication.factor": "3"}).start()
try:
    cl.wait_ready()
    url = itutil.registry_url(cl.broker(cl.node_ids[0]))
    host, port = url.split("//")[1].split(":")
    deadline = time.time() + 30
    while True:
        c = http.client.HTTPConnection(host, int(port), timeout=10)
        body = json.dumps({"schema": json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]})})
        c.request("POST", "/subjects/s-value/versions", body, {"Content-Type": "application/vnd.schemaregistry.v1+json"})
        r = c.getresponse(); data = r.read()
        if r.status == 200: sid = json.loads(data)["id"]; break
        if time.time() > deadline: raise SystemExit(data)
        time.sleep(0.3)
    time.sleep(1)
    md = cluster_admin(cl.bootstrap()).list_topics("_schemas", timeout=10)
    writer = md.topics["_schemas"].partitions[0].leader
    other = next(n for n in cl.node_ids if n != writer)
    for rnd in range(3):
        for name, node in (("writer", writer), ("non-writer", other)):
            b = cl.broker(node)
            u = itutil.registry_url(b)
            h, p = u.split("//")[1].split(":")
            c = http.client.HTTPConnection(h, int(p), timeout=10)
            pids = [cl.broker(n).proc.pid for n in cl.node_ids]
            c0 = sum(cpu(x) for x in pids)
            t0 = time.monotonic()
            n = 3000
            for _ in range(n):
                c.request("GET", "/schemas/ids/%d" % sid)
                r = c.getresponse(); r.read(); assert r.status == 200, r.status
            dt = time.monotonic() - t0
            c1 = sum(cpu(x) for x in pids)
            print(json.dumps({"round": rnd, "target": name, "req_per_s": round(n / dt), "broker_cpu_us_per_req": round((c1 - c0) / n * 1e6)}))
finally:
    cl.cleanup(); etcd.cleanup()
