// Segment deletion by time, size and log start offset (see retention.h).
#include "storage/retention.h"

#include <algorithm>

namespace strata::storage {

Result<RetentionOutcome> Retention::enforce(PartitionLog& log, const RetentionPolicy& policy,
                                            int64_t now_ms) {
  std::lock_guard<std::mutex> maintenance(log.maintenance_mu_);
  RetentionOutcome out;
  std::vector<std::shared_ptr<Segment>> doomed;
  {
    std::lock_guard<std::mutex> lock(log.append_mu_);
    if (log.deleted_ || log.closed_ || log.failed_) {
      out.log_start_offset = log.log_start_offset();
      return out;
    }
    const int64_t leo = log.log_end_offset();
    const int64_t upper = std::min(log.high_watermark(), log.retention_bound());
    const int64_t start = log.log_start_offset();
    int64_t total = 0;
    for (const auto& s : log.segments_) total += static_cast<int64_t>(s->size());
    int64_t size_excess =
        policy.delete_enabled && policy.retention_bytes >= 0 ? total - policy.retention_bytes : -1;
    const size_t n = log.segments_.size();
    size_t count = 0;
    for (size_t i = 0; i < n; ++i) {
      const Segment& s = *log.segments_[i];
      const int64_t end = i + 1 < n ? log.segments_[i + 1]->base_offset() : leo;
      if (end > upper) break;
      const bool below_start = end <= start;
      const bool expired =
          policy.delete_enabled && policy.retention_ms >= 0 &&
          ((s.max_timestamp() >= 0 && now_ms - s.max_timestamp() > policy.retention_ms) ||
           (s.empty() && i + 1 < n));
      const bool too_big = size_excess >= 0 && size_excess - static_cast<int64_t>(s.size()) >= 0;
      if (!below_start && !expired && !too_big) break;
      if (too_big) size_excess -= static_cast<int64_t>(s.size());
      ++count;
    }
    if (count == n) {
      // Kafka: everything expired, active segment included. Roll so an active segment remains.
      if (log.segments_.back()->empty()) {
        --count;
      } else {
        STRATA_RETURN_IF_ERROR(log.roll(leo));  // roll() decides whether the log goes offline
        out.rolled_active = true;
      }
    }
    if (count > 0) {
      std::unique_lock<std::shared_mutex> state(log.state_mu_);
      doomed.assign(log.segments_.begin(), log.segments_.begin() + static_cast<ptrdiff_t>(count));
      log.segments_.erase(log.segments_.begin(),
                          log.segments_.begin() + static_cast<ptrdiff_t>(count));
      const int64_t new_start = std::max(start, log.segments_.front()->base_offset());
      log.log_start_offset_.store(new_start, std::memory_order_release);
    }
  }
  // Readers holding a removed segment keep its open file; the names go away now.
  for (const auto& s : doomed) {
    out.deleted_bytes += static_cast<int64_t>(s->size());
    STRATA_RETURN_IF_ERROR(s->remove_files());
    ++out.deleted_segments;
  }
  out.log_start_offset = log.log_start_offset();
  return out;
}

}  // namespace strata::storage
