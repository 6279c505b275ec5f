// LeaderEpochCache: the partition's (leader epoch -> start offset) history, persisted in Kafka's
// `leader-epoch-checkpoint` text format ("0\n<count>\n<epoch> <start_offset>\n...") with an atomic
// replace. Answers epoch_for_offset and Kafka's OffsetsForLeaderEpoch end-offset rule.
//
// Owned by PartitionLog. Not internally synchronised: PartitionLog mutates it under its append lock
// with the state lock held exclusively and reads it under the state lock held shared.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "protocol/base/result.h"
#include "storage/env.h"

namespace strata::storage {

class LeaderEpochCache {
 public:
  struct Entry {
    int32_t epoch;
    int64_t start_offset;
  };

  // Loads the checkpoint at `path` (missing file = empty history).
  static Result<LeaderEpochCache> load(Env* env, std::string path);

  // Records that `epoch` starts at `start_offset`: drops entries whose epoch >= epoch or whose
  // start offset >= start_offset, appends the new one and rewrites the checkpoint.
  Status assign(int32_t epoch, int64_t start_offset);
  // Drops entries starting at or beyond `end_offset` (after the log was truncated there), and
  // rewrites the checkpoint if anything changed.
  Status truncate_from_end(int64_t end_offset);

  // Largest epoch recorded; -1 when empty.
  int32_t latest_epoch() const { return entries_.empty() ? -1 : entries_.back().epoch; }
  // The epoch whose range holds `offset`; nullopt when before every entry.
  std::optional<int32_t> epoch_for_offset(int64_t offset) const;
  // Kafka's endOffsetFor: {epoch, end offset}, {-1, -1} when unknown.
  std::pair<int32_t, int64_t> end_offset_for_epoch(int32_t epoch, int64_t log_end_offset) const;
  const std::vector<Entry>& entries() const { return entries_; }

 private:
  Status write() const;

  Env* env_ = nullptr;
  std::string path_;
  std::vector<Entry> entries_;
};

}  // namespace strata::storage
