// RecordBatchView and in-place batch edits (see record_batch.h).
#include "protocol/record/record_batch.h"

#include "protocol/record/byte_order.h"
#include "protocol/record/crc32c.h"

namespace strata::protocol {

namespace bf = batch_format;
using detail::load_be;
using detail::store_be;

std::string_view batch_check_name(BatchCheck c) {
  switch (c) {
    case BatchCheck::ok:
      return "ok";
    case BatchCheck::too_short:
      return "too_short";
    case BatchCheck::bad_length:
      return "bad_length";
    case BatchCheck::bad_magic:
      return "bad_magic";
    case BatchCheck::bad_crc:
      return "bad_crc";
    case BatchCheck::bad_record_count:
      return "bad_record_count";
  }
  return "unknown";
}

BatchCheck RecordBatchView::validate() const {
  if (bytes_.size() < bf::kHeaderSize) return BatchCheck::too_short;
  int32_t len = batch_length();
  if (len < 0 || static_cast<size_t>(len) + bf::kLogOverhead != bytes_.size()) {
    return BatchCheck::bad_length;
  }
  if (magic() != bf::kMagicV2) return BatchCheck::bad_magic;
  if (record_count() < 0) return BatchCheck::bad_record_count;
  if (compute_crc() != crc()) return BatchCheck::bad_crc;
  return BatchCheck::ok;
}

uint32_t RecordBatchView::compute_crc() const {
  return crc32c(bytes_.subspan(bf::kCrcCoveredOffset));
}

int64_t RecordBatchView::base_offset() const {
  return load_be<int64_t>(bytes_.data() + bf::kBaseOffsetOffset);
}
int32_t RecordBatchView::batch_length() const {
  return load_be<int32_t>(bytes_.data() + bf::kBatchLengthOffset);
}
int32_t RecordBatchView::partition_leader_epoch() const {
  return load_be<int32_t>(bytes_.data() + bf::kPartitionLeaderEpochOffset);
}
int8_t RecordBatchView::magic() const { return static_cast<int8_t>(bytes_[bf::kMagicOffset]); }
uint32_t RecordBatchView::crc() const { return load_be<uint32_t>(bytes_.data() + bf::kCrcOffset); }
int16_t RecordBatchView::attributes() const {
  return load_be<int16_t>(bytes_.data() + bf::kAttributesOffset);
}
int32_t RecordBatchView::last_offset_delta() const {
  return load_be<int32_t>(bytes_.data() + bf::kLastOffsetDeltaOffset);
}
int64_t RecordBatchView::base_timestamp() const {
  return load_be<int64_t>(bytes_.data() + bf::kBaseTimestampOffset);
}
int64_t RecordBatchView::max_timestamp() const {
  return load_be<int64_t>(bytes_.data() + bf::kMaxTimestampOffset);
}
int64_t RecordBatchView::producer_id() const {
  return load_be<int64_t>(bytes_.data() + bf::kProducerIdOffset);
}
int16_t RecordBatchView::producer_epoch() const {
  return load_be<int16_t>(bytes_.data() + bf::kProducerEpochOffset);
}
int32_t RecordBatchView::base_sequence() const {
  return load_be<int32_t>(bytes_.data() + bf::kBaseSequenceOffset);
}
int32_t RecordBatchView::record_count() const {
  return load_be<int32_t>(bytes_.data() + bf::kRecordCountOffset);
}

codec::Compression RecordBatchView::compression() const {
  return static_cast<codec::Compression>(attributes() & bf::kCompressionMask);
}
TimestampType RecordBatchView::timestamp_type() const {
  return (attributes() & bf::kTimestampTypeBit) ? TimestampType::log_append_time
                                                : TimestampType::create_time;
}
bool RecordBatchView::is_transactional() const { return attributes() & bf::kTransactionalBit; }
bool RecordBatchView::is_control() const { return attributes() & bf::kControlBit; }
bool RecordBatchView::has_delete_horizon() const { return attributes() & bf::kDeleteHorizonBit; }

std::span<const uint8_t> RecordBatchView::records_payload() const {
  return bytes_.subspan(bf::kRecordsOffset);
}

size_t peek_batch_size(std::span<const uint8_t> buffer) {
  if (buffer.size() < bf::kHeaderSize) return 0;
  int32_t len = load_be<int32_t>(buffer.data() + bf::kBatchLengthOffset);
  if (len < 0) return 0;
  return static_cast<size_t>(len) + bf::kLogOverhead;
}

void set_base_offset(std::span<uint8_t> batch, int64_t base_offset) {
  store_be<int64_t>(batch.data() + bf::kBaseOffsetOffset, base_offset);
}

void set_partition_leader_epoch(std::span<uint8_t> batch, int32_t epoch) {
  store_be<int32_t>(batch.data() + bf::kPartitionLeaderEpochOffset, epoch);
}

void set_log_append_time(std::span<uint8_t> batch, int64_t ts) {
  int16_t attrs = load_be<int16_t>(batch.data() + bf::kAttributesOffset);
  store_be<int16_t>(batch.data() + bf::kAttributesOffset,
                    static_cast<int16_t>(attrs | bf::kTimestampTypeBit));
  store_be<int64_t>(batch.data() + bf::kMaxTimestampOffset, ts);
  update_crc(batch);
}

void update_crc(std::span<uint8_t> batch) {
  uint32_t crc = crc32c(std::span<const uint8_t>(batch).subspan(bf::kCrcCoveredOffset));
  store_be<uint32_t>(batch.data() + bf::kCrcOffset, crc);
}

}  // namespace strata::protocol
