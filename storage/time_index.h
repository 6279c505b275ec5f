// TimeIndex: a segment's sparse timestamp -> offset index, Kafka's `.timeindex` format: 12-byte
// big-endian entries (int64 timestamp, int32 offset relative to the segment base). An entry
// (ts, off) means every record at offset <= off in this segment has timestamp <= ts; entries are
// added only when the segment's max timestamp grows, so both columns increase. The offset stored is
// the last offset of the batch holding the max timestamp. The last entry after a roll or close
// carries the segment's max timestamp.
//
// Owned by its Segment; synchronisation as for OffsetIndex (PartitionLog's locks).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "protocol/base/result.h"
#include "storage/env.h"

namespace strata::storage {

class TimeIndex {
 public:
  static constexpr size_t kEntrySize = 12;
  struct Entry {
    int64_t timestamp;
    int64_t offset;  // absolute
  };

  // As OffsetIndex::open; entries must have offsets < next_offset to pass the sanity check.
  static Result<std::unique_ptr<TimeIndex>> open(Env* env, const std::string& path,
                                                 int64_t base_offset, int32_t max_index_bytes,
                                                 bool load, int64_t next_offset);

  // Appends (ts, offset) only when ts exceeds the last entry's timestamp.
  Status maybe_append(int64_t timestamp, int64_t offset);
  // The last entry with timestamp < target (strictly), if any: every record at or before its
  // offset is older than target, so a search may start after it.
  std::optional<Entry> last_before(int64_t target) const;
  std::optional<Entry> last_entry() const;
  Status truncate_to_offset(int64_t next_offset);  // drops entries with offset >= next_offset
  Status reset();

  bool full() const { return entries_.size() >= max_entries_; }
  size_t entry_count() const { return entries_.size(); }
  const std::vector<Entry>& entries() const { return entries_; }
  bool loaded_ok() const { return loaded_ok_; }
  Status sync() { return file_->sync(); }
  Status close() { return file_->close(); }

 private:
  TimeIndex(std::unique_ptr<WritableFile> file, int64_t base_offset, size_t max_entries)
      : file_(std::move(file)), base_offset_(base_offset), max_entries_(max_entries) {}

  std::unique_ptr<WritableFile> file_;
  int64_t base_offset_;
  size_t max_entries_;
  std::vector<Entry> entries_;
  bool loaded_ok_ = false;
};

}  // namespace strata::storage
