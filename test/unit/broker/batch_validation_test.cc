#include "broker/topics/batch_validation.h"

#include <gtest/gtest.h>

#include "protocol/record/batch_builder.h"
#include "protocol/record/batch_format.h"
#include "protocol/record/byte_order.h"
#include "protocol/record/record_batch.h"
#include "protocol/record/record_reader.h"

namespace strata::broker {
namespace {

namespace p = strata::protocol;
namespace bf = strata::protocol::batch_format;
using p::ErrorCode;

std::span<const uint8_t> bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::vector<uint8_t> make_batch(codec::Compression c = codec::Compression::none, int n = 3) {
  static const std::string k = "key", v = "value";
  p::RecordBatchBuilder b(c);
  for (int i = 0; i < n; ++i) b.add(1000 + i, bytes(k), bytes(v));
  return b.build();
}

TopicConfig default_topic() { return TopicConfig{}; }

TEST(BatchValidation, AcceptsAValidBatchInPlace) {
  auto batch = make_batch();
  auto r = prepare_batch(batch, default_topic(), 9, 5);
  EXPECT_EQ(r.error, ErrorCode::none) << r.message;
  EXPECT_EQ(r.batch.data(), batch.data());
  EXPECT_EQ(r.record_count, 3);
  EXPECT_EQ(r.log_append_time, -1);
}

TEST(BatchValidation, CrcMismatchIsCorruptMessage) {
  auto batch = make_batch();
  batch.back() ^= 0x01;
  EXPECT_EQ(prepare_batch(batch, default_topic(), 9, 0).error, ErrorCode::corrupt_message);
}

TEST(BatchValidation, WrongMagicIsInvalidRecord) {
  auto batch = make_batch();
  batch[bf::kMagicOffset] = 1;
  EXPECT_EQ(prepare_batch(batch, default_topic(), 9, 0).error, ErrorCode::invalid_record);
}

TEST(BatchValidation, TwoBatchesInOnePartitionIsInvalidRecord) {
  auto a = make_batch();
  auto b = make_batch();
  a.insert(a.end(), b.begin(), b.end());
  EXPECT_EQ(prepare_batch(a, default_topic(), 9, 0).error, ErrorCode::invalid_record);
}

TEST(BatchValidation, TruncatedBatchIsCorruptMessage) {
  auto batch = make_batch();
  batch.resize(batch.size() - 4);
  EXPECT_EQ(prepare_batch(batch, default_topic(), 9, 0).error, ErrorCode::corrupt_message);
  std::vector<uint8_t> tiny(10, 0);
  EXPECT_EQ(prepare_batch(tiny, default_topic(), 9, 0).error, ErrorCode::corrupt_message);
}

TEST(BatchValidation, TooLargeIsMessageTooLarge) {
  auto batch = make_batch();
  TopicConfig t;
  t.max_message_bytes = static_cast<int32_t>(batch.size()) - 1;
  EXPECT_EQ(prepare_batch(batch, t, 9, 0).error, ErrorCode::message_too_large);
}

TEST(BatchValidation, ZstdNeedsProduceV7) {
  auto batch = make_batch(codec::Compression::zstd);
  EXPECT_EQ(prepare_batch(batch, default_topic(), 6, 0).error,
            ErrorCode::unsupported_compression_type);
  auto again = make_batch(codec::Compression::zstd);
  EXPECT_EQ(prepare_batch(again, default_topic(), 7, 0).error, ErrorCode::none);
}

TEST(BatchValidation, BadRecordInsideAValidCrcIsInvalidRecord) {
  auto batch = make_batch();
  // Make the first record's length varint claim far more bytes than exist, then fix the CRC so
  // only the record structure is wrong.
  batch[bf::kRecordsOffset] = 0x7e;
  p::update_crc(batch);
  auto r = prepare_batch(batch, default_topic(), 9, 0);
  EXPECT_EQ(r.error, ErrorCode::invalid_record) << r.message;
}

TEST(BatchValidation, LastOffsetDeltaMustMatchCount) {
  auto batch = make_batch();
  p::detail::store_be<int32_t>(batch.data() + bf::kLastOffsetDeltaOffset, 7);
  p::update_crc(batch);
  EXPECT_EQ(prepare_batch(batch, default_topic(), 9, 0).error, ErrorCode::invalid_record);
}

TEST(BatchValidation, EmptyRecordSetIsInvalidRecord) {
  std::vector<uint8_t> none;
  auto r = prepare_batch(none, default_topic(), 9, 0);
  EXPECT_EQ(r.error, ErrorCode::invalid_record);
  EXPECT_EQ(r.message, "empty record set");
}

TEST(BatchValidation, ProducerIdWithoutSequenceIsInvalidRecord) {
  static const std::string k = "k";
  p::RecordBatchBuilder b;
  b.set_producer(7, 0, -1);
  b.add(1, bytes(k), bytes(k));
  auto batch = b.build();
  auto r = prepare_batch(batch, default_topic(), 9, 0);
  EXPECT_EQ(r.error, ErrorCode::invalid_record);
  EXPECT_EQ(r.message, "idempotent batch with a negative base sequence");
  p::RecordBatchBuilder ok;
  ok.set_producer(7, 0, 0);
  ok.add(1, bytes(k), bytes(k));
  auto good = ok.build();
  EXPECT_EQ(prepare_batch(good, default_topic(), 9, 0).error, ErrorCode::none);
}

// Control batches come only from the coordinator; a transactional batch passes validation (Produce
// then checks it against the producer's transaction).
TEST(BatchValidation, ControlBatchesAreRejectedTransactionalOnesPass) {
  static const std::string k = "k";
  p::RecordBatchBuilder c;
  c.set_control(true);
  c.add(1, bytes(k), bytes(k));
  auto control = c.build();
  EXPECT_EQ(prepare_batch(control, default_topic(), 9, 0).error, ErrorCode::invalid_record);
  p::RecordBatchBuilder t;
  t.set_transactional(true).set_producer(1, 0, 0);
  t.add(1, bytes(k), bytes(k));
  auto txn = t.build();
  EXPECT_EQ(prepare_batch(txn, default_topic(), 9, 0).error, ErrorCode::none);
}

TEST(BatchValidation, RecompressesToTheTopicCodecKeepingRecords) {
  auto batch = make_batch(codec::Compression::none, 50);
  TopicConfig t;
  t.compression = StoredCompression::gzip;
  auto r = prepare_batch(batch, t, 9, 0);
  ASSERT_EQ(r.error, ErrorCode::none) << r.message;
  ASSERT_FALSE(r.owned.empty());
  p::RecordBatchView view(r.batch);
  EXPECT_EQ(view.validate(), p::BatchCheck::ok);
  EXPECT_EQ(view.compression(), codec::Compression::gzip);
  EXPECT_EQ(view.record_count(), 50);
  auto reader = p::RecordReader::open(view);
  ASSERT_TRUE(reader.ok());
  p::Record rec;
  int n = 0;
  while (*reader->next(rec)) {
    EXPECT_EQ(rec.offset_delta, n++);
    ASSERT_TRUE(rec.value.has_value());
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(rec.value->data()), rec.value->size()),
              "value");
  }
  EXPECT_EQ(n, 50);
}

TEST(BatchValidation, LogAppendTimeStampsTheBatchWithAFreshCrc) {
  auto batch = make_batch();
  TopicConfig t;
  t.log_append_time = true;
  auto r = prepare_batch(batch, t, 9, 123456);
  ASSERT_EQ(r.error, ErrorCode::none);
  EXPECT_EQ(r.log_append_time, 123456);
  p::RecordBatchView view(r.batch);
  EXPECT_EQ(view.validate(), p::BatchCheck::ok);
  EXPECT_EQ(view.timestamp_type(), p::TimestampType::log_append_time);
  EXPECT_EQ(view.max_timestamp(), 123456);
}

}  // namespace
}  // namespace strata::broker
