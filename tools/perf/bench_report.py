#!/usr/bin/env python3
"""Markdown report of tools/bench.sh: reads the JSON lines the script collected (one per run:
{"section","name",...,"result":{strata-perf or reference JSON}}) and prints the tables and ratios
recorded in docs/benchmarks.md. Owned by tools/perf."""
import json
import statistics
import sys


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def main():
    path, parts, repeat, scale, load_before, load_after, conc, pk_parts = sys.argv[1:9]
    rows = [json.loads(line) for line in open(path) if line.strip()]
    by = {}
    for r in rows:
        by.setdefault(r["section"], []).append(r)
    print(f"\nBENCH_SCALE={scale}; load average before/after: {load_before} / {load_after}")

    if "throughput" in by:
        print(f"\n### Throughput (strata-perf, {parts} partitions, acks=1, median of {repeat})\n")
        print("| workload | phase | target | records/s | MB/s | server CPU-s/GiB |")
        print("|---|---|---|---:|---:|---:|")
        groups = {}
        for r in by["throughput"]:
            groups.setdefault((r["name"], r["phase"]), {}).setdefault(r["target"], []).append(r)
        for (w, ph), t in groups.items():
            for target in ("mock", "strata"):
                rs = t.get(target, [])
                if not rs:
                    continue
                gib = sum(x["result"]["bytes"] for x in rs) / 2**30
                cpu = sum(x["server_cpu_s"] for x in rs)
                print(f"| {w} | {ph} | {target} | {med([x['result']['records_per_s'] for x in rs]):,.0f} "
                      f"| {med([x['result']['mb_per_s'] for x in rs]):.1f} | {cpu / gib if gib else 0:.2f} |")
        print("\n| workload | phase | Strata/mock (medians) | Strata/mock (paired) |")
        print("|---|---|---:|---:|")
        for (w, ph), t in groups.items():
            if "mock" in t and "strata" in t:
                m = {x["rep"]: x["result"]["records_per_s"] for x in t["mock"]}
                paired = [x["result"]["records_per_s"] / m[x["rep"]] for x in t["strata"] if x["rep"] in m]
                ratio = med([x["result"]["records_per_s"] for x in t["strata"]]) / \
                    med([x["result"]["records_per_s"] for x in t["mock"]])
                print(f"| {w} | {ph} | {ratio:.2f} | {med(paired):.2f} |")

    if "upsert" in by:
        ups = {k: {r["rep"]: r for r in by["upsert"] if r["name"] == k} for k in ("pk", "log")}
        print(f"\n### PK upserts through the broker vs a log topic ({pk_parts} partitions, acks=1, "
              f"paired rounds)\n")
        print("| topic | records/s (median) | broker CPU-s per 1M records |")
        print("|---|---:|---:|")
        for k, label in (("log", "log topic"), ("pk", "primary-key table")):
            xs = list(ups[k].values())
            if xs:
                cpu = sum(x["server_cpu_s"] for x in xs) / sum(x["result"]["records"] for x in xs) * 1e6
                print(f"| {label} | {med([x['result']['records_per_s'] for x in xs]):,.0f} | {cpu:.2f} |")
        paired = [ups["pk"][r]["result"]["records_per_s"] / ups["log"][r]["result"]["records_per_s"]
                  for r in ups["pk"] if r in ups["log"]]
        if paired:
            print(f"\nPK table / log topic records/s: **{med(paired):.2f}x** (paired: "
                  f"{', '.join(f'{p:.2f}' for p in paired)}; goal >= 0.6x)")

    if "e2e" in by:
        e2e = {t: {r["rep"]: r for r in by["e2e"] if r["target"] == t} for t in ("mock", "strata")}
        print("\n### End-to-end latency (strata-perf e2e: produce -> consume, one process)\n")
        print("| target | records/s | p50 µs | p99 µs | max µs | server CPU-s |")
        print("|---|---:|---:|---:|---:|---:|")
        for t in ("mock", "strata"):
            xs = list(e2e[t].values())
            if xs:
                lat = [x["result"]["latency"] for x in xs]
                print(f"| {t} | {med([x['result']['records_per_s'] for x in xs]):,.0f} "
                      f"| {med([l['p50_us'] for l in lat]):,.0f} | {med([l['p99_us'] for l in lat]):,.0f} "
                      f"| {med([l['max_us'] for l in lat]):,.0f} | {med([x['server_cpu_s'] for x in xs]):.2f} |")
        paired = [e2e["strata"][r]["result"]["latency"]["p99_us"] / e2e["mock"][r]["result"]["latency"]["p99_us"]
                  for r in e2e["strata"] if r in e2e["mock"]]
        if paired:
            print(f"\nStrata / mock p99: **{med(paired):.2f}x** (paired: "
                  f"{', '.join(f'{p:.2f}' for p in paired)}; goal <= 1.0x)")

    if "load" in by:
        j = by["load"][0]["result"]
        print(f"\nPK table load through the broker (strata-perf produce, murmur2, acks=1): "
              f"{j['records']:,} records in {j['seconds']:.2f} s = {j['records_per_s']:,.0f} records/s")

    if "lookup" in by:
        print(f"\n### Lookups: Strata PK table ({pk_parts} partitions) vs redis-server, "
              f"{conc} connections each, median of runs\n")
        print("| keys/request | target | keys/s | p50 µs | p99 µs | max µs | server CPU-s per 1M keys |")
        print("|---:|---|---:|---:|---:|---:|---:|")
        groups = {}
        for r in by["lookup"]:
            groups.setdefault(r["name"], {}).setdefault(r["target"], []).append(r)
        ratios = {}
        for name, t in groups.items():
            for target in ("strata", "redis"):
                rs = t.get(target, [])
                if not rs:
                    continue
                if target == "strata":
                    ks = [x["result"]["keys_per_s"] for x in rs]
                    p50 = [x["result"]["latency"]["p50_us"] for x in rs]
                    p99 = [x["result"]["latency"]["p99_us"] for x in rs]
                    mx = [x["result"]["latency"]["max_us"] for x in rs]
                    keys = sum(x["result"]["keys"] for x in rs)
                else:
                    ks = [x["result"]["keys_per_s"] for x in rs]
                    p50 = [x["result"]["p50_us"] for x in rs]
                    p99 = [x["result"]["p99_us"] for x in rs]
                    mx = [x["result"]["max_us"] for x in rs]
                    strata_rs = t.get("strata", [])
                    keys = sum(x["result"]["keys"] for x in strata_rs)  # same count per run
                cpu = sum(x["server_cpu_s"] for x in rs)
                print(f"| {name.split()[-1]} | {target} | {med(ks):,.0f} | {med(p50):.0f} | {med(p99):.0f} "
                      f"| {med(mx):.0f} | {cpu / keys * 1e6 if keys else 0:.2f} |")
            if "strata" in t and "redis" in t:
                r_by = {x["rep"]: x["result"]["keys_per_s"] for x in t["redis"]}
                paired = [x["result"]["keys_per_s"] / r_by[x["rep"]] for x in t["strata"] if x["rep"] in r_by]
                ratios[name] = med(paired)
        for name, v in ratios.items():
            bar = {"batch 16": " (goal: >= 1.0x)", "batch 1": " (goal: >= 0.8x)"}.get(name, "")
            print(f"\nStrata/Redis keys/s, {name} (median of paired runs): **{v:.2f}x**{bar}")
        if "lookup_memory" in by:
            j = by["lookup_memory"][0]["result"]
            print(f"\nAfter the lookup runs ({j['keys']:,} keys): broker RSS "
                  f"{j['broker_rss_kib'] / 1024:,.0f} MiB (pk.row.cache.bytes "
                  f"{j['row_cache_bytes'] / 2**20:,.0f} MiB, default block cache), redis-server RSS "
                  f"{j['redis_rss_kib'] / 1024:,.0f} MiB")

    if "apply" in by:
        alloc = by["apply"][0].get("allocator", "glibc")
        print(f"\n### PK upsert apply vs raw RocksDB puts (in process, same data, same run, {alloc})\n")
        print("| run | records | Strata upserts/s | compute s | append s | apply s | RocksDB puts/s | ratio |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for r in by["apply"]:
            j = r["result"]
            s = j["strata"]
            print(f"| r{r['rep']} | {j['records']:,} | {s['records_per_s']:,.0f} | {s['compute_s']:.2f} "
                  f"| {s['append_s']:.2f} | {s['apply_s']:.2f} | {j['rocksdb']['records_per_s']:,.0f} "
                  f"| {j['ratio']:.2f} |")
        print(f"\nStrata/RocksDB (median): **{med([r['result']['ratio'] for r in by['apply']]):.2f}x** "
              f"(bar: >= 0.5x)")
        var = [r["result"].get("rocksdb_variants") or {} for r in by["apply"]]
        if all("get_put" in v for v in var):
            gp = [r["result"]["strata"]["records_per_s"] / v["get_put"]["records_per_s"]
                  for r, v in zip(by["apply"], var)]
            bl = [v["get_put_memtable_bloom"]["records_per_s"] / r["result"]["rocksdb"]["records_per_s"]
                  for r, v in zip(by["apply"], var)]
            print(f"\nDiagnostics (medians): Strata / raw Get+Put per key = {med(gp):.2f}x; "
                  f"raw Get+Put with a memtable bloom filter / raw puts = {med(bl):.2f}x")
        typed = [r["result"].get("typed") or {} for r in by["apply"]]
        if all("aggregation" in t for t in typed):
            agg = med([t["aggregation"]["ratio_vs_strata_raw"] for t in typed])
            jl = med([t["json_last_row"]["ratio_vs_strata_raw"] for t in typed])
            print(f"\nTyped tables (medians, vs last_row on raw values): aggregation on JSON rows "
                  f"**{agg:.2f}x** (goal >= 0.7x); last_row on JSON rows {jl:.2f}x")
            if all("confluent_avro_aggregation" in t for t in typed):
                cj = med([t["confluent_json_aggregation"]["ratio_vs_strata_raw"] for t in typed])
                ca = med([t["confluent_avro_aggregation"]["ratio_vs_strata_raw"] for t in typed])
                print(f"Aggregation on confluent tables: JSON Schema table schema {cj:.2f}x, "
                      f"Avro table schema {ca:.2f}x")

    if "projection" in by:
        print(f"\n### Projection: Lookup of 3 of 50 columns vs whole rows (typed table, 16 keys/request, "
              f"{conc} connections, median of runs)\n")
        print("| columns | keys/s | bytes per key | p99 µs | broker CPU-s per 1M keys |")
        print("|---|---:|---:|---:|---:|")
        meds = {}
        for name in ("all", "c07,c21,c42"):
            rs = [r for r in by["projection"] if r["name"] == name]
            if not rs:
                continue
            ks = med([r["result"]["keys_per_s"] for r in rs])
            bpk = med([r["result"]["value_bytes"] / max(1, r["result"]["keys"]) for r in rs])
            p99 = med([r["result"]["latency"]["p99_us"] for r in rs])
            cpu = sum(r["server_cpu_s"] for r in rs) / max(1, sum(r["result"]["keys"] for r in rs)) * 1e6
            meds[name] = (ks, bpk)
            print(f"| {name} | {ks:,.0f} | {bpk:.0f} | {p99:.0f} | {cpu:.2f} |")
        if len(meds) == 2:
            (ka, ba), (kp, bp) = meds["all"], meds["c07,c21,c42"]
            print(f"\nProjected / whole rows: keys/s **{kp / ka:.2f}x**, bytes per key {bp / ba:.3f}x")

    if "filtered" in by:
        fs = [r["result"] for r in by["filtered"]]
        loads = {st: [f for f in fs if f["phase"] == "load" and f["stats"] == st] for st in (True, False)}
        reads = {st: [f for f in fs if f["phase"] == "filtered_read" and f["stats"] == st]
                 for st in (True, False)}
        print("\n### Column statistics: load cost and a 1 %-selective filtered changelog read\n")
        if all(loads.values()):
            ratio = med([a["wall_s"] / b["wall_s"] for a, b in zip(loads[False], loads[True])])
            cpu = {st: sum(f["broker_cpu_s"] for f in loads[st]) / sum(f["rows"] for f in loads[st]) * 1e6
                   for st in (True, False)}
            print(f"Load, paired rounds: rows/s with statistics / without = **{ratio:.2f}x**; broker "
                  f"CPU-s per 1M rows {cpu[True]:.2f} (statistics) vs {cpu[False]:.2f}")
        if all(reads.values()):
            print("\n| table | changes | wall s | broker CPU-s | batches skipped | bytes skipped / log bytes |")
            print("|---|---:|---:|---:|---:|---:|")
            for st in (True, False):
                rs = reads[st]
                skipped = med([f.get("skipped_bytes", 0) / max(1, f["log_bytes"]) for f in rs])
                print(f"| {'statistics=*' if st else 'no statistics'} | {rs[0]['changes']:,} "
                      f"| {med([f['wall_s'] for f in rs]):.3f} | {med([f['broker_cpu_s'] for f in rs]):.3f} "
                      f"| {med([f.get('skipped_batches', 0) for f in rs]):,.0f} | {skipped:.3f} |")
            sp = med([b["wall_s"] / a["wall_s"] for a, b in zip(reads[True], reads[False])])
            print(f"\nFiltered read with statistics vs without: **{sp:.1f}x** faster (wall, paired)")

    if "asof" in by:
        rs = [r["result"] for r in by["asof"]]
        look = [r for r in rs if r["phase"] == "lookup"]
        asof = [r for r in rs if r["phase"] == "as_of"]
        if look and asof:
            print(f"\n### LookupAsOf vs Lookup ({look[0]['keys']:,} keys x {look[0]['updates']} "
                  f"versions, Python client, 10,000 keys per call, paired rounds)\n")
            print("| read | keys/s (client-bound) | broker CPU-s per 1M keys |")
            print("|---|---:|---:|")
            for name, xs in (("Lookup (current rows)", look), ("LookupAsOf (an older time)", asof)):
                cpu = sum(x["broker_cpu_s"] for x in xs) / sum(x["keys"] for x in xs) * 1e6
                print(f"| {name} | {med([x['keys_per_s'] for x in xs]):,.0f} | {cpu:.2f} |")
            ratio = med([a["keys_per_s"] / b["keys_per_s"] for a, b in zip(asof, look)])
            print(f"\nLookupAsOf / Lookup keys/s: **{ratio:.2f}x** (goal >= 0.5x)")
        for ts in (r for r in rs if r["phase"] == "training_set"):
            print(f"\nTraining set: {ts['events']:,} events through `strata table as-of --events` in "
                  f"{ts['wall_s']:.1f} s = **{ts['events_per_s']:,.0f} events/s**, broker "
                  f"{ts['broker_cpu_s'] / ts['events'] * 1e6:.2f} CPU-s per 1M events")

    if "registry" in by:
        rs = [r["result"] for r in by["registry"]]
        phases = {p: [r for r in rs if r["phase"] == p] for p in ("none", "basic")}
        if all(phases.values()):
            print(f"\n### Schema Registry: GET /schemas/ids/{{id}} (wrk, one thread, keep-alive, "
                  f"{conc} connections, alternating rounds)\n")
            print("| authentication | requests/s | p50 µs | p99 µs | broker CPU µs per request | wrk CPU µs per request |")
            print("|---|---:|---:|---:|---:|---:|")
            for p, xs in phases.items():
                n = sum(x["requests"] for x in xs)
                print(f"| {p} | {med([x['req_per_s'] for x in xs]):,.0f} | {med([x['p50_us'] for x in xs]):.0f} "
                      f"| {med([x['p99_us'] for x in xs]):.0f} | {sum(x['broker_cpu_s'] for x in xs) / n * 1e6:.1f} "
                      f"| {sum(x['wrk_cpu_s'] for x in xs) / n * 1e6:.1f} |")
            ratio = med([b["req_per_s"] / a["req_per_s"] for a, b in zip(phases["none"], phases["basic"])])
            print(f"\nBasic auth / none, requests/s (paired rounds): **{ratio:.2f}x**")

    if "restart" in by:
        print("\n### Restart time\n")
        print("| what | keys | ready after (s) |")
        print("|---|---:|---:|")
        for r in by["restart"]:
            j = r["result"]
            if r["name"] == "pk-restart":
                print(f"| in-process PkState reopen, clean (memtable flushed) | {j['keys']:,} "
                      f"| {j['clean']['ready_s']:.3f} |")
                if "crash" in j:
                    print(f"| in-process PkState reopen after a crash (log recovery + replay) "
                          f"| {j['keys']:,} | {j['crash']['ready_s']:.3f} |")
            else:
                how = "SIGTERM (clean)" if r["name"].endswith("TERM") else "kill -9"
                print(f"| broker restart after {how}, process start -> first Lookup answered "
                      f"| {j['keys']:,} | {j['ready_s']:.3f} |")

    if "growth" in by:
        g = [r["result"] for r in by["growth"]]
        print("\n### Growth (each a ratio within this run; tools/bench/bench_growth.py)\n")
        print("| row | measured | reference | ratio | goal |")
        print("|---|---|---|---:|---|")
        def partition_pairs(target, producer):
            by_rep = {}
            for x in g:
                if (x["phase"] == "partitions" and x["producer"] == producer
                        and x.get("target", "strata") == target):
                    by_rep.setdefault(x["rep"], {})[x["partitions"]] = x
            return {rep: v for rep, v in by_rep.items() if 6 in v and 1000 in v}

        def growth_ratio(v):
            return v[1000]["records_per_s"] / v[6]["records_per_s"] if v[6]["records_per_s"] else 0

        partition_notes = []
        for producer in ("default", "sticky0"):
            pairs = partition_pairs("strata", producer)
            if pairs:
                vs = list(pairs.values())
                big = med([v[1000]["records_per_s"] for v in vs])
                small = med([v[6]["records_per_s"] for v in vs])
                cpus = [v[1000]["server_cpu_s"] / v[6]["server_cpu_s"] for v in vs
                        if v[6]["server_cpu_s"] > 0]
                cpu = f"{med(cpus):.2f}x" if cpus else "n/a"
                ratio = med([growth_ratio(v) for v in vs] or [0])
                print(f"| produce, 1,000 partitions vs 6 ({producer} batching) | {big:,.0f} rec/s "
                      f"| {small:,.0f} rec/s | {ratio:.2f} (broker CPU {cpu}) | >= 0.8 |")
            mocks = partition_pairs("mock", producer)
            both = [r for r in pairs if r in mocks]
            if both:
                m = med([growth_ratio(mocks[r]) for r in both])
                norm = med([growth_ratio(pairs[r]) / growth_ratio(mocks[r]) for r in both
                            if growth_ratio(mocks[r]) > 0] or [0])
                def cpu_of(target_pairs, parts, key):
                    return med([target_pairs[r][parts][key] for r in both])
                partition_notes.append(
                    f"- {producer} batching: the mock cluster's own 1,000 / 6 ratio "
                    f"{m:.2f} (same client, same rounds); Strata's ratio over the mock's "
                    f"{norm:.2f} (paired). Load generator CPU-s per run, 6 / 1,000 partitions: "
                    f"against Strata {cpu_of(pairs, 6, 'client_cpu_s'):.2f} / "
                    f"{cpu_of(pairs, 1000, 'client_cpu_s'):.2f}, against the mock "
                    f"{cpu_of(mocks, 6, 'client_cpu_s'):.2f} / "
                    f"{cpu_of(mocks, 1000, 'client_cpu_s'):.2f}; server CPU-s at 1,000 "
                    f"partitions: Strata {cpu_of(pairs, 1000, 'server_cpu_s'):.2f}, mock "
                    f"{cpu_of(mocks, 1000, 'server_cpu_s'):.2f}.")
        for phase, label, goal in (("idle-log", "idle log partition", 64),
                                   ("idle-pk", "idle PK partition", 1024)):
            for x in (x for x in g if x["phase"] == phase):
                print(f"| {label} ({x['partitions']} of them) | {x['rss_kib_per_partition']:,.0f} KiB "
                      f"RSS, {x['fds_per_partition']:.1f} fds | — | — | <= {goal} KiB |")
        lk = [x for x in g if x["phase"] == "lookup"]
        for batch in (1, 16):
            reps = {}
            for x in (x for x in lk if x["batch"] == batch):
                reps.setdefault(x["rep"], {})[x["table"]] = x
            pairs = [v for v in reps.values() if "small" in v and "large" in v]
            if pairs:
                p99 = [v["large"]["p99_us"] / v["small"]["p99_us"] for v in pairs
                       if v["small"]["p99_us"] > 0] or [0]
                lg, sm = pairs[0]["large"], pairs[0]["small"]
                print(f"| Lookup p99, {lg['keys']:,} keys vs {sm['keys']:,} (batch {batch}) "
                      f"| {med([v['large']['p99_us'] for v in pairs]):,.0f} µs, "
                      f"{med([v['large']['keys_per_s'] for v in pairs]):,.0f} keys/s "
                      f"| {med([v['small']['p99_us'] for v in pairs]):,.0f} µs, "
                      f"{med([v['small']['keys_per_s'] for v in pairs]):,.0f} keys/s "
                      f"| {med(p99):.2f} | <= 1.5 |")
        for x in (x for x in g if x["phase"] == "connections"):
            rat = [v.get("produce_mb_s") for v in x["ratios"].values() if v.get("produce_mb_s")]
            fails = "; failures: " + "; ".join(x["failures"]) if x["failures"] else ""
            print(f"| {x['idle']:,} idle connections | peak RSS {x['rss_peak_mib']} MiB "
                  f"| the producer alone | {med(rat) if rat else 0:.2f} (producer MB/s){fails} "
                  f"| < 1024 MiB, >= 0.9 |")
        for x in (x for x in g if x["phase"] == "restart"):
            goal = 10 if x["how"] == "clean" else 20
            print(f"| restart ({x['how']}) with {x['pk_keys']:,} PK keys and {x['log_partitions']:,} "
                  f"log partitions: start -> first Lookup | {x['ready_s']:.1f} s | — | — | <= {goal} s |")
        if partition_notes:
            print("\nThe partitions rows' reference: the same load generator against librdkafka's "
                  "mock cluster.\n")
            print("\n".join(partition_notes))


if __name__ == "__main__":
    main()
