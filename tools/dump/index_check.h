// Index checks for strata-dump: parses a segment's `.index` (8-byte BE entries: int32 offset
// relative to the segment base, int32 .log position) and `.timeindex` (12-byte BE entries: int64
// timestamp, int32 relative offset) — formats in storage/offset_index.h and storage/time_index.h —
// checks them on their own (whole entries, monotonic columns, non-negative relative offsets) and,
// given the batches of the `.log`, against it: an offset entry must name a batch start and that
// batch's last offset; a time entry must name a batch's last offset and the largest max timestamp
// of the batches up to it.
//
// Owned by strata-dump (tools/dump). Pure functions; any thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tools/dump/segment_scan.h"

namespace strata::dump {

struct OffsetIndexEntry {
  int64_t offset;  // absolute
  uint32_t position;
};
struct TimeIndexEntry {
  int64_t timestamp;
  int64_t offset;  // absolute
};

// Parses and self-checks. Problems have kind `index` and positions in the index file.
std::vector<OffsetIndexEntry> parse_offset_index(std::span<const uint8_t> bytes, int64_t base,
                                                 std::vector<Problem>& problems);
std::vector<TimeIndexEntry> parse_time_index(std::span<const uint8_t> bytes, int64_t base,
                                             std::vector<Problem>& problems);

// Streaming verification against the .log: feed every batch scan_segment reports, in file order
// (invalid ones included), then finish(). Memory is proportional to the index, not the log. The
// entries vector must outlive the verifier. Problems come out in entry order.
class OffsetIndexVerifier {
 public:
  explicit OffsetIndexVerifier(const std::vector<OffsetIndexEntry>& entries);
  void on_batch(const BatchInfo& batch);
  // `log_size`: the .log's size in bytes.
  void finish(uint64_t log_size, std::vector<Problem>& problems) const;

 private:
  const std::vector<OffsetIndexEntry>& entries_;
  std::vector<std::pair<uint64_t, size_t>> by_position_;
  std::vector<bool> matched_;
  std::vector<std::string> detail_;
};

class TimeIndexVerifier {
 public:
  explicit TimeIndexVerifier(const std::vector<TimeIndexEntry>& entries);
  void on_batch(const BatchInfo& batch);
  void finish(std::vector<Problem>& problems) const;

 private:
  const std::vector<TimeIndexEntry>& entries_;
  std::vector<std::pair<int64_t, size_t>> by_offset_;
  std::vector<bool> matched_;
  std::vector<std::string> detail_;
  int64_t running_max_ = -1;
};

// Convenience wrappers over the verifiers for batches already collected.
void verify_offset_index(const std::vector<OffsetIndexEntry>& entries,
                         const std::vector<BatchInfo>& batches, uint64_t log_size,
                         std::vector<Problem>& problems);
void verify_time_index(const std::vector<TimeIndexEntry>& entries,
                       const std::vector<BatchInfo>& batches, std::vector<Problem>& problems);

}  // namespace strata::dump
