#include "tools/dump/segment_scan.h"

#include <algorithm>
#include <limits>

#include "protocol/record/batch_format.h"
#include "protocol/record/record_batch.h"

namespace strata::dump {
namespace bf = protocol::batch_format;

bool BatchInfo::valid() const {
  return magic == bf::kMagicV2 && crc_ok() && record_count >= 0 && last_offset_delta >= -1 &&
         static_cast<int64_t>(record_count) <= static_cast<int64_t>(last_offset_delta) + 1;
}

const char* problem_kind_name(ProblemKind k) {
  switch (k) {
    case ProblemKind::crc_mismatch:
      return "crc_mismatch";
    case ProblemKind::bad_magic:
      return "bad_magic";
    case ProblemKind::bad_record_count:
      return "bad_record_count";
    case ProblemKind::bad_length:
      return "bad_length";
    case ProblemKind::truncated:
      return "truncated";
    case ProblemKind::offset_order:
      return "offset_order";
    case ProblemKind::offset_out_of_range:
      return "offset_out_of_range";
    case ProblemKind::bad_records:
      return "bad_records";
    case ProblemKind::index:
      return "index";
  }
  return "unknown";
}

namespace {

std::string hex32(uint32_t v) {
  static const char* d = "0123456789abcdef";
  std::string s = "0x00000000";
  for (int i = 0; i < 8; ++i) s[9 - i] = d[(v >> (4 * i)) & 0xF];
  return s;
}

BatchInfo info_from(const protocol::RecordBatchView& v, uint64_t position) {
  BatchInfo b;
  b.position = position;
  b.size = v.size_bytes();
  b.base_offset = v.base_offset();
  b.last_offset_delta = v.last_offset_delta();
  b.record_count = v.record_count();
  b.partition_leader_epoch = v.partition_leader_epoch();
  b.magic = v.magic();
  b.crc_stored = v.crc();
  b.crc_computed = v.compute_crc();
  b.attributes = v.attributes();
  b.base_timestamp = v.base_timestamp();
  b.max_timestamp = v.max_timestamp();
  b.producer_id = v.producer_id();
  b.producer_epoch = v.producer_epoch();
  b.base_sequence = v.base_sequence();
  return b;
}

int32_t be32_at(const uint8_t* p) {
  return static_cast<int32_t>((uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) |
                              (uint32_t{p[2]} << 8) | uint32_t{p[3]});
}

constexpr int64_t kMinBatchLength = static_cast<int64_t>(bf::kHeaderSize - bf::kLogOverhead);
// Resynchronisation ignores candidates claiming more than this (no broker writes such batches).
constexpr int64_t kMaxResyncBatch = int64_t{128} << 20;

// The first position >= from where a whole, valid batch starts (plausible length, magic 2,
// CRC-32C matches), or file_size when there is none. Reads the file in windows; only candidates
// with magic 2 and a length that fits are read whole and CRC-checked.
Result<uint64_t> resync(const ByteSource& source, uint64_t from, std::vector<uint8_t>& batch) {
  constexpr uint64_t kWindow = 1u << 20;
  const uint64_t file_size = source.size();
  std::vector<uint8_t> window;
  for (uint64_t start = from; start + bf::kHeaderSize <= file_size; start += kWindow) {
    uint64_t len = std::min<uint64_t>(kWindow + bf::kHeaderSize, file_size - start);
    window.resize(len);
    STRATA_RETURN_IF_ERROR(source.read(start, window));
    for (uint64_t i = 0; i < kWindow && i + bf::kHeaderSize <= len; ++i) {
      const uint8_t* h = window.data() + i;
      if (static_cast<int8_t>(h[bf::kMagicOffset]) != bf::kMagicV2) continue;
      int64_t length = be32_at(h + bf::kBatchLengthOffset);
      uint64_t pos = start + i;
      if (length < kMinBatchLength || length > kMaxResyncBatch ||
          static_cast<uint64_t>(length) + bf::kLogOverhead > file_size - pos) {
        continue;
      }
      // Cheap header checks before reading and hashing a candidate: unused attribute bits clear,
      // a known codec, a non-negative base offset and record count <= lastOffsetDelta + 1.
      if (h[bf::kAttributesOffset] != 0 || (h[bf::kAttributesOffset + 1] & 0x80) != 0 ||
          (h[bf::kAttributesOffset + 1] & bf::kCompressionMask) > 4 || (h[0] & 0x80) != 0) {
        continue;
      }
      int64_t count = be32_at(h + bf::kRecordCountOffset);
      int64_t delta = be32_at(h + bf::kLastOffsetDeltaOffset);
      if (count < 0 || delta < -1 || count > delta + 1) continue;
      batch.resize(static_cast<size_t>(length) + bf::kLogOverhead);
      STRATA_RETURN_IF_ERROR(source.read(pos, batch));
      if (protocol::RecordBatchView(batch).validate() == protocol::BatchCheck::ok) return pos;
    }
  }
  return file_size;
}

// True when `at` is the end of the file or a plausible batch header starts there: magic 2 and a
// batchLength between the header size and kMaxResyncBatch.
Result<bool> plausible_header_at(const ByteSource& source, uint64_t at) {
  const uint64_t file_size = source.size();
  if (at == file_size) return true;
  if (at > file_size || file_size - at < bf::kMagicOffset + 1) return false;
  uint8_t h[bf::kMagicOffset + 1];
  STRATA_RETURN_IF_ERROR(source.read(at, std::span<uint8_t>(h, sizeof h)));
  const int64_t length = be32_at(h + bf::kBatchLengthOffset);
  // The length need not fit: a torn last batch is reported as truncated by the next round.
  return static_cast<int8_t>(h[bf::kMagicOffset]) == bf::kMagicV2 && length >= kMinBatchLength &&
         length <= kMaxResyncBatch;
}

}  // namespace

Result<ScanSummary> scan_segment(const ByteSource& source, const ScanOptions& options,
                                 SegmentVisitor& visitor) {
  ScanSummary sum;
  sum.file_size = source.size();
  const uint64_t file_size = sum.file_size;
  auto report = [&](Problem p) {
    ++sum.problems;
    visitor.on_problem(p);
  };

  std::vector<uint8_t> buf;
  uint8_t header[bf::kHeaderSize];
  uint64_t pos = 0;
  int64_t next_expected = -1;  // offset after the last valid batch
  while (pos < file_size) {
    uint64_t remaining = file_size - pos;
    if (remaining < bf::kLogOverhead) {
      report({ProblemKind::truncated, pos, file_size, -1,
              std::to_string(remaining) + " trailing bytes, too few for a batch header"});
      break;
    }
    size_t head = static_cast<size_t>(std::min<uint64_t>(remaining, bf::kHeaderSize));
    STRATA_RETURN_IF_ERROR(source.read(pos, std::span<uint8_t>(header, head)));
    int64_t base = 0;
    for (int i = 0; i < 8; ++i) base = (base << 8) | header[i];
    int32_t batch_length =
        static_cast<int32_t>((uint32_t{header[8]} << 24) | (uint32_t{header[9]} << 16) |
                             (uint32_t{header[10]} << 8) | uint32_t{header[11]});
    if (batch_length < kMinBatchLength) {
      auto next = resync(source, pos + 1, buf);
      if (!next.ok()) return next.status();
      std::string what = "batchLength " + std::to_string(batch_length) + " is below the " +
                         std::to_string(kMinBatchLength) + "-byte minimum; ";
      if (*next < file_size) {
        report({ProblemKind::bad_length, pos, *next, base,
                what + std::to_string(*next - pos) + " bytes skipped to the next valid batch at " +
                    std::to_string(*next)});
        pos = *next;
        continue;
      }
      report({ProblemKind::bad_length, pos, file_size, base,
              what + "no valid batch follows in the remaining " + std::to_string(remaining) +
                  " bytes"});
      break;
    }
    uint64_t size = static_cast<uint64_t>(batch_length) + bf::kLogOverhead;
    if (size > remaining) {
      auto next = resync(source, pos + 1, buf);
      if (!next.ok()) return next.status();
      if (*next < file_size) {
        report({ProblemKind::bad_length, pos, *next, base,
                "batch at position " + std::to_string(pos) + " claims " + std::to_string(size) +
                    " bytes, past the end of the file, but a valid batch starts at " +
                    std::to_string(*next) + ": a corrupt length field; " +
                    std::to_string(*next - pos) + " bytes skipped"});
        pos = *next;
        continue;
      }
      report({ProblemKind::truncated, pos, file_size, base,
              "batch at position " + std::to_string(pos) + " claims " + std::to_string(size) +
                  " bytes but only " + std::to_string(remaining) +
                  " remain (a torn write at the tail)"});
      break;
    }
    buf.resize(size);
    STRATA_RETURN_IF_ERROR(source.read(pos, buf));
    protocol::RecordBatchView view(buf);
    BatchInfo b = info_from(view, pos);
    ++sum.batches;
    visitor.on_batch(b, buf);

    if (b.magic != bf::kMagicV2) {
      // Not a batch boundary, most likely: do not trust the length, look for the next batch.
      auto next = resync(source, pos + 1, buf);
      if (!next.ok()) return next.status();
      report({ProblemKind::bad_magic, pos, *next, b.base_offset,
              "magic " + std::to_string(b.magic) + " (expected 2); " +
                  (*next < file_size ? "next valid batch at " + std::to_string(*next)
                                     : std::string("no valid batch follows"))});
      pos = *next;
      continue;
    } else if (!b.crc_ok()) {
      // batchLength is not covered by the CRC: trust pos + size only when it is the end of the
      // file or looks like the next batch header, else the length itself may be what is corrupt
      // (and would hide intact batches behind it).
      auto plausible = plausible_header_at(source, pos + size);
      if (!plausible.ok()) return plausible.status();
      if (!*plausible) {
        auto next = resync(source, pos + 1, buf);
        if (!next.ok()) return next.status();
        report({ProblemKind::bad_length, pos, *next, b.base_offset,
                "batch at position " + std::to_string(pos) + " claims " + std::to_string(size) +
                    " bytes, fails its CRC and is not followed by a batch header: a corrupt " +
                    "length or batch; " + std::to_string(*next - pos) + " bytes skipped to " +
                    (*next < file_size ? "the next valid batch at " + std::to_string(*next)
                                       : std::string("the end of the file"))});
        pos = *next;
        continue;
      }
      report({ProblemKind::crc_mismatch, pos, pos + size, b.base_offset,
              "stored CRC " + hex32(b.crc_stored) + " != computed " + hex32(b.crc_computed) +
                  ": a byte in file range [" + std::to_string(pos + bf::kCrcCoveredOffset) + ", " +
                  std::to_string(pos + size) + ") is corrupt"});
    } else if (!b.valid()) {
      report({ProblemKind::bad_record_count, pos, pos + size, b.base_offset,
              "recordCount " + std::to_string(b.record_count) + " with lastOffsetDelta " +
                  std::to_string(b.last_offset_delta)});
    } else {
      ++sum.valid_batches;
      sum.records += static_cast<uint64_t>(b.record_count);
      if (!b.offsets_in_range()) {
        // A crafted base offset (negative, or base + lastOffsetDelta past INT64_MAX): reported,
        // and kept out of the offset bookkeeping so nothing below can overflow.
        report({ProblemKind::offset_out_of_range, pos, pos + size, b.base_offset,
                "base offset " + std::to_string(b.base_offset) + " with lastOffsetDelta " +
                    std::to_string(b.last_offset_delta) + " is outside [0, INT64_MAX)"});
        pos += size;
        continue;
      }
      if (sum.first_offset < 0) sum.first_offset = b.base_offset;
      sum.last_offset = std::max(sum.last_offset, b.last_offset());
      sum.max_timestamp = std::max(sum.max_timestamp, b.max_timestamp);
      if (next_expected >= 0 && b.base_offset < next_expected) {
        report({ProblemKind::offset_order, pos, pos + size, b.base_offset,
                "base offset " + std::to_string(b.base_offset) +
                    " is not above the previous batch's last offset " +
                    std::to_string(next_expected - 1)});
      }
      // Both are >= 0 here, so the difference cannot overflow.
      if (options.segment_base >= 0 &&
          (b.base_offset < options.segment_base ||
           b.last_offset() - options.segment_base > std::numeric_limits<int32_t>::max())) {
        report({ProblemKind::offset_out_of_range, pos, pos + size, b.base_offset,
                "offsets " + std::to_string(b.base_offset) + ".." +
                    std::to_string(b.last_offset()) + " outside the segment starting at " +
                    std::to_string(options.segment_base)});
      }
      next_expected = std::max(next_expected, b.last_offset() + 1);
    }
    pos += size;
  }
  sum.scanned_bytes = pos;
  return sum;
}

}  // namespace strata::dump
