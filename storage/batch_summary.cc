// Batch summary side-index entries (see batch_summary.h).
#include "storage/batch_summary.h"

#include "protocol/record/batch_format.h"
#include "protocol/record/byte_order.h"
#include "protocol/record/crc32c.h"

namespace strata::storage {

namespace {
using protocol::detail::load_be;
using protocol::detail::store_be;
}  // namespace

std::string encode_batch_summary(const BatchSummary& s) {
  std::string out(kSummaryEntryHeaderSize + s.payload.size(), '\0');
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  store_be<uint32_t>(p, static_cast<uint32_t>(s.payload.size()));
  store_be<int64_t>(p + 8, s.base_offset);
  store_be<int64_t>(p + 16, s.last_offset);
  store_be<uint64_t>(p + 24, s.position);
  store_be<uint32_t>(p + 32, s.size);
  store_be<uint32_t>(p + 36, s.batch_crc);
  std::copy(s.payload.begin(), s.payload.end(), out.begin() + kSummaryEntryHeaderSize);
  store_be<uint32_t>(p + 4, protocol::crc32c({p + 8, out.size() - 8}));
  return out;
}

std::vector<BatchSummary> decode_batch_summaries(std::span<const uint8_t> bytes,
                                                 size_t* valid_bytes) {
  std::vector<BatchSummary> out;
  const size_t total = bytes.size();
  while (bytes.size() >= kSummaryEntryHeaderSize) {
    const uint8_t* p = bytes.data();
    const uint64_t len = load_be<uint32_t>(p);
    if (len > bytes.size() - kSummaryEntryHeaderSize) break;
    const size_t entry = kSummaryEntryHeaderSize + len;
    if (load_be<uint32_t>(p + 4) != protocol::crc32c(bytes.subspan(8, entry - 8))) break;
    BatchSummary& s = out.emplace_back();
    s.base_offset = load_be<int64_t>(p + 8);
    s.last_offset = load_be<int64_t>(p + 16);
    s.position = load_be<uint64_t>(p + 24);
    s.size = load_be<uint32_t>(p + 32);
    s.batch_crc = load_be<uint32_t>(p + 36);
    s.payload.assign(reinterpret_cast<const char*>(p + kSummaryEntryHeaderSize), len);
    bytes = bytes.subspan(entry);
  }
  if (valid_bytes) *valid_bytes = total - bytes.size();
  return out;
}

bool check_batch_summary(const RandomAccessFile& file, const BatchSummary& s) {
  namespace bf = protocol::batch_format;
  uint8_t h[bf::kBaseTimestampOffset];  // through lastOffsetDelta
  auto n = file.read(s.position, sizeof(h), h);
  if (!n.ok() || *n != sizeof(h)) return false;
  return load_be<int64_t>(h + bf::kBaseOffsetOffset) == s.base_offset &&
         int64_t{load_be<int32_t>(h + bf::kBatchLengthOffset)} + int64_t{bf::kLogOverhead} ==
             int64_t{s.size} &&
         load_be<uint32_t>(h + bf::kCrcOffset) == s.batch_crc &&
         s.base_offset + load_be<int32_t>(h + bf::kLastOffsetDeltaOffset) == s.last_offset;
}

}  // namespace strata::storage
