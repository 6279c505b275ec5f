// Unit tests for RecordBatchView, validate(), the in-place edits and peek_batch_size, using
// batches made by RecordBatchBuilder.
#include "protocol/record/record_batch.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "protocol/record/batch_builder.h"
#include "protocol/record/record_reader.h"
#include "test/unit/record/test_util.h"

namespace strata::protocol {
namespace {

namespace bf = batch_format;
using test::as_bytes;

std::vector<uint8_t> sample_batch(codec::Compression c = codec::Compression::none,
                                  int records = 3) {
  RecordBatchBuilder b(c);
  b.set_base_offset(1000).set_producer(77, 3, 500).set_partition_leader_epoch(9);
  for (int i = 0; i < records; ++i) {
    char key[16], value[32];  // (not std::string +: gcc 12 -O3 warns falsely in operator+)
    std::snprintf(key, sizeof key, "k%d", i);
    std::snprintf(value, sizeof value, "value %d", i);
    Header h{"trace", as_bytes("abc")};
    b.add(5000 + 10 * i - (i == 1 ? 100 : 0), as_bytes(key), as_bytes(value),
          std::span<const Header>(&h, 1));
  }
  return b.build();
}

TEST(RecordBatchView, HeaderFieldsFromBuilder) {
  auto bytes = sample_batch();
  RecordBatchView v(bytes);
  ASSERT_EQ(v.validate(), BatchCheck::ok);
  EXPECT_EQ(v.size_bytes(), bytes.size());
  EXPECT_EQ(static_cast<size_t>(v.batch_length()) + 12, bytes.size());
  EXPECT_EQ(v.base_offset(), 1000);
  EXPECT_EQ(v.partition_leader_epoch(), 9);
  EXPECT_EQ(v.magic(), 2);
  EXPECT_EQ(v.crc(), v.compute_crc());
  EXPECT_EQ(v.last_offset_delta(), 2);
  EXPECT_EQ(v.last_offset(), 1002);
  EXPECT_EQ(v.next_offset(), 1003);
  EXPECT_EQ(v.base_timestamp(), 5000);  // the first record's timestamp
  EXPECT_EQ(v.max_timestamp(), 5020);
  EXPECT_EQ(v.producer_id(), 77);
  EXPECT_EQ(v.producer_epoch(), 3);
  EXPECT_EQ(v.base_sequence(), 500);
  EXPECT_EQ(v.record_count(), 3);
  EXPECT_EQ(v.attributes(), 0);
  EXPECT_EQ(v.compression(), codec::Compression::none);
  EXPECT_EQ(v.timestamp_type(), TimestampType::create_time);
  EXPECT_FALSE(v.is_transactional());
  EXPECT_FALSE(v.is_control());
  EXPECT_FALSE(v.has_delete_horizon());
  EXPECT_EQ(v.records_payload().size(), bytes.size() - bf::kHeaderSize);
  EXPECT_EQ(v.records_payload().data(), bytes.data() + 61);
}

TEST(RecordBatchView, HeaderBytesAtDocumentedOffsets) {
  auto bytes = sample_batch();
  // baseOffset 1000 big-endian at 0..7, magic at 16, recordCount at 57..60.
  EXPECT_EQ(bytes[6], 0x03);
  EXPECT_EQ(bytes[7], 0xE8);
  EXPECT_EQ(bytes[16], 2);
  EXPECT_EQ(bytes[60], 3);
  EXPECT_EQ(bytes[44 + 6], 77);  // producerId low byte at 43+7
}

TEST(RecordBatchView, AttributeFlags) {
  RecordBatchBuilder b(codec::Compression::zstd);
  b.set_transactional(true).set_control(true).set_timestamp_type(TimestampType::log_append_time);
  b.add(1, std::nullopt, as_bytes("x"));
  auto bytes = b.build();
  RecordBatchView v(bytes);
  ASSERT_EQ(v.validate(), BatchCheck::ok);
  EXPECT_EQ(v.compression(), codec::Compression::zstd);
  EXPECT_TRUE(v.is_transactional());
  EXPECT_TRUE(v.is_control());
  EXPECT_EQ(v.timestamp_type(), TimestampType::log_append_time);
  EXPECT_EQ(v.attributes(), 4 | 0x08 | 0x10 | 0x20);
}

TEST(RecordBatchView, EveryByteFlipInCrcRegionIsDetected) {
  for (auto c : {codec::Compression::none, codec::Compression::lz4}) {
    auto bytes = sample_batch(c);
    for (size_t i = bf::kCrcCoveredOffset; i < bytes.size(); ++i) {
      for (uint8_t mask : {0x01, 0x80}) {
        bytes[i] ^= mask;
        // The sign bit of recordCount is caught by the (earlier) record-count check.
        BatchCheck want = (i == bf::kRecordCountOffset && mask == 0x80)
                              ? BatchCheck::bad_record_count
                              : BatchCheck::bad_crc;
        EXPECT_EQ(RecordBatchView(bytes).validate(), want) << i;
        bytes[i] ^= mask;
      }
    }
    // The CRC field itself.
    for (size_t i = bf::kCrcOffset; i < bf::kCrcOffset + 4; ++i) {
      bytes[i] ^= 0x10;
      EXPECT_EQ(RecordBatchView(bytes).validate(), BatchCheck::bad_crc);
      bytes[i] ^= 0x10;
    }
    EXPECT_EQ(RecordBatchView(bytes).validate(), BatchCheck::ok);
  }
}

TEST(RecordBatchView, StructuralChecks) {
  auto bytes = sample_batch();
  std::span<const uint8_t> s(bytes);
  EXPECT_EQ(RecordBatchView(s.first(60)).validate(), BatchCheck::too_short);
  EXPECT_EQ(RecordBatchView(s.first(0)).validate(), BatchCheck::too_short);
  EXPECT_EQ(RecordBatchView(s.first(bytes.size() - 1)).validate(), BatchCheck::bad_length);
  auto longer = bytes;
  longer.push_back(0);
  EXPECT_EQ(RecordBatchView(longer).validate(), BatchCheck::bad_length);

  auto neg_len = bytes;
  neg_len[8] = 0xFF;
  EXPECT_EQ(RecordBatchView(neg_len).validate(), BatchCheck::bad_length);

  auto magic1 = bytes;
  magic1[16] = 1;
  EXPECT_EQ(RecordBatchView(magic1).validate(), BatchCheck::bad_magic);

  auto neg_count = bytes;
  neg_count[57] = 0x80;
  update_crc(neg_count);
  EXPECT_EQ(RecordBatchView(neg_count).validate(), BatchCheck::bad_record_count);
  EXPECT_EQ(batch_check_name(BatchCheck::bad_record_count), "bad_record_count");
}

TEST(RecordBatchEdits, OffsetAndEpochOutsideCrc) {
  auto bytes = sample_batch(codec::Compression::gzip);
  uint32_t crc_before = RecordBatchView(bytes).crc();
  set_base_offset(bytes, 123456789012345);
  set_partition_leader_epoch(bytes, 42);
  RecordBatchView v(bytes);
  EXPECT_EQ(v.validate(), BatchCheck::ok);
  EXPECT_EQ(v.crc(), crc_before);
  EXPECT_EQ(v.base_offset(), 123456789012345);
  EXPECT_EQ(v.partition_leader_epoch(), 42);
  EXPECT_EQ(v.last_offset(), 123456789012345 + 2);
}

TEST(RecordBatchEdits, SetLogAppendTimeKeepsCrcValid) {
  for (auto c : {codec::Compression::none, codec::Compression::snappy}) {
    auto bytes = sample_batch(c);
    set_log_append_time(bytes, 999999);
    RecordBatchView v(bytes);
    ASSERT_EQ(v.validate(), BatchCheck::ok);
    EXPECT_EQ(v.timestamp_type(), TimestampType::log_append_time);
    EXPECT_EQ(v.max_timestamp(), 999999);
    EXPECT_EQ(v.base_timestamp(), 5000);
    EXPECT_EQ(v.compression(), c);
    auto reader = RecordReader::open(v);
    ASSERT_TRUE(reader.ok());
    Record r;
    int n = 0;
    while (*reader->next(r)) {
      EXPECT_EQ(reader->timestamp_of(r), 999999);
      ++n;
    }
    EXPECT_EQ(n, 3);
  }
}

TEST(RecordBatchEdits, UpdateCrcRepairsAnEdit) {
  auto bytes = sample_batch();
  bytes[bf::kProducerEpochOffset + 1] = 7;
  EXPECT_EQ(RecordBatchView(bytes).validate(), BatchCheck::bad_crc);
  update_crc(bytes);
  EXPECT_EQ(RecordBatchView(bytes).validate(), BatchCheck::ok);
  EXPECT_EQ(RecordBatchView(bytes).producer_epoch(), 7);
}

TEST(PeekBatchSize, SplitsConcatenatedBatches) {
  std::vector<std::vector<uint8_t>> batches = {sample_batch(codec::Compression::none, 1),
                                               sample_batch(codec::Compression::zstd, 5),
                                               sample_batch(codec::Compression::gzip, 2)};
  std::vector<uint8_t> buffer;
  for (auto& b : batches) buffer.insert(buffer.end(), b.begin(), b.end());
  std::span<const uint8_t> rest(buffer);
  for (auto& b : batches) {
    size_t n = peek_batch_size(rest);
    ASSERT_EQ(n, b.size());
    ASSERT_LE(n, rest.size());
    EXPECT_EQ(RecordBatchView(rest.first(n)).validate(), BatchCheck::ok);
    rest = rest.subspan(n);
  }
  EXPECT_EQ(peek_batch_size(rest), 0u);
  std::span<const uint8_t> all(buffer);
  EXPECT_EQ(peek_batch_size(all.first(60)), 0u);
  // A partial batch: the header is there, the size says more than is present.
  EXPECT_EQ(peek_batch_size(all.first(61)), batches[0].size());
  auto neg = batches[0];
  neg[8] = 0x80;
  EXPECT_EQ(peek_batch_size(neg), 0u);
}

TEST(RecordBatchBuilder, EmptyBatch) {
  RecordBatchBuilder b;
  auto bytes = b.build();
  RecordBatchView v(bytes);
  ASSERT_EQ(v.validate(), BatchCheck::ok);
  EXPECT_EQ(bytes.size(), 61u);
  EXPECT_EQ(v.record_count(), 0);
  EXPECT_EQ(v.last_offset_delta(), -1);
  EXPECT_EQ(v.base_timestamp(), -1);
  EXPECT_EQ(v.producer_id(), -1);
  EXPECT_EQ(v.base_sequence(), -1);
}

TEST(RecordBatchBuilder, ClearRecordsAndBuildInto) {
  RecordBatchBuilder b(codec::Compression::lz4);
  b.add(1, as_bytes("a"), as_bytes("b"));
  b.clear_records();
  EXPECT_EQ(b.record_count(), 0);
  b.add(50, as_bytes("c"), as_bytes("d"));
  std::vector<uint8_t> out = {1, 2, 3};
  b.build_into(out);
  RecordBatchView v(std::span<const uint8_t>(out).subspan(3));
  ASSERT_EQ(v.validate(), BatchCheck::ok);
  EXPECT_EQ(v.record_count(), 1);
  EXPECT_EQ(v.base_timestamp(), 50);
}

}  // namespace
}  // namespace strata::protocol
