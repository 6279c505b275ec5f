// The follower-fetch protocol's rules, both sides, without sockets or files (Kafka's KIP-101/279/
// 320 with Fetch v12's last_fetched_epoch and diverging_epoch):
//  - the leader answers a follower whose last fetched epoch does not end where the leader's
//    history says with `diverging_epoch` = the leader's (epoch, end offset) for it, and no data;
//  - the follower then truncates to min(that end offset, its own end offset for that epoch) and
//    fetches again, until its log is a prefix of the leader's; then it appends what it gets,
//    at the leader's offsets, and takes the high watermark min(leader's, own log end);
//  - below the leader's log start it starts over empty at the leader's log start; a fenced or
//    unknown leader epoch, or a broker that no longer leads, waits for the view to change.
// FollowerPartition drives one partition's local replica through a ReplicaLog; the real fetcher
// wraps it with a connection and the partition's storage. Not thread-safe: one fetcher thread
// owns each FollowerPartition.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>

#include "protocol/base/result.h"

namespace strata::broker::cluster {

struct EpochEnd {
  int32_t epoch = -1;
  int64_t end_offset = -1;
  bool operator==(const EpochEnd&) const = default;
};

// Kafka's "end offset for epoch": the largest epoch <= the one asked for, and the offset where it
// ends (the next epoch's start, or the log end); {-1, -1} when the history has no such epoch.
using EndOffsetForEpoch = std::function<EpochEnd(int32_t epoch)>;

// Leader side: the diverging epoch to answer a follower fetching at `fetch_offset` whose last
// fetched batch had `last_fetched_epoch` (-1: it has none), or nullopt when its log is a prefix.
std::optional<EpochEnd> diverging_epoch(const EndOffsetForEpoch& leader_history,
                                        int64_t fetch_offset, int32_t last_fetched_epoch);

// The local replica as the follower protocol sees it.
class ReplicaLog {
 public:
  virtual ~ReplicaLog() = default;
  virtual int64_t log_end() const = 0;
  virtual int32_t latest_epoch() const = 0;  // epoch of the last batch; -1 when empty
  virtual EpochEnd end_offset_for_epoch(int32_t epoch) const = 0;
  virtual Status truncate_to(int64_t offset) = 0;  // drops records >= offset
  // Drops everything and continues empty at `offset` (the leader's log start passed our end).
  virtual Status reset_to(int64_t offset) = 0;
  // Appends batches fetched from the leader at their own offsets (which start at log_end()).
  virtual Status append(std::span<const uint8_t> batches) = 0;
  virtual void set_high_watermark(int64_t hw) = 0;
};

// What the leader answered for this partition.
struct FetchedPartition {
  enum class Error {
    none,
    offset_out_of_range,
    fenced_leader_epoch,   // our epoch is older than the leader's
    unknown_leader_epoch,  // our epoch is newer: the leader has not caught up with the view
    not_leader,
    other
  };
  Error error = Error::none;
  int64_t high_watermark = -1;
  int64_t log_start_offset = -1;
  int64_t leader_log_end = -1;  // for offset_out_of_range: where the leader's log ends
  std::optional<EpochEnd> diverging;
  std::span<const uint8_t> records;
};

class FollowerPartition {
 public:
  enum class Next { fetch, backoff, wait_for_leader_change };
  struct Position {
    int64_t fetch_offset;
    int32_t last_fetched_epoch;
    int32_t current_leader_epoch;
  };

  FollowerPartition(ReplicaLog& log, int32_t leader_epoch) : log_(log), epoch_(leader_epoch) {}

  Position position() const { return {log_.log_end(), log_.latest_epoch(), epoch_}; }
  // Applies the leader's answer; says what the fetcher should do next for this partition.
  Result<Next> on_response(const FetchedPartition& p);
  void set_leader_epoch(int32_t epoch) { epoch_ = epoch; }
  uint64_t truncations() const { return truncations_; }

 private:
  ReplicaLog& log_;
  int32_t epoch_;
  uint64_t truncations_ = 0;
};

}  // namespace strata::broker::cluster
