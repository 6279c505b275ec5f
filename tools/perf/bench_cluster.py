#!/usr/bin/env python3
"""Cluster benchmark (tools/bench_cluster.sh, `BENCH_SECTIONS=cluster tools/bench.sh`): one etcd
member and three strata-broker processes on free loopback ports (test/integration/
cluster_harness.py), measuring

1. produce throughput of an RF=3 topic with acks=all against an RF=1 topic with acks=1 on the same
   cluster, in alternating (paired) rounds, through `strata-perf produce`; broker CPU is the sum of
   utime+stime of the three broker processes from /proc/<pid>/stat before and after each round;
2. the latency of single records at a low fixed rate, acks=all vs acks=1 on the RF=3 topic (a
   fixed wait in the acks=all path shows up here, not under saturation);
3. failover: kill -9 of the leader of partition 0 of an RF=3 topic while a confluent-kafka
   producer (acks=all) writes to that partition every few ms; the time from the kill to the first
   delivery report of a record produced after the kill (so acknowledged by the new leader). The
   killed broker is started again and every partition back to 3 in-sync replicas before the next
   kill. Repeated for each lease TTL asked for (a fresh cluster per TTL);
4. primary-key failover (--pk-keys, --pk-kills): a 1-partition RF=3 table loaded with N distinct
   keys (`strata-perf produce --key-space N`, acks=all); before each kill a sample of keys is read
   from the leader; then kill -9 of the leader, and the time from the kill to the first Lookup
   through a survivor (`strata table get`, which follows metadata to the new leader) that answers
   every sampled key with its value from before the kill. The followers' applied offsets just
   before the kill are recorded: a hot standby has applied (nearly) the whole log, so the new
   leader replays nothing.

One JSON line per measurement goes to --results; the summary (markdown tables) to stdout.
The broker binary comes from $STRATA_BROKER (harness.py), etcd from $STRATA_ETCD or /usr/bin/etcd.
"""
import argparse
import datetime
import json
import os
import random
import re
import statistics
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "test", "integration"))
from cluster_harness import Cluster, Etcd  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)


def brokers_cpu_s(cluster):
    return sum(cpu_ticks(cluster.broker(n).proc.pid) for n in cluster.node_ids) / CLK_TCK


def children_cpu_s():
    t = os.times()
    return t.children_user + t.children_system


def pct(xs, q):
    """Nearest-rank percentile of a non-empty list."""
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, int(round(q / 100.0 * len(s) + 0.5)) - 1))]


class Bench:
    def __init__(self, args):
        self.a = args
        self.results = open(args.results, "a")
        self.etcd = None
        self.cluster = None

    def record(self, **d):
        self.results.write(json.dumps(d) + "\n")
        self.results.flush()

    def log(self, msg):
        sys.stderr.write("bench_cluster: %s\n" % msg)
        sys.stderr.flush()

    # ------------------------------------------------------------ cluster state

    def admin(self):
        from confluent_kafka.admin import AdminClient
        return AdminClient({"bootstrap.servers": self.cluster.bootstrap()})

    def partitions(self, topic):
        """{partition: (leader, replicas, isr)} from Metadata through the running brokers."""
        md = self.admin().list_topics(topic, timeout=5)
        t = md.topics.get(topic)
        if t is None or t.error is not None:
            return {}
        return {p: (pm.leader, sorted(pm.replicas), sorted(pm.isrs))
                for p, pm in t.partitions.items()}

    def wait_in_sync(self, topic, n_partitions, rf, timeout=120):
        deadline = time.time() + timeout
        last = None
        while time.time() < deadline:
            try:
                ps = self.partitions(topic)
                last = ps
                if len(ps) == n_partitions and all(
                        len(isr) == rf and leader in isr for leader, _, isr in ps.values()):
                    return ps
            except Exception as e:  # a broker going away mid-request: ask again
                last = e
            time.sleep(0.1)
        raise RuntimeError("%s not fully in sync within %ss: %r\n%s" % (
            topic, timeout, last, self.cluster.log_tail(n=20)))

    def controller(self):
        v = self.etcd.get(self.cluster.prefix + "/controller")
        return json.loads(v)["id"] if v else None

    def start_cluster(self, ttl):
        props = {"coordination.lease.ttl.seconds": str(ttl)}
        props.update(kv.split("=", 1) for kv in self.a.broker_prop)
        for attempt in range(3):
            # The ports are chosen before the brokers bind them: another process on the machine
            # can take one meanwhile ("Address already in use"); then start over on new ones.
            self.cluster = Cluster(3, self.etcd.endpoint, extra_props=props)
            self.cluster.ttl = ttl
            try:
                self.cluster.start().wait_ready()
                break
            except RuntimeError as e:
                self.cluster.cleanup()
                self.cluster = None
                if attempt == 2 or "Address already in use" not in str(e):
                    raise
                self.log("a broker's port was taken meanwhile; starting over on new ports")
        self.log("cluster of 3 brokers up (lease TTL %d s, etcd %s, prefix %s)" % (
            ttl, self.etcd.endpoint, self.cluster.prefix))

    def stop_cluster(self):
        if self.cluster is not None:
            if self.a.logs:
                os.makedirs(self.a.logs, exist_ok=True)
                for n in self.cluster.node_ids:
                    with open(os.path.join(self.a.logs, "broker-%d-ttl%s.log" % (
                            n, self.cluster.ttl)), "w") as f:
                        f.write("\n".join(self.cluster.broker(n).log_lines) + "\n")
            self.cluster.cleanup()
            self.cluster = None

    def create(self, topic, partitions, rf):
        subprocess.run([self.a.perf, "create", "--bootstrap", self.cluster.bootstrap(),
                        "--topic", topic, "--partitions", str(partitions),
                        "--replication-factor", str(rf)], check=True, stdout=subprocess.DEVNULL)
        return self.wait_in_sync(topic, partitions, rf)

    # ------------------------------------------------------------ 1 + 2: produce

    def produce(self, topic, count, size, acks, extra=()):
        args = [self.a.perf, "produce", "--bootstrap", self.cluster.bootstrap(), "--topic", topic,
                "--num-records", str(count), "--record-size", str(size),
                "--producer-prop", "acks=" + acks] + list(extra)
        cpu0, ccpu0 = brokers_cpu_s(self.cluster), children_cpu_s()
        p = subprocess.run(args, capture_output=True, text=True)
        cpu1, ccpu1 = brokers_cpu_s(self.cluster), children_cpu_s()
        if p.returncode != 0:
            raise RuntimeError("strata-perf produce failed: %s\n%s" % (
                p.stderr[-2000:], self.cluster.log_tail(n=20)))
        j = json.loads(p.stdout.strip().splitlines()[-1])
        j["broker_cpu_s"] = cpu1 - cpu0
        j["client_cpu_s"] = ccpu1 - ccpu0
        return j

    def throughput(self):
        parts = self.a.partitions
        self.log("creating bench-rf3 (RF=3) and bench-rf1 (RF=1), %d partitions each" % parts)
        lay3 = self.create("bench-rf3", parts, 3)
        lay1 = self.create("bench-rf1", parts, 1)
        self.record(kind="layout", rf3={str(k): v for k, v in lay3.items()},
                    rf1={str(k): v for k, v in lay1.items()})
        configs = [("rf3-all", "bench-rf3", "all"), ("rf1-one", "bench-rf1", "1")]
        # Warm-up, not counted: a follower starts fetching a new partition only after the long
        # poll its fetcher is in ends (replica.fetch.wait.max.ms), so the first acks=all writes to
        # a new topic wait for that (reported separately from the rounds).
        for cname, topic, acks in configs:
            j = self.produce(topic, 20000, 100, acks, ["--rotate-bytes", "100000"])
            self.record(kind="warmup", config=cname, result=j)
            self.log("warm-up %s: %.2f s, max latency %d us" % (
                cname, j["seconds"], j["latency"]["max_us"]))
        for wname, count, size in self.a.workloads:
            for r in range(1, self.a.rounds + 1):
                order = configs if r % 2 else list(reversed(configs))  # alternate who goes first
                for cname, topic, acks in order:
                    j = self.produce(topic, count, size, acks, ["--rotate-bytes", "1000000"])
                    self.record(kind="produce", workload=wname, config=cname, round=r,
                                size=size, result=j)
                    self.log("produce %s %s r%d: %.1f MB/s, %.2f broker CPU-s, p50 %d us" % (
                        wname, cname, r, j["mb_per_s"], j["broker_cpu_s"],
                        j["latency"]["p50_us"]))
        # Single records at a low rate on the RF=3 topic, one partition's leader at a time
        # (librdkafka's partitioner spreads null keys): the acks=all - acks=1 gap is the
        # replication wait itself.
        for r in range(1, self.a.latency_rounds + 1):
            for acks in (["all", "1"] if r % 2 else ["1", "all"]):
                j = self.produce("bench-rf3", self.a.latency_records, 100, acks,
                                 ["--throughput", str(self.a.latency_rate),
                                  "--producer-prop", "linger.ms=0"])
                self.record(kind="latency", acks=acks, round=r, result=j)
                lat = j["latency"]
                self.log("latency acks=%s r%d: p50 %d us, p99 %d us, max %d us" % (
                    acks, r, lat["p50_us"], lat["p99_us"], lat["max_us"]))

    # ------------------------------------------------------------ 3: failover

    def failover(self, ttl):
        from confluent_kafka import Producer
        topic = "bench-failover"
        n_parts = 3
        self.create(topic, n_parts, 3)
        for k in range(1, self.a.kills + 1):
            ps = self.wait_in_sync(topic, n_parts, 3)
            leader = ps[0][0]
            controller = self.controller()
            conf = {"bootstrap.servers": self.cluster.bootstrap(False), "acks": "all",
                    "linger.ms": 0, "message.timeout.ms": 120000,
                    "request.timeout.ms": 30000, "retry.backoff.ms": 50,
                    "topic.metadata.refresh.fast.interval.ms": 50,
                    "reconnect.backoff.ms": 20, "reconnect.backoff.max.ms": 200}
            state = {"kill_t": None, "first_ok": None, "errors": 0, "acked_before": 0,
                     "new_leader_offset": None}
            lock = threading.Lock()
            stop = threading.Event()

            def on_delivery(err, msg, sent_t):
                now = time.monotonic()
                with lock:
                    if err is not None:
                        state["errors"] += 1
                        return
                    kt = state["kill_t"]
                    if kt is None or sent_t < kt:
                        if kt is None:
                            state["acked_before"] += 1
                        return
                    if state["first_ok"] is None:
                        state["first_ok"] = now
                        state["new_leader_offset"] = msg.offset()

            def loop(p):
                while not stop.is_set():
                    t = time.monotonic()
                    p.produce(topic, value=b"x" * 100, partition=0,
                              on_delivery=lambda e, m, t=t: on_delivery(e, m, t))
                    p.poll(self.a.interval_ms / 1000.0)
                p.flush(30)

            p = Producer(conf)
            th = threading.Thread(target=loop, args=(p,), daemon=True)
            th.start()
            # Steady acknowledged writes first, then a kill at a random phase of the lease's
            # keep-alive period (TTL/3), so the samples cover it evenly.
            deadline = time.time() + 30
            while True:
                with lock:
                    if state["acked_before"] >= 20:
                        break
                if time.time() > deadline:
                    raise RuntimeError("no acks=all write acknowledged before kill %d" % k)
                time.sleep(0.02)
            time.sleep(random.uniform(0, ttl / 3.0))
            with lock:
                state["kill_t"] = time.monotonic()
            kill_wall = time.time()
            self.cluster.kill(leader)  # SIGKILL, waits for the process to be gone
            killed_at = state["kill_t"]
            deadline = killed_at + self.a.failover_timeout
            while time.monotonic() < deadline:
                with lock:
                    if state["first_ok"] is not None:
                        break
                time.sleep(0.005)
            stop.set()
            th.join(60)
            failover_s = None if state["first_ok"] is None else state["first_ok"] - killed_at
            # New leader as Metadata tells it now (the delivery came from whoever leads).
            try:
                new_leader = self.partitions(topic)[0][0]
            except Exception:
                new_leader = None
            led_s = self.took_over_after(new_leader, topic + "-0", kill_wall)
            t_restart = time.monotonic()
            self.cluster.start(leader)
            self.wait_in_sync(topic, n_parts, 3)
            rejoin_s = time.monotonic() - t_restart
            self.record(kind="failover", ttl=ttl, kill=k, killed=leader,
                        killed_was_controller=(leader == controller), new_leader=new_leader,
                        failover_s=failover_s, leader_log_s=led_s, rejoin_s=rejoin_s,
                        errors=state["errors"])
            self.log("failover ttl=%d kill %d: node %d%s -> %s in %s s (its log: leading after %s s;"
                     " rejoined after %.2f s)" % (
                         ttl, k, leader, " (controller)" if leader == controller else "",
                         new_leader, "%.3f" % failover_s if failover_s is not None else "TIMEOUT",
                         "%.3f" % led_s if led_s is not None else "?", rejoin_s))
            if failover_s is None:
                raise RuntimeError("no acks=all write acknowledged within %ss of kill %d\n%s" % (
                    self.a.failover_timeout, k, self.cluster.log_tail(n=30)))

    def took_over_after(self, node, partition, since_wall):
        """Seconds from since_wall (time.time()) to the new leader's "leading <partition> in epoch"
        log line (spdlog's local time, ms), or None."""
        if node is None or node not in self.cluster.brokers:
            return None
        pat = re.compile(r"^\[([0-9-]+ [0-9:.]+)\] .*leading %s in epoch" % re.escape(partition))
        for line in reversed(list(self.cluster.broker(node).log_lines)):
            m = pat.search(line)
            if m:
                t = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f").timestamp()
                return t - since_wall if t >= since_wall - 1 else None
        return None

    # ------------------------------------------------------------ 4: PK failover

    def table_get(self, node, topic, keys):
        r = subprocess.run([self.a.cli, "-b", self.cluster.address(node), "-o", "json", "table",
                            "get", topic] + keys, capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            return None
        return {row["key"]: row["value"] for row in json.loads(r.stdout)["rows"]}

    def applied(self, node, topic):
        r = subprocess.run([self.a.cli, "-b", self.cluster.address(node), "-o", "json", "table",
                            "describe", topic], capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            return None
        parts = json.loads(r.stdout).get("partitions", [])
        return parts[0].get("applied_offset") if parts else None

    def pk_failover(self, ttl):
        topic = "bench-pk-failover"
        n = max(1000, int(self.a.pk_keys * self.a.scale))
        subprocess.run([self.a.perf, "create", "--bootstrap", self.cluster.bootstrap(),
                        "--topic", topic, "--partitions", "1", "--replication-factor", "3",
                        "--config", "table.type=primary-key"], check=True,
                       stdout=subprocess.DEVNULL)
        self.wait_in_sync(topic, 1, 3)
        t0 = time.monotonic()
        j = self.produce(topic, n, 100, "all", ["--key-space", str(n)])
        self.log("pk table loaded: %d keys x 100 B in %.1f s (%.1f MB/s)" % (
            n, time.monotonic() - t0, j["mb_per_s"]))
        for k in range(1, self.a.pk_kills + 1):
            ps = self.wait_in_sync(topic, 1, 3)
            leader = ps[0][0]
            others = [x for x in self.cluster.node_ids if x != leader]
            # Overwrite a slice, so the sample's values change between kills.
            self.produce(topic, min(n, 20000), 100, "all", ["--key-space", str(n)])
            sample = ["key:%012d" % random.randrange(n) for _ in range(200)]
            want = None
            deadline = time.time() + 60
            while want is None or len(want) != len(sample):
                want = self.table_get(leader, topic, sample)
                if time.time() > deadline:
                    raise RuntimeError("no Lookup answer from the leader before kill %d" % k)
            log_end = self.applied(leader, topic)
            follower_applied = {x: self.applied(x, topic) for x in others}
            kill_wall = time.time()
            killed_at = time.monotonic()
            self.cluster.kill(leader)
            first_ok = None
            attempts = 0
            while time.monotonic() - killed_at < self.a.failover_timeout:
                attempts += 1
                got = self.table_get(others[attempts % len(others)], topic, sample)
                if got == want:
                    first_ok = time.monotonic() - killed_at
                    break
                time.sleep(0.02)
            try:
                new_leader = self.partitions(topic)[0][0]
            except Exception:
                new_leader = None
            led_s = self.took_over_after(new_leader, topic + "-0", kill_wall)
            t_restart = time.monotonic()
            self.cluster.start(leader)
            self.wait_in_sync(topic, 1, 3)
            rejoin_s = time.monotonic() - t_restart
            self.record(kind="pk_failover", ttl=ttl, kill=k, keys=n, killed=leader,
                        new_leader=new_leader, first_correct_lookup_s=first_ok,
                        leader_log_s=led_s, leader_applied=log_end,
                        follower_applied={str(x): v for x, v in follower_applied.items()},
                        rejoin_s=rejoin_s)
            self.log("pk failover ttl=%d kill %d: node %d -> %s, first correct Lookup after %s s "
                     "(leader's log: %s s); applied before the kill: leader %s, followers %s; "
                     "rejoined after %.1f s" % (
                         ttl, k, leader, new_leader,
                         "%.3f" % first_ok if first_ok is not None else "TIMEOUT",
                         "%.3f" % led_s if led_s is not None else "?", log_end,
                         follower_applied, rejoin_s))
            if first_ok is None:
                raise RuntimeError("no correct Lookup within %ss of kill %d\n%s" % (
                    self.a.failover_timeout, k, self.cluster.log_tail(n=30)))

    # ------------------------------------------------------------ run

    def run(self):
        self.etcd = Etcd().start()
        try:
            first = True
            for ttl in self.a.ttls:
                self.start_cluster(ttl)
                try:
                    if first and self.a.throughput:
                        self.throughput()
                    if self.a.kills > 0:
                        self.failover(ttl)
                    if self.a.pk_kills > 0:
                        self.pk_failover(ttl)
                finally:
                    self.stop_cluster()
                first = False
        finally:
            self.etcd.cleanup()


# ---------------------------------------------------------------- report


def report(path, load):
    rows = [json.loads(l) for l in open(path) if l.strip()]
    out = []
    prod = [r for r in rows if r["kind"] == "produce"]
    if prod:
        out.append("| workload | config | MB/s median | MB/s min–max | records/s | "
                   "broker CPU-s/GiB median | p50 ms | p99 ms |")
        out.append("|---|---|---:|---:|---:|---:|---:|---:|")
        ratios = {}
        for w in dict.fromkeys(r["workload"] for r in prod):
            by = {}
            for c in ("rf3-all", "rf1-one"):
                rs = [r for r in prod if r["workload"] == w and r["config"] == c]
                if not rs:
                    continue
                mbs = [r["result"]["mb_per_s"] for r in rs]
                cpu = [r["result"]["broker_cpu_s"] / (r["result"]["bytes"] / 2**30) for r in rs]
                by[c] = {r["round"]: r["result"]["mb_per_s"] for r in rs}
                out.append("| %s | %s | %.1f | %.1f–%.1f | %s | %.2f | %.1f | %.1f |" % (
                    w, "RF=3 acks=all" if c == "rf3-all" else "RF=1 acks=1",
                    statistics.median(mbs), min(mbs), max(mbs),
                    format(int(statistics.median(r["result"]["records_per_s"] for r in rs)), ","),
                    statistics.median(cpu),
                    statistics.median(r["result"]["latency"]["p50_us"] for r in rs) / 1000,
                    statistics.median(r["result"]["latency"]["p99_us"] for r in rs) / 1000))
            if len(by) == 2:
                paired = [by["rf3-all"][k] / by["rf1-one"][k] for k in by["rf3-all"]
                          if k in by["rf1-one"]]
                ratios[w] = (statistics.median(by["rf3-all"].values()) /
                             statistics.median(by["rf1-one"].values()), paired)
        out.append("")
        for w, (rm, paired) in ratios.items():
            out.append("%s: RF=3 acks=all / RF=1 acks=1 = %.2f (ratio of medians), paired rounds %s"
                       " (median %.2f)" % (w, rm, ", ".join("%.2f" % x for x in paired),
                                           statistics.median(paired)))
        out.append("")
    lat = [r for r in rows if r["kind"] == "latency"]
    if lat:
        out.append("| RF=3, 100 B at a fixed rate | p50 ms | p99 ms | max ms (median of rounds) |")
        out.append("|---|---:|---:|---:|")
        for acks in ("all", "1"):
            rs = [r["result"]["latency"] for r in lat if r["acks"] == acks]
            out.append("| acks=%s | %.2f | %.2f | %.2f |" % (
                acks, statistics.median(x["p50_us"] for x in rs) / 1000,
                statistics.median(x["p99_us"] for x in rs) / 1000,
                statistics.median(x["max_us"] for x in rs) / 1000))
        out.append("")
    fo = [r for r in rows if r["kind"] == "failover"]
    if fo:
        out.append("| lease TTL | kills | min s | median s | p90 s | max s | killed leader was "
                   "controller | kill → new leader's log, median s | rejoin median s |")
        out.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for ttl in dict.fromkeys(r["ttl"] for r in fo):
            rs = [r for r in fo if r["ttl"] == ttl and r["failover_s"] is not None]
            xs = [r["failover_s"] for r in rs]
            led = [r["leader_log_s"] for r in rs if r.get("leader_log_s") is not None]
            out.append("| %d s | %d | %.2f | %.2f | %.2f | %.2f | %d | %s | %.2f |" % (
                ttl, len(xs), min(xs), statistics.median(xs), pct(xs, 90), max(xs),
                sum(1 for r in rs if r["killed_was_controller"]),
                "%.2f" % statistics.median(led) if led else "?",
                statistics.median(r["rejoin_s"] for r in rs)))
            ctrl = [r["failover_s"] for r in rs if r["killed_was_controller"]]
            other = [r["failover_s"] for r in rs if not r["killed_was_controller"]]
            if ctrl and other:
                out.append("|  | (controller killed: median %.2f s; not: %.2f s) | | | | | | | |" % (
                    statistics.median(ctrl), statistics.median(other)))
        out.append("")
    pk = [r for r in rows if r["kind"] == "pk_failover"]
    if pk:
        out.append("| PK table, lease TTL | keys | kills | first correct Lookup after kill: "
                   "median s | max s | new leader's log median s | followers' applied lag at kill "
                   "(max offsets) |")
        out.append("|---:|---:|---:|---:|---:|---:|---:|")
        for ttl in dict.fromkeys(r["ttl"] for r in pk):
            rs = [r for r in pk if r["ttl"] == ttl and r["first_correct_lookup_s"] is not None]
            if not rs:
                continue
            xs = [r["first_correct_lookup_s"] for r in rs]
            led = [r["leader_log_s"] for r in rs if r.get("leader_log_s") is not None]
            lag = max((r["leader_applied"] or 0) - (v or 0) for r in rs
                      for v in r["follower_applied"].values())
            out.append("| %d s | %s | %d | %.2f | %.2f | %s | %d |" % (
                ttl, format(rs[0]["keys"], ","), len(xs), statistics.median(xs), max(xs),
                "%.2f" % statistics.median(led) if led else "?", lag))
        out.append("")
    out.append("load average before / after: %s / %s" % load)
    print("\n".join(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--perf", required=True, help="strata-perf binary")
    ap.add_argument("--results", required=True, help="JSON lines, appended")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--ttls", default="6", help="comma list of coordination.lease.ttl.seconds")
    ap.add_argument("--no-throughput", dest="throughput", action="store_false")
    ap.add_argument("--sizes", default="1KiB,100B")
    ap.add_argument("--latency-rounds", type=int, default=2)
    ap.add_argument("--latency-records", type=int, default=1000)
    ap.add_argument("--latency-rate", type=int, default=200)
    ap.add_argument("--interval-ms", type=float, default=5, help="failover client: ms between writes")
    ap.add_argument("--failover-timeout", type=float, default=60)
    ap.add_argument("--logs", help="write each broker's log here at the end")
    ap.add_argument("--cli", help="strata CLI binary (default: next to strata-perf's build dir)")
    ap.add_argument("--pk-keys", type=int, default=1000000, help="PK failover: table keys")
    ap.add_argument("--pk-kills", type=int, default=3, help="PK failover: kills (0 = skip)")
    ap.add_argument("--broker-prop", action="append", default=[],
                    help="k=v broker config override for every broker (repeatable)")
    a = ap.parse_args()
    a.ttls = [int(x) for x in a.ttls.split(",") if x]
    if not a.cli:
        a.cli = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(a.perf))), "cli",
                             "strata")
    known = {"1KiB": (300000, 1024), "100B": (2000000, 100)}
    a.workloads = []
    for name in a.sizes.split(","):
        count, size = known[name]
        count = max(1, int(round(count * a.scale)))
        a.workloads.append(("%d x %s" % (count, name), count, size))
    load0 = open("/proc/loadavg").read().split()[:3]
    Bench(a).run()
    load1 = open("/proc/loadavg").read().split()[:3]
    report(a.results, (" ".join(load0), " ".join(load1)))


if __name__ == "__main__":
    main()
