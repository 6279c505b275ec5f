#include "broker/cluster/replica_log.h"

#include <chrono>
#include <tuple>

#include "storage/partition_log.h"

namespace strata::broker::cluster {

EpochEnd log_end_offset_for_epoch(const storage::PartitionLog& log, int32_t epoch) {
  auto [e, end] = log.end_offset_for_epoch(epoch);
  if (e < 0 && epoch >= 0) {
    // PartitionLog answers {-1, -1} for an epoch above its latest: the largest epoch <= it is
    // then the latest one, which ends at the log end.
    const int32_t latest = log.latest_epoch();
    if (latest >= 0 && latest < epoch) std::tie(e, end) = log.end_offset_for_epoch(latest);
  }
  return {e, end};
}

PartitionLogReplica::PartitionLogReplica(std::shared_ptr<storage::PartitionLog> log)
    : log_(std::move(log)) {}

int64_t PartitionLogReplica::log_end() const { return log_->log_end_offset(); }

int32_t PartitionLogReplica::latest_epoch() const { return log_->latest_epoch(); }

EpochEnd PartitionLogReplica::end_offset_for_epoch(int32_t epoch) const {
  return log_end_offset_for_epoch(*log_, epoch);
}

Status PartitionLogReplica::truncate_to(int64_t offset) {
  if (offset < log_->log_start_offset()) return log_->reset_to(offset);
  return log_->truncate_to(offset);
}

Status PartitionLogReplica::reset_to(int64_t offset) { return log_->reset_to(offset); }

Status PartitionLogReplica::append(std::span<const uint8_t> batches) {
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  auto end = log_->append_as_follower(batches, now);
  return end.ok() ? Status() : end.status();
}

void PartitionLogReplica::set_high_watermark(int64_t hw) { log_->advance_high_watermark(hw); }

}  // namespace strata::broker::cluster
