// Unit tests for RecordReader and the record varints: builder -> view -> reader round trips for
// every codec, and hostile record bytes (bad varints, lengths, counts, trailing bytes).
#include "protocol/record/record_reader.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>

#include "protocol/record/batch_builder.h"
#include "protocol/record/byte_order.h"
#include "protocol/record/varint.h"
#include "test/unit/record/test_util.h"

namespace strata::protocol {
namespace {

namespace bf = batch_format;
using test::as_bytes;
using test::as_opt_string;
using test::as_string;

constexpr codec::Compression kAllCodecs[] = {codec::Compression::none, codec::Compression::gzip,
                                             codec::Compression::snappy, codec::Compression::lz4,
                                             codec::Compression::zstd};

// --- varints -----------------------------------------------------------------------------------

TEST(Varint, RoundTripsEdgeValues) {
  for (int32_t v : {0, 1, -1, 63, -64, 64, -65, 300, std::numeric_limits<int32_t>::max(),
                    std::numeric_limits<int32_t>::min()}) {
    uint8_t buf[8];
    uint8_t* end = detail::write_varint(buf, v);
    ASSERT_EQ(static_cast<size_t>(end - buf), detail::varint_size(v));
    size_t pos = 0;
    int32_t got = 0;
    ASSERT_TRUE(detail::read_varint(std::span<const uint8_t>(buf, end), pos, got));
    EXPECT_EQ(got, v);
    EXPECT_EQ(pos, static_cast<size_t>(end - buf));
  }
  for (int64_t v : {int64_t{0}, int64_t{-1}, int64_t{1} << 40, std::numeric_limits<int64_t>::max(),
                    std::numeric_limits<int64_t>::min()}) {
    uint8_t buf[12];
    uint8_t* end = detail::write_varlong(buf, v);
    ASSERT_EQ(static_cast<size_t>(end - buf), detail::varlong_size(v));
    size_t pos = 0;
    int64_t got = 0;
    ASSERT_TRUE(detail::read_varlong(std::span<const uint8_t>(buf, end), pos, got));
    EXPECT_EQ(got, v);
  }
  EXPECT_EQ(detail::varint_size(std::numeric_limits<int32_t>::min()), 5u);
  EXPECT_EQ(detail::varlong_size(std::numeric_limits<int64_t>::min()), 10u);
}

TEST(Varint, RejectsTruncatedAndOverlongEncodings) {
  auto rd32 = [](std::vector<uint8_t> b) {
    size_t pos = 0;
    int32_t v;
    return detail::read_varint(b, pos, v);
  };
  auto rd64 = [](std::vector<uint8_t> b) {
    size_t pos = 0;
    int64_t v;
    return detail::read_varlong(b, pos, v);
  };
  EXPECT_FALSE(rd32({}));
  EXPECT_FALSE(rd32({0x80}));
  EXPECT_FALSE(rd32({0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}));  // 6 bytes
  EXPECT_FALSE(rd32({0xFF, 0xFF, 0xFF, 0xFF, 0x7F}));        // 5th byte beyond 32 bits
  EXPECT_TRUE(rd32({0xFF, 0xFF, 0xFF, 0xFF, 0x0F}));
  EXPECT_FALSE(rd64({0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02}));
  EXPECT_FALSE(rd64({0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x81, 0x00}));
  EXPECT_TRUE(rd64({0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}));
}

// --- round trips -------------------------------------------------------------------------------

struct TestRecord {
  int64_t timestamp;
  std::optional<std::string> key, value;
  std::vector<std::pair<std::string, std::optional<std::string>>> headers;
};

std::vector<TestRecord> make_records(int n) {
  std::vector<TestRecord> out;
  std::mt19937 rng(n);
  for (int i = 0; i < n; ++i) {
    TestRecord r;
    r.timestamp = 1700000000000 + (i * 37) % 1000 - 500;  // not monotonic: max != last
    if (i % 5 != 1) r.key = "key-" + std::to_string(i);
    if (i % 7 != 2) r.value = std::string(rng() % 200, static_cast<char>('a' + i % 26));
    for (int h = 0; h < i % 4; ++h) {
      std::optional<std::string> hv;
      if (h != 1) hv = "hv" + std::to_string(h);
      r.headers.emplace_back("hdr" + std::to_string(h), hv);
    }
    out.push_back(std::move(r));
  }
  if (n > 3) out[3].key = std::string();  // empty (not null) key
  return out;
}

std::vector<uint8_t> build(codec::Compression c, const std::vector<TestRecord>& records) {
  RecordBatchBuilder b(c);
  b.set_base_offset(500).set_producer(9, 1, 0);
  std::vector<Header> headers;
  for (const auto& r : records) {
    headers.clear();
    for (const auto& [k, v] : r.headers) {
      Header h{k, std::nullopt};
      if (v) h.value = as_bytes(*v);
      headers.push_back(h);
    }
    auto opt = [](const std::optional<std::string>& s) -> std::optional<std::span<const uint8_t>> {
      if (!s) return std::nullopt;
      return as_bytes(*s);
    };
    b.add(r.timestamp, opt(r.key), opt(r.value), headers);
  }
  return b.build();
}

void expect_reads_back(std::span<const uint8_t> bytes, const std::vector<TestRecord>& expected) {
  RecordBatchView v(bytes);
  ASSERT_EQ(v.validate(), BatchCheck::ok);
  ASSERT_EQ(v.record_count(), static_cast<int32_t>(expected.size()));
  auto reader = RecordReader::open(v);
  ASSERT_TRUE(reader.ok()) << reader.status().to_string();
  Record r;
  size_t i = 0;
  int64_t max_ts = -1;
  for (;; ++i) {
    auto more = reader->next(r);
    ASSERT_TRUE(more.ok()) << more.status().to_string();
    if (!*more) break;
    ASSERT_LT(i, expected.size());
    const TestRecord& e = expected[i];
    EXPECT_EQ(reader->offset_of(r), 500 + static_cast<int64_t>(i));
    EXPECT_EQ(r.offset_delta, static_cast<int32_t>(i));
    EXPECT_EQ(reader->timestamp_of(r), e.timestamp);
    EXPECT_EQ(as_opt_string(r.key), e.key) << i;
    EXPECT_EQ(as_opt_string(r.value), e.value) << i;
    ASSERT_EQ(r.header_count, static_cast<int32_t>(e.headers.size()));
    HeaderIterator it = r.headers();
    Header h;
    for (const auto& [k, hv] : e.headers) {
      ASSERT_TRUE(it.next(h));
      EXPECT_EQ(h.key, k);
      EXPECT_EQ(as_opt_string(h.value), hv);
    }
    EXPECT_FALSE(it.next(h));
    max_ts = std::max(max_ts, e.timestamp);
  }
  EXPECT_EQ(i, expected.size());
  EXPECT_EQ(reader->records_read(), static_cast<int32_t>(expected.size()));
  if (!expected.empty()) {
    EXPECT_EQ(v.max_timestamp(), max_ts);
    EXPECT_EQ(v.base_timestamp(), expected[0].timestamp);
    EXPECT_EQ(v.last_offset_delta(), static_cast<int32_t>(expected.size()) - 1);
  }
  // Stays at the end.
  auto again = reader->next(r);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);
}

TEST(RecordReader, RoundTripEveryCodec) {
  for (auto c : kAllCodecs) {
    SCOPED_TRACE(std::string(codec::compression_name(c)));
    for (int n : {0, 1, 10, 2000}) {
      auto records = make_records(n);
      auto bytes = build(c, records);
      EXPECT_EQ(RecordBatchView(bytes).compression(), c);
      expect_reads_back(bytes, records);
    }
  }
}

TEST(RecordReader, ResetReusesTheReaderAcrossBatches) {
  RecordReader reader;
  Record r;
  EXPECT_FALSE(reader.next(r).ok());  // nothing opened yet
  for (auto c : kAllCodecs) {
    auto records = make_records(50);
    auto bytes = build(c, records);
    ASSERT_TRUE(reader.reset(RecordBatchView(bytes)).ok());
    int n = 0;
    while (true) {
      auto more = reader.next(r);
      ASSERT_TRUE(more.ok());
      if (!*more) break;
      EXPECT_EQ(as_opt_string(r.key), records[n].key);
      ++n;
    }
    EXPECT_EQ(n, 50);
  }
}

TEST(RecordReader, RecordsOfAnUncompressedBatchPointIntoIt) {
  auto bytes = build(codec::Compression::none, make_records(3));
  auto reader = RecordReader::open(RecordBatchView(bytes));
  ASSERT_TRUE(reader.ok());
  Record r;
  ASSERT_TRUE(*reader->next(r));
  EXPECT_GE(r.key->data(), bytes.data());
  EXPECT_LT(r.key->data(), bytes.data() + bytes.size());
}

TEST(RecordReader, DecompressedSizeLimit) {
  auto records = make_records(2000);
  for (auto c : kAllCodecs) {
    auto bytes = build(c, records);
    RecordBatchView v(bytes);
    if (c == codec::Compression::none) {
      // Nothing is decompressed, so the limit does not apply: records are read in place.
      EXPECT_TRUE(RecordReader::open(v, 1000).ok());
      continue;
    }
    EXPECT_EQ(RecordReader::open(v, 1000).status().code(), Errc::too_large)
        << codec::compression_name(c);
  }
}

// --- hostile input -----------------------------------------------------------------------------

// Wraps hand-written record bytes into a batch with a correct header and CRC.
std::vector<uint8_t> wrap(std::span<const uint8_t> records, int32_t count, int16_t attributes = 0) {
  std::vector<uint8_t> b(bf::kHeaderSize + records.size());
  if (!records.empty()) std::memcpy(b.data() + bf::kHeaderSize, records.data(), records.size());
  detail::store_be<int32_t>(b.data() + bf::kBatchLengthOffset,
                            static_cast<int32_t>(b.size() - bf::kLogOverhead));
  b[bf::kMagicOffset] = 2;
  detail::store_be<int16_t>(b.data() + bf::kAttributesOffset, attributes);
  detail::store_be<int32_t>(b.data() + bf::kLastOffsetDeltaOffset, count - 1);
  detail::store_be<int32_t>(b.data() + bf::kRecordCountOffset, count);
  update_crc(b);
  return b;
}

// Reads every record; returns the first error, or ok with the number read.
Result<int> read_all(std::span<const uint8_t> batch) {
  RecordBatchView v(batch);
  auto reader = RecordReader::open(v);
  if (!reader.ok()) return reader.status();
  Record r;
  int n = 0;
  while (true) {
    auto more = reader->next(r);
    if (!more.ok()) {
      // An error is sticky.
      auto again = reader->next(r);
      EXPECT_FALSE(again.ok());
      return more.status();
    }
    if (!*more) return n;
    ++n;
  }
}

// A minimal valid record: length, attrs, ts delta 0, offset delta 0, key "k", value null, 0 hdrs.
const std::vector<uint8_t> kGoodRecord = {/*len*/ 0x0E,   0x00,
                                          0x00,           0x00,
                                          /*key*/ 0x02,   'k',
                                          /*value*/ 0x01, /*headers*/ 0x00};

TEST(RecordReaderHostile, GoodRecordParses) {
  auto b = wrap(kGoodRecord, 1);
  ASSERT_EQ(RecordBatchView(b).validate(), BatchCheck::ok);
  auto n = read_all(b);
  ASSERT_TRUE(n.ok()) << n.status().to_string();
  EXPECT_EQ(*n, 1);
}

TEST(RecordReaderHostile, MalformedRecordsAreCorruption) {
  const std::vector<std::vector<uint8_t>> cases = {
      {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01},                    // over-long length varint
      {0xFF, 0xFF, 0xFF, 0xFF, 0x7F},                          // length varint beyond 32 bits
      {0x80},                                                  // truncated length varint
      {0x01},                                                  // negative length (-1)
      {0x7E, 0x00},                                            // length 63 > remaining
      {0x00},                                                  // empty record (no attributes)
      {0x06, 0x00, 0x00, 0x00},                                // truncated before key length
      {0x08, 0x00, 0x00, 0x00, 0x03},                          // key length -2
      {0x0A, 0x00, 0x00, 0x00, 0x06, 'k'},                     // key length 3 past the record
      {0x0C, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00},              // value length 4 past the record
      {0x0C, 0x00, 0x00, 0x00, 0x01, 0x01, 0x01},              // header count -1
      {0x0C, 0x00, 0x00, 0x00, 0x01, 0x01, 0x02},              // header count 1 but no header
      {0x10, 0x00, 0x00, 0x00, 0x01, 0x01, 0x02, 0x01, 0x00},  // header key length -1
      {0x12, 0x00, 0x00, 0x00, 0x01, 0x01, 0x02, 0x02, 'h', 0x03},  // header value -2
      {0x12, 0x00, 0x00, 0x00, 0x01, 0x01, 0x02, 0x02, 'h', 0x04},  // header value past end
      {0x0E, 0x00, 0x00, 0x00, 0x01, 0x01, 0x00, 0x00},             // extra byte inside the record
      // timestamp delta varlong with a 10th byte beyond 64 bits
      {0x1E, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02, 0x00, 0x01, 0x01,
       0x00},
      // offset delta varint with a 5th byte beyond 32 bits
      {0x14, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0x1F, 0x01, 0x01, 0x00},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    auto b = wrap(cases[i], 1);
    auto n = read_all(b);
    EXPECT_EQ(n.status().code(), Errc::corruption) << "case " << i;
  }
}

TEST(RecordReaderHostile, RecordCountMustMatchTheBytes) {
  std::vector<uint8_t> two = kGoodRecord;
  two.insert(two.end(), kGoodRecord.begin(), kGoodRecord.end());
  EXPECT_EQ(*read_all(wrap(two, 2)), 2);
  EXPECT_EQ(read_all(wrap(two, 3)).status().code(), Errc::corruption);  // too few records
  EXPECT_EQ(read_all(wrap(two, 1)).status().code(), Errc::corruption);  // trailing record
  EXPECT_EQ(read_all(wrap(two, 0)).status().code(), Errc::corruption);  // all trailing
  auto trailing = kGoodRecord;
  trailing.push_back(0);
  EXPECT_EQ(read_all(wrap(trailing, 1)).status().code(), Errc::corruption);
  EXPECT_EQ(read_all(wrap(kGoodRecord, -1)).status().code(), Errc::corruption);
  EXPECT_EQ(read_all(wrap(kGoodRecord, std::numeric_limits<int32_t>::max())).status().code(),
            Errc::corruption);
}

TEST(RecordReaderHostile, EveryTruncationIsAnError) {
  auto records = make_records(20);
  auto full = build(codec::Compression::none, records);
  auto payload = std::span<const uint8_t>(full).subspan(bf::kHeaderSize);
  for (size_t keep = 0; keep < payload.size(); ++keep) {
    auto b = wrap(payload.first(keep), 20);
    EXPECT_EQ(read_all(b).status().code(), Errc::corruption) << keep;
  }
}

TEST(RecordReaderHostile, ShortBatchUnknownCodecAndGarbagePayload) {
  auto good = wrap(kGoodRecord, 1);
  EXPECT_EQ(RecordReader::open(RecordBatchView(std::span(good).first(60))).status().code(),
            Errc::corruption);
  for (int16_t codec_id : {5, 6, 7}) {
    EXPECT_EQ(read_all(wrap(kGoodRecord, 1, codec_id)).status().code(), Errc::unsupported);
  }
  auto garbage = test::random_bytes(300, 5);
  for (int16_t codec_id : {1, 2, 3, 4}) {
    auto st = read_all(wrap(garbage, 1, codec_id)).status();
    EXPECT_FALSE(st.ok()) << codec_id;
  }
}

TEST(RecordReaderHostile, RandomMutationsNeverCrash) {
  auto records = make_records(30);
  for (auto c : kAllCodecs) {
    auto full = build(c, records);
    std::mt19937 rng(static_cast<uint32_t>(c) + 100);
    for (int iter = 0; iter < 2000; ++iter) {
      auto b = full;
      int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; ++f) {
        size_t at = bf::kHeaderSize + rng() % (b.size() - bf::kHeaderSize);
        b[at] = static_cast<uint8_t>(rng());
      }
      update_crc(b);
      auto n = read_all(b);
      if (n.ok()) {
        EXPECT_EQ(*n, 30);
      }
    }
  }
}

}  // namespace
}  // namespace strata::protocol
