// Rewriting one batch with a subset of its records (see batch_filter.h).
#include "storage/cleaner/batch_filter.h"

#include <algorithm>

#include "protocol/codec/compression.h"
#include "protocol/record/batch_format.h"
#include "protocol/record/byte_order.h"
#include "protocol/record/varint.h"

namespace strata::storage::cleaner {
namespace bf = protocol::batch_format;
namespace pd = protocol::detail;

void BatchFilter::begin(const protocol::RecordBatchView& source) {
  source_ = source;
  kept_records_.clear();
  bodies_.clear();
  kept_ = 0;
}

void BatchFilter::keep(const protocol::Record& r, int64_t timestamp) {
  const size_t at = bodies_.size();
  const int32_t key_len = r.key ? static_cast<int32_t>(r.key->size()) : -1;
  const int32_t value_len = r.value ? static_cast<int32_t>(r.value->size()) : -1;
  const size_t need = 3 * pd::kMaxVarintBytes + (r.key ? r.key->size() : 0) +
                      (r.value ? r.value->size() : 0) + r.headers_raw.size();
  bodies_.resize(at + need);
  uint8_t* p = bodies_.data() + at;
  p = pd::write_varint(p, key_len);
  if (r.key) p = std::copy(r.key->begin(), r.key->end(), p);
  p = pd::write_varint(p, value_len);
  if (r.value) p = std::copy(r.value->begin(), r.value->end(), p);
  p = pd::write_varint(p, r.header_count);
  p = std::copy(r.headers_raw.begin(), r.headers_raw.end(), p);
  const size_t len = static_cast<size_t>(p - (bodies_.data() + at));
  bodies_.resize(at + len);
  kept_records_.push_back(Kept{at, len, r.attributes, r.offset_delta, timestamp});
  ++kept_;
}

Status BatchFilter::finish(std::optional<int64_t> delete_horizon_ms, std::vector<uint8_t>& out) {
  const auto src = source_.bytes();
  const size_t start = out.size();
  out.insert(out.end(), src.begin(), src.begin() + bf::kHeaderSize);
  uint8_t* h = out.data() + start;
  int16_t attrs = source_.attributes();
  const bool log_append_time = (attrs & bf::kTimestampTypeBit) != 0;

  if (kept_records_.empty()) {
    // Header-only batch: recordCount 0, no payload, uncompressed; offsets and producer fields kept.
    attrs = static_cast<int16_t>(attrs & ~bf::kCompressionMask);
    pd::store_be<int16_t>(h + bf::kAttributesOffset, attrs);
    pd::store_be<int32_t>(h + bf::kRecordCountOffset, 0);
    pd::store_be<int32_t>(h + bf::kBatchLengthOffset,
                          static_cast<int32_t>(bf::kHeaderSize - bf::kLogOverhead));
    protocol::update_crc(std::span<uint8_t>(out.data() + start, bf::kHeaderSize));
    return Status::Ok();
  }

  int64_t max_ts = bf::kNoTimestamp;
  for (const auto& k : kept_records_) max_ts = std::max(max_ts, k.timestamp);
  int64_t base_ts = kept_records_.front().timestamp;
  if (delete_horizon_ms) {
    base_ts = *delete_horizon_ms;
    attrs = static_cast<int16_t>(attrs | bf::kDeleteHorizonBit);
  } else if (source_.has_delete_horizon()) {
    base_ts = source_.base_timestamp();  // keeps carrying the horizon
  }
  if (log_append_time) max_ts = source_.max_timestamp();

  records_.clear();
  for (const auto& k : kept_records_) {
    const int64_t ts_delta = k.timestamp - base_ts;
    const size_t body = 1 + pd::varlong_size(ts_delta) + pd::varint_size(k.offset_delta) + k.len;
    const size_t at = records_.size();
    records_.resize(at + pd::kMaxVarintBytes + body);
    uint8_t* p = records_.data() + at;
    p = pd::write_varint(p, static_cast<int32_t>(body));
    *p++ = static_cast<uint8_t>(k.attributes);
    p = pd::write_varlong(p, ts_delta);
    p = pd::write_varint(p, k.offset_delta);
    p = std::copy(bodies_.begin() + static_cast<std::ptrdiff_t>(k.at),
                  bodies_.begin() + static_cast<std::ptrdiff_t>(k.at + k.len), p);
    records_.resize(static_cast<size_t>(p - records_.data()));
  }
  STRATA_RETURN_IF_ERROR(codec::compress(source_.compression(), records_, out));
  h = out.data() + start;  // `out` may have grown
  pd::store_be<int16_t>(h + bf::kAttributesOffset, attrs);
  pd::store_be<int64_t>(h + bf::kBaseTimestampOffset, base_ts);
  pd::store_be<int64_t>(h + bf::kMaxTimestampOffset, max_ts);
  pd::store_be<int32_t>(h + bf::kRecordCountOffset, kept_);
  pd::store_be<int32_t>(h + bf::kBatchLengthOffset,
                        static_cast<int32_t>(out.size() - start - bf::kLogOverhead));
  protocol::update_crc(std::span<uint8_t>(out.data() + start, out.size() - start));
  return Status::Ok();
}

}  // namespace strata::storage::cleaner
