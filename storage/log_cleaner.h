// LogCleaner: log compaction of one partition log (cleanup.policy=compact / compact,delete), after
// Kafka's LogCleaner, one pass per clean() call:
//
//  * Cleanable range: the sealed segments from the log start up to the first uncleanable offset =
//    min(active segment base, high watermark, the owner's retention_bound(), the base of the first
//    segment holding a record newer than now - min.compaction.lag.ms), at segment granularity.
//    The dirty part starts at the cleaner checkpoint (`cleaner-offset-checkpoint` in the partition
//    dir, "<offset>\n", Kafka's cleaner-offset-checkpoint per partition). The log is cleaned when
//    dirty bytes / cleanable bytes >= min.cleanable.dirty.ratio, or when a delete horizon recorded
//    by an earlier pass has passed (tombstones to drop), or when forced.
//  * An offset map (key -> latest offset) is built over the dirty part; every cleanable segment is
//    then rewritten keeping a record iff it has a key, no later offset for its key is in the map,
//    and it is not a tombstone whose batch's delete horizon (KIP-534: baseTimestamp with attribute
//    bit 6) has passed. A batch retaining tombstones and lacking a horizon gets now +
//    delete.retention.ms.
//  * Batches keep their offsets, producer id/epoch and base sequence (BatchFilter). A batch left
//    without records is dropped, unless it is the last batch of its producer id in the whole log:
//    then it stays as an empty header-only batch (Kafka keeps it so producer state survives).
//    Control batches are copied unchanged. Unchanged segments are not rewritten.
//  * Each changed segment is replaced 1:1 (same base offset) through the .cleaned -> .swap ->
//  rename
//    protocol of storage/cleaner/segment_swap.h, then swapped into the in-memory segment list under
//    the state lock; readers holding the old segment keep reading its (unlinked) file.
//  * Reads and writes go through the Throttler (log.cleaner.io.max.bytes.per.second).
//
// Not done (Kafka does): grouping several small cleaned segments into one; a bounded dedupe buffer
// (log.cleaner.dedupe.buffer.size) — the offset map holds every distinct key of the dirty part.
//
// Thread-safety: one LogCleaner may serve several threads; passes over the same log are serialised
// by PartitionLog::maintenance_mu_ (also taken by Retention). Never holds the append lock while
// doing I/O, so producers are not blocked by a pass.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "protocol/base/result.h"
#include "storage/cleaner/throttler.h"
#include "storage/file_names.h"  // kCleanerCheckpointFile
#include "storage/partition_log.h"

namespace strata::storage {

struct CleanerPolicy {
  double min_cleanable_ratio = 0.5;        // min.cleanable.dirty.ratio
  int64_t min_compaction_lag_ms = 0;       // min.compaction.lag.ms
  int64_t delete_retention_ms = 86400000;  // delete.retention.ms
};

struct CleanableRange {
  int64_t first_dirty = 0;
  int64_t first_uncleanable = 0;
  int64_t clean_bytes = 0;
  int64_t dirty_bytes = 0;
  double dirty_ratio() const {
    const int64_t total = clean_bytes + dirty_bytes;
    return total == 0 ? 0.0 : static_cast<double>(dirty_bytes) / static_cast<double>(total);
  }
};

struct CleanOutcome {
  bool cleaned = false;  // false: nothing due (ratio below the minimum, nothing cleanable)
  CleanableRange range;
  int segments_rewritten = 0;
  int64_t bytes_before = 0;  // of the cleanable segments
  int64_t bytes_after = 0;
  int64_t records_removed = 0;
  int64_t tombstones_removed = 0;
  int64_t empty_batches_kept = 0;
  std::optional<int64_t> next_delete_horizon;  // earliest horizon of a retained tombstone
};

class LogCleaner {
 public:
  // `throttler` may be null (unthrottled); it must outlive the cleaner.
  explicit LogCleaner(cleaner::Throttler* throttler = nullptr) : throttler_(throttler) {}

  // What a pass would clean now (no I/O besides reading the checkpoint).
  static Result<CleanableRange> cleanable_range(PartitionLog& log, const CleanerPolicy& policy,
                                                int64_t now_ms);

  // One cleaning pass if due (or `force`).
  Result<CleanOutcome> clean(PartitionLog& log, const CleanerPolicy& policy, int64_t now_ms,
                             bool force = false);

 private:
  static Result<CleanableRange> range_locked(PartitionLog& log, const CleanerPolicy& policy,
                                             int64_t now_ms);
  void account(uint64_t bytes) {
    if (throttler_ != nullptr) throttler_->maybe_throttle(bytes);
  }

  cleaner::Throttler* throttler_;
  std::mutex mu_;
  std::map<std::string, int64_t> pending_horizon_;  // log dir -> earliest retained horizon
};

}  // namespace strata::storage
