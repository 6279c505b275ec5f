"""SASL handshake cost on one broker: connections per second and the broker's CPU per
authenticated connection for PLAIN and SCRAM-SHA-256/512 (4096 iterations) on a SASL_PLAINTEXT
listener, against the reference of a plaintext connection that sends one ApiVersions, in the
same run, alternating, three rounds. Every connection is new (TCP connect, SaslHandshake v1,
SaslAuthenticate v1 exchanges, one Metadata after authentication, close). The client is this
script: the SCRAM client proof (PBKDF2 via hashlib, i.e. OpenSSL) is computed per connection, as a
real client does, so the latency includes the client's PBKDF2; the broker stores salted keys and
runs no PBKDF2 per login. Run from the repository root:
  /usr/bin/python3 tools/perf/bench_sasl.py [--connections N]
Results in docs/benchmarks.md ("SASL handshakes")."""
import argparse, base64, hashlib, hmac, os, socket, statistics, struct, sys, time
sys.path.insert(0, "test/integration")
import harness, itutil

ap = argparse.ArgumentParser()
ap.add_argument("--connections", type=int, default=400)
ap.add_argument("--rounds", type=int, default=3)
args = ap.parse_args()

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'user_bench="bench-secret";')
b = harness.BrokerProcess(overrides={
    "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", "sasl.jaas.config": JAAS,
    "sasl.scram.bootstrap.users": "SCRAM-SHA-256=[name=bench,password=bench-secret];"
                                  "SCRAM-SHA-512=[name=bench,password=bench-secret]",
    "metrics.listener": "", "schema.registry.listener": ""})
b.start()


def cpu():
    with open("/proc/%d/stat" % b.proc.pid) as f:
        parts = f.read().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")


def authenticate(c, token):
    r = c.request(36, 1, itutil.bytes32(token))
    err = r.i16()
    r.str16()
    data = r.bytes32()
    if err:
        raise RuntimeError("SaslAuthenticate failed: %d" % err)
    return data


def scram(c, mech):
    h = hashlib.sha256 if mech == "SCRAM-SHA-256" else hashlib.sha512
    nonce = base64.b64encode(os.urandom(18)).decode()
    bare = "n=bench,r=" + nonce
    first = authenticate(c, ("n,," + bare).encode()).decode()
    f = dict(kv.split("=", 1) for kv in first.split(","))
    salted = hashlib.pbkdf2_hmac(h().name, b"bench-secret", base64.b64decode(f["s"]), int(f["i"]))
    client_key = hmac.new(salted, b"Client Key", h).digest()
    final_bare = "c=biws,r=" + f["r"]
    auth_msg = ",".join([bare, first, final_bare]).encode()
    sig = hmac.new(h(client_key).digest(), auth_msg, h).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, sig))
    final = authenticate(c, (final_bare + ",p=" + base64.b64encode(proof).decode()).encode())
    server_key = hmac.new(salted, b"Server Key", h).digest()
    expect = base64.b64encode(hmac.new(server_key, auth_msg, h).digest()).decode()
    if final.decode() != "v=" + expect:
        raise RuntimeError("bad server signature")


def one(mech):
    if mech == "none":
        with itutil.RawConn(b.ports["PLAINTEXT"]) as c:
            itutil.api_versions(c)
            itutil.metadata_v1(c)
        return
    with itutil.RawConn(b.ports["SASL_PLAINTEXT"]) as c:
        r = c.request(17, 1, itutil.str16(mech))
        if r.i16():
            raise RuntimeError("handshake refused")
        if mech == "PLAIN":
            authenticate(c, b"\0bench\0bench-secret")
        else:
            scram(c, mech)
        itutil.metadata_v1(c)


MECHS = ["none", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
results = {m: [] for m in MECHS}
for rnd in range(args.rounds):
    for mech in MECHS:
        lat = []
        c0, t0 = cpu(), time.perf_counter()
        for _ in range(args.connections):
            s = time.perf_counter()
            one(mech)
            lat.append(time.perf_counter() - s)
        wall, cpus = time.perf_counter() - t0, cpu() - c0
        lat.sort()
        results[mech].append((args.connections / wall, cpus / args.connections * 1e6,
                              lat[len(lat) // 2] * 1e3, lat[int(len(lat) * 0.99)] * 1e3))
b.stop()
ref = statistics.median(r[0] for r in results["none"])
print("| mechanism | connections/s | vs plaintext connect | p50 ms | p99 ms | broker CPU µs per connection |")
print("|---|---|---|---|---|---|")
for m in MECHS:
    rs = results[m]
    rate = statistics.median(r[0] for r in rs)
    print("| %s | %.0f (%.0f–%.0f) | %.2f× | %.2f | %.2f | %.0f |" % (
        "plaintext + ApiVersions" if m == "none" else m, rate, min(r[0] for r in rs),
        max(r[0] for r in rs), rate / ref, statistics.median(r[2] for r in rs),
        statistics.median(r[3] for r in rs), statistics.median(r[1] for r in rs)))
