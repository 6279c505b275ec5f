#!/usr/bin/python3
"""Writes golden RecordBatch v2 files produced by a real Kafka client (kafka-python 2.0.2).

Run with Debian's /usr/bin/python3 (python3-kafka, python3-lz4, python3-snappy,
python3-zstandard). record_golden_test.cc re-derives the same records (see golden_records()
there) and checks that our reader decodes each file to exactly them.

  small_<codec>.bin : 5 records: keys/values, a null key, a null value, headers (one null value)
  large_<codec>.bin : 300 records of ~600 compressible bytes (several LZ4 blocks, linked by
                      python-lz4's default, and several xerial snappy chunks)
"""
import os
import sys

from kafka.record.default_records import DefaultRecordBatchBuilder

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
BASE_TS = 1700000000000
PRODUCER_ID, PRODUCER_EPOCH, BASE_SEQUENCE = 1234, 5, 42


def small_records():
    for i in range(5):
        key = None if i == 2 else ("key-%d" % i).encode()
        value = None if i == 3 else ("value-%d-" % i).encode() * (i + 1)
        headers = [("h1", ("hv%d" % i).encode()), ("h2", None)] if i % 2 == 0 else []
        yield i, BASE_TS + 7 * i, key, value, headers


def large_records():
    for i in range(300):
        key = ("k%05d" % i).encode()
        value = (("row %d of the large golden batch; " % i) * 20).encode()[:600]
        yield i, BASE_TS + (i % 13) * 1000, key, value, [("seq", str(i).encode())]


def build(codec, records):
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=False, producer_id=PRODUCER_ID,
        producer_epoch=PRODUCER_EPOCH, base_sequence=BASE_SEQUENCE, batch_size=1 << 24)
    for offset, ts, key, value, headers in records:
        if builder.append(offset, ts, key, value, headers) is None:
            raise RuntimeError("batch full")
    return bytes(builder.build())


def main():
    out_dir = os.path.dirname(os.path.abspath(__file__))
    for name, codec in CODECS.items():
        with open(os.path.join(out_dir, "small_%s.bin" % name), "wb") as f:
            f.write(build(codec, small_records()))
        if codec != 0:
            with open(os.path.join(out_dir, "large_%s.bin" % name), "wb") as f:
                f.write(build(codec, large_records()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
