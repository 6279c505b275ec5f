// PartitionLogReplica: the follower protocol's ReplicaLog (replica_fetch.h) over a partition's
// storage (storage::PartitionLog in replicated mode): appends are append_as_follower (which also
// applies the flush policy, so the log end it reports next is what the next fetch may claim), the
// high watermark comes from advance_high_watermark. Holds the log by shared_ptr so a topic
// deleted underneath stays safe (its appends then fail). Used by one fetcher thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "broker/cluster/replica_fetch.h"

namespace strata::storage {
class PartitionLog;
}

namespace strata::broker::cluster {

class PartitionLogReplica : public ReplicaLog {
 public:
  explicit PartitionLogReplica(std::shared_ptr<storage::PartitionLog> log);

  int64_t log_end() const override;
  int32_t latest_epoch() const override;
  // The largest epoch <= `epoch` and where it ends. Unlike PartitionLog::end_offset_for_epoch,
  // an epoch above the latest one answers the latest one (ending at the log end), as the
  // EndOffsetForEpoch contract says.
  EpochEnd end_offset_for_epoch(int32_t epoch) const override;
  // An offset below the log start drops everything and continues empty there (reset_to):
  // PartitionLog::truncate_to never moves the log start.
  Status truncate_to(int64_t offset) override;
  Status reset_to(int64_t offset) override;
  Status append(std::span<const uint8_t> batches) override;
  void set_high_watermark(int64_t hw) override;

  storage::PartitionLog& log() { return *log_; }

 private:
  std::shared_ptr<storage::PartitionLog> log_;
};

// The EndOffsetForEpoch of `log` (leader or follower), with the same rule for epochs above the
// latest one as PartitionLogReplica::end_offset_for_epoch.
EpochEnd log_end_offset_for_epoch(const storage::PartitionLog& log, int32_t epoch);

}  // namespace strata::broker::cluster
