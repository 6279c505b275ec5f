// OffsetIndex: a segment's sparse offset -> file position index, Kafka's `.index` format:
// 8-byte big-endian entries (int32 offset relative to the segment base, int32 position in the
// .log), strictly increasing in both. An entry maps a batch's LAST offset to the position where
// that batch starts; one entry is added per `index.interval.bytes` appended. Entries are also kept
// in memory.
//
// Owned by its Segment. Not internally synchronised: PartitionLog serialises mutations with its
// append lock and excludes concurrent readers with its state lock.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "protocol/base/result.h"
#include "storage/env.h"

namespace strata::storage {

class OffsetIndex {
 public:
  static constexpr size_t kEntrySize = 8;
  struct Entry {
    int64_t offset;     // absolute
    uint32_t position;  // byte position of the batch in the .log
  };

  // Opens (creating if missing) the index file. If `load` the existing entries are read and
  // sanity-checked (entry size, monotonic, positions < log_size); a failed check or load=false
  // empties the file, and the caller rebuilds it.
  static Result<std::unique_ptr<OffsetIndex>> open(Env* env, const std::string& path,
                                                   int64_t base_offset, int32_t max_index_bytes,
                                                   bool load, uint64_t log_size);

  Status append(int64_t offset, uint32_t position);
  // Largest entry with offset <= target; {base_offset, 0} if none.
  Entry lookup(int64_t target) const;
  // Drops entries whose position >= log_position (after a log truncation).
  Status truncate_to_position(uint64_t log_position);
  Status reset();

  bool full() const { return entries_.size() >= max_entries_; }
  size_t entry_count() const { return entries_.size(); }
  const std::vector<Entry>& entries() const { return entries_; }
  bool loaded_ok() const { return loaded_ok_; }
  Status sync() { return file_->sync(); }
  Status close() { return file_->close(); }

 private:
  OffsetIndex(std::unique_ptr<WritableFile> file, int64_t base_offset, size_t max_entries)
      : file_(std::move(file)), base_offset_(base_offset), max_entries_(max_entries) {}

  std::unique_ptr<WritableFile> file_;
  int64_t base_offset_;
  size_t max_entries_;
  std::vector<Entry> entries_;
  bool loaded_ok_ = false;
};

}  // namespace strata::storage
