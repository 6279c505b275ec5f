// RecordBatchBuilder (see batch_builder.h).
#include "protocol/record/batch_builder.h"

#include <cstring>

#include "protocol/record/byte_order.h"
#include "protocol/record/varint.h"

namespace strata::protocol {

namespace bf = batch_format;
using detail::store_be;
using detail::varint_size;
using detail::varlong_size;
using detail::write_varint;
using detail::write_varlong;

namespace {

size_t nullable_bytes_size(const std::optional<std::span<const uint8_t>>& b) {
  return b ? varint_size(static_cast<int32_t>(b->size())) + b->size() : varint_size(-1);
}

uint8_t* write_nullable_bytes(uint8_t* p, const std::optional<std::span<const uint8_t>>& b) {
  if (!b) return write_varint(p, -1);
  p = write_varint(p, static_cast<int32_t>(b->size()));
  if (!b->empty()) std::memcpy(p, b->data(), b->size());
  return p + b->size();
}

}  // namespace

void RecordBatchBuilder::add(int64_t timestamp, std::optional<std::span<const uint8_t>> key,
                             std::optional<std::span<const uint8_t>> value,
                             std::span<const Header> headers) {
  if (count_ == 0) {
    base_timestamp_ = timestamp;
    max_timestamp_ = timestamp;
  } else if (timestamp > max_timestamp_) {
    max_timestamp_ = timestamp;
  }
  const int64_t ts_delta = timestamp - base_timestamp_;
  const int32_t offset_delta = count_;

  size_t body = 1 + varlong_size(ts_delta) + varint_size(offset_delta) + nullable_bytes_size(key) +
                nullable_bytes_size(value) + varint_size(static_cast<int32_t>(headers.size()));
  for (const Header& h : headers) {
    body += varint_size(static_cast<int32_t>(h.key.size())) + h.key.size() +
            nullable_bytes_size(h.value);
  }
  const int32_t body32 = static_cast<int32_t>(body);

  size_t at = records_.size();
  records_.resize(at + varint_size(body32) + body);
  uint8_t* p = records_.data() + at;
  p = write_varint(p, body32);
  *p++ = 0;  // record attributes: unused
  p = write_varlong(p, ts_delta);
  p = write_varint(p, offset_delta);
  p = write_nullable_bytes(p, key);
  p = write_nullable_bytes(p, value);
  p = write_varint(p, static_cast<int32_t>(headers.size()));
  for (const Header& h : headers) {
    p = write_varint(p, static_cast<int32_t>(h.key.size()));
    if (!h.key.empty()) std::memcpy(p, h.key.data(), h.key.size());
    p += h.key.size();
    p = write_nullable_bytes(p, h.value);
  }
  ++count_;
}

std::vector<uint8_t> RecordBatchBuilder::build() const {
  std::vector<uint8_t> out;
  build_into(out);
  return out;
}

void RecordBatchBuilder::build_into(std::vector<uint8_t>& out) const {
  const size_t start = out.size();
  out.resize(start + bf::kHeaderSize);
  codec::Compression used = compression_;
  if (used == codec::Compression::none || !codec::compress(used, records_, out).ok()) {
    used = codec::Compression::none;
    out.resize(start + bf::kHeaderSize);
    out.insert(out.end(), records_.begin(), records_.end());
  }

  int16_t attrs = static_cast<int16_t>(static_cast<int16_t>(used) & bf::kCompressionMask);
  if (timestamp_type_ == TimestampType::log_append_time) attrs |= bf::kTimestampTypeBit;
  if (transactional_) attrs |= bf::kTransactionalBit;
  if (control_) attrs |= bf::kControlBit;

  uint8_t* h = out.data() + start;
  const size_t total = out.size() - start;
  store_be<int64_t>(h + bf::kBaseOffsetOffset, base_offset_);
  store_be<int32_t>(h + bf::kBatchLengthOffset, static_cast<int32_t>(total - bf::kLogOverhead));
  store_be<int32_t>(h + bf::kPartitionLeaderEpochOffset, partition_leader_epoch_);
  h[bf::kMagicOffset] = static_cast<uint8_t>(bf::kMagicV2);
  store_be<int16_t>(h + bf::kAttributesOffset, attrs);
  store_be<int32_t>(h + bf::kLastOffsetDeltaOffset, count_ - 1);
  store_be<int64_t>(h + bf::kBaseTimestampOffset, base_timestamp_);
  store_be<int64_t>(h + bf::kMaxTimestampOffset, max_timestamp_);
  store_be<int64_t>(h + bf::kProducerIdOffset, producer_id_);
  store_be<int16_t>(h + bf::kProducerEpochOffset, producer_epoch_);
  store_be<int32_t>(h + bf::kBaseSequenceOffset, base_sequence_);
  store_be<int32_t>(h + bf::kRecordCountOffset, count_);
  update_crc(std::span<uint8_t>(h, total));
}

void RecordBatchBuilder::clear_records() {
  records_.clear();
  count_ = 0;
  base_timestamp_ = bf::kNoTimestamp;
  max_timestamp_ = bf::kNoTimestamp;
}

}  // namespace strata::protocol
