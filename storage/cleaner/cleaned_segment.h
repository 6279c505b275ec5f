// CleanedSegmentWriter: writes the cleaner's output for one segment as
// `<base>.log.cleaned`, `<base>.index.cleaned` and `<base>.timeindex.cleaned` (Kafka's names),
// applying the same sparse-index rule as Segment (an offset-index and time-index entry whenever
// more than index.interval.bytes were written since the last one, plus a final time-index entry
// with the segment's max timestamp). finish() fsyncs all three files; abandon() removes them.
// segment_swap.h then moves them into place. With the log's batch summarizer, the batches
// written also get their summaries, in `<base>.stats.cleaned` (derived data: written at finish()
// without fsync, moved in after the segment; batch_summary.h).
//
// Owned by one cleaner thread. Not synchronised.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "protocol/base/result.h"
#include "storage/batch_summary.h"
#include "storage/env.h"
#include "storage/log_config.h"
#include "storage/offset_index.h"
#include "storage/time_index.h"

namespace strata::storage::cleaner {

inline constexpr std::string_view kCleanedSuffix = ".cleaned";
inline constexpr std::string_view kSwapSuffix = ".swap";

class CleanedSegmentWriter {
 public:
  static Result<std::unique_ptr<CleanedSegmentWriter>> create(
      Env* env, const std::string& dir, int64_t base_offset, const LogConfig& config,
      std::shared_ptr<const BatchSummarizer> summarizer = nullptr);
  ~CleanedSegmentWriter();

  // One whole batch (already rewritten); header fields give its offsets and max timestamp.
  Status append(std::span<const uint8_t> batch);
  // Final time-index entry, fsync of the three files, close.
  Status finish();
  // Closes and removes the three .cleaned files (nothing was swapped).
  Status abandon();

  uint64_t size() const { return size_; }

 private:
  CleanedSegmentWriter(Env* env, std::string dir, int64_t base, int32_t interval)
      : env_(env), dir_(std::move(dir)), base_(base), index_interval_bytes_(interval) {}

  Env* env_;
  std::string dir_;
  int64_t base_;
  int32_t index_interval_bytes_;
  uint64_t size_ = 0;
  uint64_t bytes_since_last_index_ = 0;
  int64_t max_timestamp_ = -1;
  int64_t offset_of_max_timestamp_ = -1;
  bool closed_ = false;
  std::unique_ptr<WritableFile> log_;
  std::unique_ptr<OffsetIndex> offset_index_;
  std::unique_ptr<TimeIndex> time_index_;
  std::shared_ptr<const BatchSummarizer> summarizer_;
  std::string summaries_;  // encoded entries for <base>.stats.cleaned
};

}  // namespace strata::storage::cleaner
