// RecordBatchBuilder: accumulates records and produces one valid RecordBatch v2 (correct
// lastOffsetDelta, base/max timestamp, record count, attributes and CRC-32C), compressed with the
// chosen codec. Used by the broker (recompression, PK-table output batches), tools and tests.
//
// Records are encoded into an internal buffer as they are added (no per-record allocation beyond
// amortised buffer growth); offset deltas are 0, 1, 2, ... in add() order and the base timestamp
// is the first record's timestamp. Owned by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "protocol/codec/compression.h"
#include "protocol/record/batch_format.h"
#include "protocol/record/record.h"
#include "protocol/record/record_batch.h"

namespace strata::protocol {

class RecordBatchBuilder {
 public:
  explicit RecordBatchBuilder(codec::Compression compression = codec::Compression::none)
      : compression_(compression) {}

  RecordBatchBuilder& set_compression(codec::Compression c) {
    compression_ = c;
    return *this;
  }
  RecordBatchBuilder& set_base_offset(int64_t base_offset) {
    base_offset_ = base_offset;
    return *this;
  }
  RecordBatchBuilder& set_producer(int64_t producer_id, int16_t producer_epoch,
                                   int32_t base_sequence) {
    producer_id_ = producer_id;
    producer_epoch_ = producer_epoch;
    base_sequence_ = base_sequence;
    return *this;
  }
  RecordBatchBuilder& set_partition_leader_epoch(int32_t epoch) {
    partition_leader_epoch_ = epoch;
    return *this;
  }
  RecordBatchBuilder& set_timestamp_type(TimestampType t) {
    timestamp_type_ = t;
    return *this;
  }
  RecordBatchBuilder& set_transactional(bool on) {
    transactional_ = on;
    return *this;
  }
  RecordBatchBuilder& set_control(bool on) {
    control_ = on;
    return *this;
  }

  // Appends a record with the next offset delta. nullopt key/value encode as null (-1 length).
  void add(int64_t timestamp, std::optional<std::span<const uint8_t>> key,
           std::optional<std::span<const uint8_t>> value, std::span<const Header> headers = {});

  int32_t record_count() const { return count_; }
  // Uncompressed size of the records added so far.
  size_t records_size() const { return records_.size(); }
  // Size of the batch build() would return without compression.
  size_t uncompressed_batch_size() const { return batch_format::kHeaderSize + records_.size(); }

  // Produces the batch. With no records: recordCount 0, lastOffsetDelta -1, timestamps -1.
  // Should the codec library fail (it does not for valid input), the batch is written
  // uncompressed instead, so the result is always a valid batch.
  std::vector<uint8_t> build() const;
  // As build(), appending the batch to `out` (lets callers reuse one buffer).
  void build_into(std::vector<uint8_t>& out) const;

  // Drops the records; keeps the settings and the buffer's capacity.
  void clear_records();

 private:
  codec::Compression compression_;
  int64_t base_offset_ = 0;
  int64_t producer_id_ = batch_format::kNoProducerId;
  int16_t producer_epoch_ = batch_format::kNoProducerEpoch;
  int32_t base_sequence_ = batch_format::kNoSequence;
  int32_t partition_leader_epoch_ = batch_format::kNoPartitionLeaderEpoch;
  TimestampType timestamp_type_ = TimestampType::create_time;
  bool transactional_ = false;
  bool control_ = false;

  std::vector<uint8_t> records_;
  int32_t count_ = 0;
  int64_t base_timestamp_ = batch_format::kNoTimestamp;
  int64_t max_timestamp_ = batch_format::kNoTimestamp;
};

}  // namespace strata::protocol
