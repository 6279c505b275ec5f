// Unit tests of strata-dump's pure logic: segment scanning (CRC, torn tails, bad lengths, offset
// order), index parsing and verification, PK header decoding, JSON byte fields.
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <string>
#include <vector>

#include "protocol/record/batch_builder.h"
#include "protocol/record/batch_format.h"
#include "tools/dump/index_check.h"
#include "tools/dump/output.h"
#include "tools/dump/record_decode.h"
#include "tools/dump/segment_scan.h"

namespace strata::dump {
namespace {

std::vector<uint8_t> be_entries(const std::vector<std::pair<int64_t, int64_t>>& es, bool time);

std::span<const uint8_t> b(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::vector<uint8_t> make_batch(int64_t base, int n, int64_t ts = 1000,
                                codec::Compression c = codec::Compression::none) {
  protocol::RecordBatchBuilder builder(c);
  builder.set_base_offset(base);
  for (int i = 0; i < n; ++i) {
    std::string k = "key" + std::to_string(base + i), v = "value" + std::to_string(base + i);
    builder.add(ts + i, b(k), b(v));
  }
  return builder.build();
}

class Collector : public SegmentVisitor {
 public:
  void on_batch(const BatchInfo& bi, std::span<const uint8_t>) override { batches.push_back(bi); }
  void on_problem(const Problem& p) override { problems.push_back(p); }
  std::vector<BatchInfo> batches;
  std::vector<Problem> problems;
};

// Also decodes the records of every batch the scanner calls valid (must succeed or fail cleanly).
class DecodingCollector : public Collector {
 public:
  void on_batch(const BatchInfo& bi, std::span<const uint8_t> bytes) override {
    Collector::on_batch(bi, bytes);
    if (!bi.valid()) return;
    size_t n = 0;
    Status st = for_each_record(reader, bytes, 1000, [&](const DecodedRecord& r) {
      ++n;
      EXPECT_GE(r.offset, bi.base_offset);
    });
    if (st.ok()) {
      EXPECT_EQ(n, static_cast<size_t>(bi.record_count));
    }
  }
  protocol::RecordReader reader;
};

struct Segment {
  std::vector<uint8_t> bytes;
  std::vector<uint64_t> starts;
  void add(const std::vector<uint8_t>& batch) {
    starts.push_back(bytes.size());
    bytes.insert(bytes.end(), batch.begin(), batch.end());
  }
};

Segment three_batches() {
  Segment s;
  s.add(make_batch(100, 3, 1000));
  s.add(make_batch(103, 5, 900, codec::Compression::gzip));
  s.add(make_batch(108, 2, 2000));
  return s;
}

ScanSummary scan(const std::vector<uint8_t>& bytes, Collector& c, int64_t base = 100) {
  MemorySource src(bytes);
  ScanOptions o;
  o.segment_base = base;
  auto r = scan_segment(src, o, c);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return *r;
}

TEST(DumpScan, CleanSegment) {
  Segment s = three_batches();
  Collector c;
  ScanSummary sum = scan(s.bytes, c);
  EXPECT_TRUE(c.problems.empty());
  ASSERT_EQ(c.batches.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(c.batches[i].position, s.starts[i]);
    EXPECT_TRUE(c.batches[i].valid());
  }
  EXPECT_EQ(c.batches[1].base_offset, 103);
  EXPECT_EQ(c.batches[1].last_offset(), 107);
  EXPECT_EQ(c.batches[1].attributes & protocol::batch_format::kCompressionMask, 1);
  EXPECT_EQ(sum.records, 10u);
  EXPECT_EQ(sum.first_offset, 100);
  EXPECT_EQ(sum.last_offset, 109);
  EXPECT_EQ(sum.max_timestamp, 2001);
  EXPECT_EQ(sum.scanned_bytes, s.bytes.size());
  EXPECT_EQ(sum.problems, 0u);
}

TEST(DumpScan, FlippedByteNamesTheBatchAndContinues) {
  Segment s = three_batches();
  uint64_t flip = s.starts[1] + 40;  // maxTimestamp of batch 2: inside the CRC range
  s.bytes[flip] ^= 0x01;
  Collector c;
  ScanSummary sum = scan(s.bytes, c);
  ASSERT_EQ(c.problems.size(), 1u);
  EXPECT_EQ(c.problems[0].kind, ProblemKind::crc_mismatch);
  EXPECT_EQ(c.problems[0].position, s.starts[1]);
  EXPECT_EQ(c.problems[0].end, s.starts[2]);
  EXPECT_EQ(c.problems[0].base_offset, 103);
  ASSERT_EQ(c.batches.size(), 3u);
  EXPECT_FALSE(c.batches[1].crc_ok());
  EXPECT_TRUE(c.batches[2].valid());
  EXPECT_EQ(sum.valid_batches, 2u);
  EXPECT_EQ(sum.records, 5u);
}

TEST(DumpScan, BadMagicWithPlausibleLengthIsSkipped) {
  Segment s = three_batches();
  s.bytes[s.starts[0] + protocol::batch_format::kMagicOffset] = 1;
  Collector c;
  scan(s.bytes, c);
  ASSERT_EQ(c.problems.size(), 1u);
  EXPECT_EQ(c.problems[0].kind, ProblemKind::bad_magic);
  EXPECT_EQ(c.batches.size(), 3u);
}

TEST(DumpScan, TornTailReportsWhereTheShortBatchStarts) {
  Segment s = three_batches();
  for (size_t cut : {s.starts[2] + 5, s.starts[2] + 30, s.bytes.size() - 1}) {
    std::vector<uint8_t> torn(s.bytes.begin(), s.bytes.begin() + static_cast<long>(cut));
    Collector c;
    ScanSummary sum = scan(torn, c);
    ASSERT_EQ(c.problems.size(), 1u) << cut;
    EXPECT_EQ(c.problems[0].kind, ProblemKind::truncated);
    EXPECT_EQ(c.problems[0].position, s.starts[2]);
    EXPECT_EQ(c.problems[0].end, cut);
    EXPECT_EQ(c.batches.size(), 2u);
    EXPECT_EQ(sum.scanned_bytes, s.starts[2]);
  }
}

void set_length(std::vector<uint8_t>& bytes, uint64_t batch_start, uint32_t v) {
  uint64_t at = batch_start + protocol::batch_format::kBatchLengthOffset;
  for (int i = 0; i < 4; ++i) bytes[at + i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}

TEST(DumpScan, ImplausibleLengthResyncsOnTheNextBatch) {
  for (uint32_t bad : {10u, 0x7fff0000u}) {  // below the minimum; past the end of the file
    Segment s = three_batches();
    set_length(s.bytes, s.starts[1], bad);
    Collector c;
    ScanSummary sum = scan(s.bytes, c);
    ASSERT_EQ(c.problems.size(), 1u) << bad;
    EXPECT_EQ(c.problems[0].kind, ProblemKind::bad_length);
    EXPECT_EQ(c.problems[0].position, s.starts[1]);
    EXPECT_EQ(c.problems[0].end, s.starts[2]);
    ASSERT_EQ(c.batches.size(), 2u);
    EXPECT_EQ(c.batches[1].position, s.starts[2]);
    EXPECT_EQ(sum.scanned_bytes, s.bytes.size());
    EXPECT_EQ(sum.records, 5u);
  }
}

TEST(DumpScan, ImplausibleLengthWithNothingAfterStops) {
  Segment s = three_batches();
  set_length(s.bytes, s.starts[2], 10);
  Collector c;
  ScanSummary sum = scan(s.bytes, c);
  ASSERT_EQ(c.problems.size(), 1u);
  EXPECT_EQ(c.problems[0].kind, ProblemKind::bad_length);
  EXPECT_EQ(c.problems[0].position, s.starts[2]);
  EXPECT_EQ(c.problems[0].end, s.bytes.size());
  EXPECT_EQ(sum.scanned_bytes, s.starts[2]);
}

// batchLength is outside the CRC: a flipped bit in its high byte makes the batch claim 16 MiB
// more, landing inside a later (big) batch. The CRC then fails; the scan must not trust that
// length and skip the intact batches behind it, but resynchronise on the next one.
TEST(DumpScan, FlippedLengthHighByteHidesNoIntactBatch) {
  Segment s;
  s.add(make_batch(100, 3));
  s.add(make_batch(103, 2));
  s.add(make_batch(105, 2));
  {
    protocol::RecordBatchBuilder big(codec::Compression::none);
    big.set_base_offset(107);
    const std::string value((17u << 20), 'x');  // 17 MiB: the flipped length ends inside it
    big.add(5000, b("big"), b(value));
    s.add(big.build());
  }
  s.add(make_batch(108, 2));
  const uint64_t at = s.starts[1] + protocol::batch_format::kBatchLengthOffset;
  s.bytes[at] ^= 0x01;  // +16 MiB
  ASSERT_LT(s.starts[1] + (uint64_t{1} << 24), s.starts[4]);
  Collector c;
  ScanSummary sum = scan(s.bytes, c);
  ASSERT_EQ(c.problems.size(), 1u);
  EXPECT_EQ(c.problems[0].kind, ProblemKind::bad_length);
  EXPECT_EQ(c.problems[0].position, s.starts[1]);
  EXPECT_EQ(c.problems[0].end, s.starts[2]);
  std::vector<uint64_t> valid_at;
  for (const auto& bi : c.batches) {
    if (bi.valid()) valid_at.push_back(bi.position);
  }
  EXPECT_EQ(valid_at, (std::vector<uint64_t>{s.starts[0], s.starts[2], s.starts[3], s.starts[4]}));
  EXPECT_EQ(sum.records, 3u + 2u + 1u + 2u);
  EXPECT_EQ(sum.last_offset, 109);
  EXPECT_EQ(sum.scanned_bytes, s.bytes.size());
}

// Crafted offsets near INT64_MAX are reported, not overflowed (UBSan would flag the arithmetic).
TEST(DumpScan, OverflowingOffsetsAreOutOfRange) {
  Segment s;
  s.add(make_batch(100, 3));
  s.add(make_batch(std::numeric_limits<int64_t>::max() - 1, 2));  // last + 1 overflows
  Collector c;
  ScanSummary sum = scan(s.bytes, c);
  ASSERT_EQ(c.problems.size(), 1u);
  EXPECT_EQ(c.problems[0].kind, ProblemKind::offset_out_of_range);
  EXPECT_EQ(c.problems[0].position, s.starts[1]);
  EXPECT_EQ(c.batches[1].last_offset(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(sum.last_offset, 102);

  // An index named 09223372036854775807.index: base + relative offset overflows.
  std::vector<Problem> problems;
  auto idx = be_entries({{0, 0}, {5, 100}}, false);
  auto entries = parse_offset_index(idx, std::numeric_limits<int64_t>::max(), problems);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].offset, std::numeric_limits<int64_t>::max());
  ASSERT_GE(problems.size(), 1u);
  EXPECT_EQ(problems[0].kind, ProblemKind::offset_out_of_range);
  EXPECT_EQ(problems[0].position, 8u);
  problems.clear();
  auto tidx = be_entries({{10, 7}}, true);
  auto tentries = parse_time_index(tidx, std::numeric_limits<int64_t>::max() - 3, problems);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].kind, ProblemKind::offset_out_of_range);
  EXPECT_EQ(tentries[0].offset, std::numeric_limits<int64_t>::max());
}

TEST(DumpScan, OffsetOrderAndRange) {
  Segment s;
  s.add(make_batch(100, 3));
  s.add(make_batch(101, 3));  // overlaps
  s.add(make_batch(50, 1));   // before the segment base
  Collector c;
  scan(s.bytes, c);
  ASSERT_EQ(c.problems.size(), 3u);
  EXPECT_EQ(c.problems[0].kind, ProblemKind::offset_order);
  EXPECT_EQ(c.problems[0].position, s.starts[1]);
  EXPECT_EQ(c.problems[1].kind, ProblemKind::offset_order);
  EXPECT_EQ(c.problems[2].kind, ProblemKind::offset_out_of_range);
  EXPECT_EQ(c.problems[2].position, s.starts[2]);
}

TEST(DumpScan, RandomDamageNeverEscapesTheFile) {
  Segment s = three_batches();
  std::mt19937 rng(6);
  for (int round = 0; round < 2000; ++round) {
    std::vector<uint8_t> bytes = s.bytes;
    int flips = 1 + static_cast<int>(rng() % 8);
    for (int i = 0; i < flips; ++i) bytes[rng() % bytes.size()] = static_cast<uint8_t>(rng());
    bytes.resize(rng() % (bytes.size() + 1));
    DecodingCollector c;
    ScanSummary sum = scan(bytes, c);
    uint64_t end = 0;
    for (const auto& bi : c.batches) {
      EXPECT_GE(bi.position, end);  // batches never overlap (bad-magic ones may be cut short)
      EXPECT_LE(bi.position + bi.size, bytes.size());
      end = bi.valid() ? bi.position + bi.size : bi.position + 1;
    }
    EXPECT_LE(sum.scanned_bytes, bytes.size());
    if (sum.scanned_bytes < bytes.size()) {
      EXPECT_FALSE(c.problems.empty());
    }
  }
}

std::vector<uint8_t> be_entries(const std::vector<std::pair<int64_t, int64_t>>& es, bool time) {
  std::vector<uint8_t> out;
  for (auto [a, c] : es) {
    int width_a = time ? 8 : 4;
    for (int i = width_a - 1; i >= 0; --i) out.push_back(static_cast<uint8_t>(a >> (8 * i)));
    for (int i = 3; i >= 0; --i) out.push_back(static_cast<uint8_t>(c >> (8 * i)));
  }
  return out;
}

TEST(DumpIndex, OffsetIndexParseAndVerify) {
  Segment s = three_batches();
  Collector c;
  scan(s.bytes, c);
  // Good: (last offset of batch, batch start).
  std::vector<Problem> problems;
  auto good = be_entries(
      {{7, static_cast<int64_t>(s.starts[1])}, {9, static_cast<int64_t>(s.starts[2])}}, false);
  auto entries = parse_offset_index(good, 100, problems);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].offset, 107);
  verify_offset_index(entries, c.batches, s.bytes.size(), problems);
  EXPECT_TRUE(problems.empty());

  // Wrong offset, mid-batch position, past the end, trailing bytes, non-monotonic.
  auto bad = be_entries({{6, static_cast<int64_t>(s.starts[1])},
                         {9, static_cast<int64_t>(s.starts[2] + 1)},
                         {8, static_cast<int64_t>(s.bytes.size() + 10)}},
                        false);
  bad.push_back(0);
  entries = parse_offset_index(bad, 100, problems);
  ASSERT_EQ(entries.size(), 3u);
  ASSERT_EQ(problems.size(), 2u);  // trailing byte; entry 2's offset 108 <= 109
  EXPECT_EQ(problems[0].position, 24u);
  EXPECT_EQ(problems[1].position, 16u);
  problems.clear();
  verify_offset_index(entries, c.batches, s.bytes.size(), problems);
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_NE(problems[0].detail.find("has offsets 103..107"), std::string::npos);
  EXPECT_NE(problems[1].detail.find("not the start of a batch"), std::string::npos);
  EXPECT_NE(problems[2].detail.find("past the end"), std::string::npos);
}

TEST(DumpIndex, TimeIndexParseAndVerify) {
  Segment s = three_batches();  // max timestamps 1002, 904, 2001
  Collector c;
  scan(s.bytes, c);
  std::vector<Problem> problems;
  auto good = be_entries({{1002, 2}, {2001, 9}}, true);
  auto entries = parse_time_index(good, 100, problems);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[1].offset, 109);
  verify_time_index(entries, c.batches, problems);
  EXPECT_TRUE(problems.empty());

  // Offset 7 is batch 2's last offset, but the max so far is 1002, not 904; offset 5 is no batch
  // end; timestamps not increasing.
  auto bad = be_entries({{904, 7}, {904, 5}}, true);
  entries = parse_time_index(bad, 100, problems);
  ASSERT_EQ(problems.size(), 2u);  // timestamp not above, offset below
  problems.clear();
  verify_time_index(entries, c.batches, problems);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_NE(problems[0].detail.find("max timestamp of the batches up to offset 107 is 1002"),
            std::string::npos);
  EXPECT_NE(problems[1].detail.find("not the last offset of a batch"), std::string::npos);
}

TEST(DumpRecords, PkHeadersAreDecoded) {
  protocol::RecordBatchBuilder builder;
  builder.set_base_offset(10);
  std::string k = "k", v = "after", before = "before";
  std::string update = "update", insert = "insert", del_kind = "delete";
  std::vector<protocol::Header> upd = {{"strata.change", b(update)}, {"strata.before", b(before)}};
  std::vector<protocol::Header> ins = {{"strata.change", b(insert)}};
  std::vector<protocol::Header> del = {{"strata.change", b(del_kind)},
                                       {"strata.before", std::nullopt}};
  builder.add(5, b(k), b(v), upd);
  builder.add(6, b(k), b(v), ins);
  builder.add(7, b(k), std::nullopt, del);
  builder.add(8, b(k), b(v));
  auto batch = builder.build();
  protocol::RecordReader reader;
  std::vector<std::pair<int64_t, std::string>> kinds;
  std::vector<ojson> js;
  Status st = for_each_record(reader, batch, 100, [&](const DecodedRecord& r) {
    kinds.emplace_back(r.offset, r.change ? std::string(*r.change) : "-");
    ojson j;
    if (r.before) bytes_field(j, "before", *r.before, 0);
    bytes_field(j, "value", r.record->value, 0);
    js.push_back(j);
  });
  ASSERT_TRUE(st.ok()) << st.to_string();
  EXPECT_EQ(kinds, (std::vector<std::pair<int64_t, std::string>>{
                       {10, "update"}, {11, "insert"}, {12, "delete"}, {13, "-"}}));
  EXPECT_EQ(js[0]["before"], "before");
  EXPECT_FALSE(js[1].contains("before"));
  EXPECT_TRUE(js[2]["before"].is_null());
  EXPECT_TRUE(js[2]["value"].is_null());

  kinds.clear();
  ASSERT_TRUE(for_each_record(reader, batch, 2, [&](const DecodedRecord& r) {
                kinds.emplace_back(r.offset, "");
              }).ok());
  EXPECT_EQ(kinds.size(), 2u);
}

TEST(DumpOutput, BytesField) {
  ojson j;
  std::string text = "hello", bin("\x01\xff", 2);
  bytes_field(j, "a", b(text), 0);
  bytes_field(j, "b", b(bin), 0);
  bytes_field(j, "c", b(text), 3);
  bytes_field(j, "d", std::nullopt, 0);
  EXPECT_EQ(j["a"], "hello");
  EXPECT_EQ(j["b_hex"], "01ff");
  EXPECT_FALSE(j.contains("b"));
  EXPECT_EQ(j["c"], "hel");
  EXPECT_EQ(j["c_size"], 5);
  EXPECT_EQ(j["c_truncated"], true);
  EXPECT_TRUE(j["d"].is_null());
  EXPECT_EQ(Output::text_line(ojson{{"x", 1}, {"s", "two words"}, {"t", "w"}}),
            "x: 1 s: \"two words\" t: w");
}

}  // namespace
}  // namespace strata::dump
