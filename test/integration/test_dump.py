"""strata-dump (issue 6): a broker writes a log topic (several segments, plain and gzip batches)
and a 1-partition PK table (insert / update / delete / none), is stopped cleanly, and strata-dump
reads its data dir offline with --output json: batches and offsets equal what the producer got
back, records and PK change kinds / before-images are decoded, indexes verify against the .log,
the RocksDB state reports the applied offset and the exact row count. Then a copy of a segment with
one flipped byte is reported as a CRC mismatch naming the batch and its file range (exit 1), a torn
tail names the file offset where the short batch starts, a corrupted index entry is caught by
--verify, and garbage input never crashes the tool."""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import itutil
from itutil import BrokerTestCase, unique_topic

DUMP = os.environ.get("STRATA_DUMP") or os.path.join(
    os.path.dirname(os.environ.get("STRATA_BROKER", "")), "..", "tools", "dump", "strata-dump")


def dump(*args, expect=None):
    """Runs strata-dump --output json ARGS; returns (exit code, parsed JSON)."""
    p = subprocess.run([DUMP, "--output", "json"] + [str(a) for a in args],
                       capture_output=True, timeout=60)
    if expect is not None and p.returncode != expect:
        raise AssertionError("strata-dump %s exited %d (expected %d)\nstdout: %s\nstderr: %s" % (
            " ".join(map(str, args)), p.returncode, expect, p.stdout[:3000], p.stderr[:3000]))
    if p.returncode < 0:
        raise AssertionError("strata-dump crashed with signal %d" % -p.returncode)
    return p.returncode, json.loads(p.stdout)


class DumpTest(BrokerTestCase):
    # An index entry for every batch but the first of a segment.
    overrides = {"log.index.interval.bytes": "0",
                 "log.segment.bytes.min": "1024"}  # segment.bytes=3000: several segments

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        bs = cls.broker.bootstrap
        cls.topic = unique_topic("dumplog")
        cls.table = unique_topic("dumppk")
        itutil.ck_create_topic(bs, cls.topic, 1, {"segment.bytes": "3000"})
        itutil.ck_create_topic(bs, cls.table, 1, {"table.type": "primary-key",
                                                  "table.kv.snapshot.interval.ms": "200"})

        # Log topic: 15 flushed rounds of 10 records (one batch each), every third one gzip.
        cls.produced = {}  # offset -> (key, value)
        plain = itutil.ck_producer(bs, linger_ms=20)
        gzip = itutil.ck_producer(bs, linger_ms=20, compression_type="gzip")
        for rnd in range(15):
            items = [{"topic": cls.topic, "key": b"k%d-%d" % (rnd, i),
                      "value": b"value %d/%d " % (rnd, i) + b"x" * (i * 3),
                      "headers": [("h", b"r%d" % rnd)]} for i in range(10)]
            for m in itutil.ck_produce_all(gzip if rnd % 3 == 2 else plain, items):
                cls.produced[m.offset()] = (m.key(), m.value())
        assert sorted(cls.produced) == list(range(150)), sorted(cls.produced)[:10]

        # PK table, one record per flush so each change is its own batch.
        cls.pk_ops = [(b"k1", b"v1", "insert", None), (b"k2", b"v2", "insert", None),
                      (b"k1", b"v1b", "update", b"v1"), (b"k2", None, "delete", b"v2"),
                      (b"k1", b"v1b", "none", None), (b"k3", b"v3", "insert", None)]
        p = itutil.ck_producer(bs)
        cls.pk_offsets = []
        for key, value, _, _ in cls.pk_ops:
            cls.pk_offsets += [m.offset() for m in itutil.ck_produce_all(
                p, [{"topic": cls.table, "key": key, "value": value}])]
        assert cls.pk_offsets == list(range(6)), cls.pk_offsets
        # A RocksDB checkpoint (kv-checkpoints/<applied offset>/) holding all six writes.
        done = "checkpoint of %s-0 at offset 5" % cls.table
        itutil.harness.wait_until(lambda: any(done in l for l in cls.broker.log_lines),
                                  timeout=20, what=done)
        assert cls.broker.stop() == 0
        logs = os.path.join(cls.broker.data_dir, "logs")
        cls.log_dir = os.path.join(logs, cls.topic + "-0")
        cls.pk_dir = os.path.join(logs, cls.table + "-0")
        cls.tmp = tempfile.mkdtemp(prefix="strata-dump-it-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(getattr(cls, "tmp", "/nonexistent"), ignore_errors=True)
        super().tearDownClass()

    def segments(self, d):
        return sorted(f for f in os.listdir(d) if f.endswith(".log"))

    def copy_segment(self, name):
        dst = os.path.join(self.tmp, "%s-%d" % (self._testMethodName, random.randrange(1 << 30)))
        os.makedirs(dst)
        shutil.copy(os.path.join(self.log_dir, name), dst)
        return os.path.join(dst, name)

    # ---------------------------------------------------------------- good data

    def test_segments_list_batches_with_producer_offsets(self):
        segs = self.segments(self.log_dir)
        self.assertGreater(len(segs), 1, "segment.bytes=3000 should have rolled")
        seen = {}
        codecs = set()
        for name in segs:
            rc, doc = dump("segment", os.path.join(self.log_dir, name), "--records", expect=0)
            self.assertEqual(doc["summary"]["status"], "ok")
            self.assertEqual(doc["problems"], [])
            self.assertEqual(doc["segment_base_offset"], int(name[:20]))
            pos = 0
            for b in doc["batches"]:
                self.assertEqual(b["position"], pos)  # back to back from position 0
                pos += b["size"]
                self.assertEqual(b["crc_status"], "ok")
                self.assertEqual(b["crc"], b["crc_computed"])
                self.assertEqual(b["magic"], 2)
                self.assertEqual(len(b["records"]), b["count"])
                self.assertEqual(b["last_offset"] - b["base_offset"] + 1, b["count"])
                codecs.add(b["codec"])
                for r in b["records"]:
                    self.assertNotIn(r["offset"], seen)
                    seen[r["offset"]] = (r["key"].encode(), r["value"].encode())
                    self.assertEqual(r["headers"][0]["key"], "h")
                    self.assertNotIn("change", r)
                    self.assertGreaterEqual(r["offset"], b["base_offset"])
                    self.assertLessEqual(r["offset"], b["last_offset"])
            self.assertEqual(pos, doc["file_size"])
            self.assertEqual(doc["summary"]["records"],
                             sum(b["count"] for b in doc["batches"]))
        self.assertEqual(seen, self.produced)
        self.assertEqual(codecs, {"none", "gzip"})

    def test_text_output_and_max_records(self):
        name = self.segments(self.log_dir)[0]
        p = subprocess.run([DUMP, "segment", os.path.join(self.log_dir, name), "--records",
                            "--max-records", "3"], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertTrue(any(l.startswith("base_offset: 0 last_offset: ") for l in lines), lines[:5])
        self.assertEqual(sum(1 for l in lines if l.startswith("| offset: ")), 3)
        self.assertIn("status: ok", p.stdout)

    def test_pk_table_change_kinds(self):
        (name,) = self.segments(self.pk_dir)
        rc, doc = dump("segment", os.path.join(self.pk_dir, name), "--records", expect=0)
        recs = [r for b in doc["batches"] for r in b["records"]]
        self.assertEqual([r["offset"] for r in recs], self.pk_offsets)
        for r, (key, value, kind, before) in zip(recs, self.pk_ops):
            self.assertEqual(r["key"], key.decode())
            self.assertEqual(r["value"], value.decode() if value is not None else None)
            self.assertEqual(r["change"], kind)
            if before is None:
                self.assertNotIn("before", r)
            else:
                self.assertEqual(r["before"], before.decode())

    def test_indexes_verify(self):
        for name in self.segments(self.log_dir):
            stem = os.path.join(self.log_dir, name[:-4])
            rc, doc = dump("index", stem + ".index", "--verify", expect=0)
            self.assertEqual(doc["status"], "ok")
            batches = dump("segment", stem + ".log")[1]["batches"]
            # log.index.interval.bytes=0: every batch but the segment's first is indexed.
            self.assertEqual(doc["entry_count"], len(batches) - 1)
            starts = {b["position"]: b["last_offset"] for b in batches}
            for e in doc["entries"]:
                self.assertEqual(starts[e["position"]], e["offset"])
            rc, doc = dump("index", stem + ".timeindex", "--verify", expect=0)
            self.assertEqual(doc["status"], "ok")
            self.assertGreater(doc["entry_count"], 0)
            # Sealed segments (and the active one after a clean close) cover their max timestamp.
            self.assertEqual(doc["entries"][-1]["timestamp"],
                             max(b["max_timestamp"] for b in batches))

    def test_checkpoint_reports_applied_offset_and_rows(self):
        rc, doc = dump("checkpoint", os.path.join(self.pk_dir, "kv"), "--keys", "10", expect=0)
        kv = doc["kv"]
        self.assertEqual(kv["applied_offset"], 5)
        self.assertEqual(kv["rows"], 2)  # k1 and k3; k2 was deleted
        self.assertEqual(kv["malformed_rows"], 0)
        self.assertEqual([(r["key"], r["value"], r["offset"]) for r in kv["first_rows"]],
                         [("k1", "v1b", 4), ("k3", "v3", 5)])  # k1: the no-op at 4 is its newest
        self.assertEqual(doc["status"], "ok")
        # Every checkpoint under kv-checkpoints/<offset>/ holds the offset its name says; the
        # newest one holds all six writes.
        cps = os.path.join(self.pk_dir, "kv-checkpoints")
        names = sorted(os.listdir(cps))
        self.assertEqual(names[-1], "%020d" % 5)
        for c in names:
            rc, cdoc = dump("checkpoint", os.path.join(cps, c), "--keys", "5", expect=0)
            self.assertEqual(cdoc["checkpoint_offset"], int(c))
            self.assertEqual(cdoc["kv"]["applied_offset"], int(c))
        self.assertEqual(cdoc["kv"]["rows"], 2)
        self.assertEqual([r["key"] for r in cdoc["kv"]["first_rows"]], ["k1", "k3"])

    def test_checkpoint_is_read_only(self):
        kv = os.path.join(self.pk_dir, "kv")

        def listing():
            return {f: (os.stat(os.path.join(kv, f)).st_size, os.stat(os.path.join(kv, f)).st_mtime_ns)
                    for f in os.listdir(kv)}
        before = listing()
        dump("checkpoint", kv, "--keys", "3", expect=0)
        dump("partition", self.pk_dir, expect=0)
        self.assertEqual(listing(), before)

    def test_partition_summary(self):
        rc, doc = dump("partition", self.pk_dir, expect=0)
        self.assertEqual(doc["topic"], self.table)
        self.assertEqual(doc["partition"], 0)
        self.assertEqual(doc["summary"]["log_end_offset"], 6)
        self.assertEqual(doc["summary"]["records"], 6)
        kv = [k for k in doc["kv"] if k["path"].endswith("/kv")]
        self.assertEqual(len(kv), 1)
        self.assertEqual((kv[0]["applied_offset"], kv[0]["rows"]), (5, 2))
        cps = [k for k in doc["kv"] if "/kv-checkpoints/" in k["path"]]
        self.assertGreaterEqual(len(cps), 1)
        self.assertEqual(cps[-1]["applied_offset"], 5)
        self.assertEqual(doc["summary"]["status"], "ok")
        rc, doc = dump("partition", self.log_dir, expect=0)
        self.assertEqual(doc["summary"]["log_end_offset"], 150)
        self.assertEqual(doc["summary"]["records"], 150)
        self.assertEqual(len(doc["segments"]), len(self.segments(self.log_dir)))
        self.assertEqual(doc["files"]["clean-shutdown"], True)
        self.assertEqual(doc["kv"], [])

    # ---------------------------------------------------------------- damaged copies

    def test_flipped_byte_names_the_batch_and_file_offset(self):
        name = self.segments(self.log_dir)[0]
        path = self.copy_segment(name)
        good = dump("segment", path, expect=0)[1]["batches"]
        self.assertGreaterEqual(len(good), 3)
        victim = good[1]
        flip_at = victim["position"] + victim["size"] - 5  # inside the last record
        with open(path, "r+b") as f:
            f.seek(flip_at)
            b = f.read(1)
            f.seek(flip_at)
            f.write(bytes([b[0] ^ 0x40]))
        rc, doc = dump("segment", path, "--records", expect=1)
        self.assertEqual(doc["summary"]["status"], "CORRUPT")
        self.assertEqual(len(doc["problems"]), 1, doc["problems"])
        prob = doc["problems"][0]
        self.assertEqual(prob["kind"], "crc_mismatch")
        self.assertEqual(prob["position"], victim["position"])
        self.assertEqual(prob["end"], victim["position"] + victim["size"])
        self.assertEqual(prob["base_offset"], victim["base_offset"])
        self.assertLessEqual(prob["position"], flip_at)
        self.assertLess(flip_at, prob["end"])
        bad = [b for b in doc["batches"] if b["crc_status"] == "CORRUPT"]
        self.assertEqual([b["base_offset"] for b in bad], [victim["base_offset"]])
        self.assertNotIn("records", bad[0])  # a corrupt batch's records are not trusted
        # The scan went on past the bad batch: every batch is still listed.
        self.assertEqual([b["base_offset"] for b in doc["batches"]],
                         [b["base_offset"] for b in good])
        # The index still points at batch starts, so --verify of the (good) index passes, while
        # the verification notes the entry pointing at the corrupt batch.
        shutil.copy(os.path.join(self.log_dir, name[:-4] + ".index"), os.path.dirname(path))
        rc, idoc = dump("index", path[:-4] + ".index", "--verify", expect=1)
        self.assertTrue(any("corrupt batch at %d" % victim["position"] in p["detail"]
                            for p in idoc["problems"]), idoc["problems"])

    def test_torn_tail_names_its_start(self):
        name = self.segments(self.log_dir)[-1]
        path = self.copy_segment(name)
        good = dump("segment", path, expect=0)[1]["batches"]
        last = good[-1]
        with open(path, "r+b") as f:
            f.truncate(last["position"] + last["size"] // 2)
        rc, doc = dump("segment", path, expect=1)
        (prob,) = doc["problems"]
        self.assertEqual(prob["kind"], "truncated")
        self.assertEqual(prob["position"], last["position"])
        self.assertEqual(len(doc["batches"]), len(good) - 1)
        self.assertEqual(doc["summary"]["scanned_bytes"], last["position"])

    def test_corrupt_index_entry(self):
        name = self.segments(self.log_dir)[0]
        path = self.copy_segment(name)
        idx = path[:-4] + ".index"
        shutil.copy(os.path.join(self.log_dir, name[:-4] + ".index"), idx)
        with open(idx, "r+b") as f:
            f.seek(4)  # position of entry 0
            pos = int.from_bytes(f.read(4), "big")
            f.seek(4)
            f.write((pos + 1).to_bytes(4, "big"))
        rc, doc = dump("index", idx, "--verify", expect=1)
        self.assertTrue(any(p["position"] == 0 and "not the start of a batch" in p["detail"]
                            for p in doc["problems"]), doc["problems"])

    def test_base_offset_near_int64_max_is_out_of_range(self):
        # A crafted file name: base 9223372036854775807 + any relative offset overflows int64.
        # Reported as offset_out_of_range (no signed-overflow UB, no crash).
        name = self.segments(self.log_dir)[0]
        d = os.path.join(self.tmp, "huge-base")
        os.makedirs(d, exist_ok=True)
        stem = os.path.join(d, "09223372036854775807")
        shutil.copy(os.path.join(self.log_dir, name), stem + ".log")
        shutil.copy(os.path.join(self.log_dir, name[:-4] + ".index"), stem + ".index")
        self.assertGreater(os.path.getsize(stem + ".index"), 0)
        rc, doc = dump("index", stem + ".index", "--verify", expect=1)
        kinds = [p["kind"] for p in doc["problems"]]
        self.assertIn("offset_out_of_range", kinds)
        rc, doc = dump("segment", stem + ".log", expect=1)
        self.assertTrue(doc["problems"])
        self.assertTrue(all(p["kind"] == "offset_out_of_range" for p in doc["problems"]),
                        doc["problems"])

    def test_garbage_never_crashes(self):
        rng = random.Random(6)
        with open(os.path.join(self.log_dir, self.segments(self.log_dir)[0]), "rb") as f:
            good = f.read()
        d = os.path.join(self.tmp, "garbage")
        os.makedirs(d, exist_ok=True)
        cases = [b"", b"\x00" * 11, b"\xff" * 100, bytes(rng.randrange(256) for _ in range(5000))]
        for _ in range(40):
            b = bytearray(good)
            for _ in range(rng.randrange(1, 20)):
                b[rng.randrange(len(b))] = rng.randrange(256)
            cases.append(bytes(b[:rng.randrange(len(b) + 1)]))
        for i, data in enumerate(cases):
            p = os.path.join(d, "%020d.log" % i)
            with open(p, "wb") as f:
                f.write(data)
            for args in (["segment", p, "--records"], ["index", p[:-4] + ".index", "--verify"]):
                if args[0] == "index":
                    with open(p[:-4] + ".index", "wb") as f:
                        f.write(data[:rng.randrange(len(data) + 1)][:800])
                rc, doc = dump(*args)
                self.assertIn(rc, (0, 1), (i, args))
        rc, doc = dump("segment", os.path.join(d, "missing.log"))
        self.assertEqual(rc, 2)
        self.assertIn("error", doc)
        rc, doc = dump("checkpoint", d)
        self.assertEqual(rc, 2)


if __name__ == "__main__":
    unittest.main(verbosity=2)
