// LeaderState: what a partition's leader tracks about its followers, with Kafka's rules
// (Partition/Replica in Kafka's ReplicaManager):
//  - a follower's position is the fetch offset of its latest Fetch in this leader epoch (a
//    follower fsyncs what it appended before fetching again when the flush policy requires it, so
//    the position is also its durable end);
//  - it is caught up at a fetch whose offset reaches the leader's log end, or the log end the
//    leader had at its previous fetch (lastCaughtUpTime) — never at a fetch that says its
//    primary-key state is still pending (a checkpoint copy): its log may be complete, but it could
//    not serve the table as a leader;
//  - high watermark = min over the ISR of the leader's durable end and the followers' positions;
//    it never goes back;
//  - shrink: an ISR follower not caught up for replica.lag.time.max.ms leaves (one whose state
//    is pending at once); expand: a follower
//    outside the ISR joins once its position reaches the high watermark and the start offset of
//    this leader epoch (so it has truncated to this leader's history).
// ISR changes are proposed here and take effect through set_isr() after the compare-and-swap in
// etcd succeeded. Not thread-safe: the partition's owner serialises calls.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace strata::broker::cluster {

class LeaderState {
 public:
  // `epoch_start_offset` = the leader's log end when it became leader in this epoch.
  LeaderState(int32_t self, std::vector<int32_t> replicas, std::vector<int32_t> isr,
              int64_t epoch_start_offset, int64_t high_watermark, int64_t now_ms);

  void on_leader_durable_end(int64_t durable_end);
  // A follower's Fetch at `fetch_offset` while the leader's log end was `leader_log_end`;
  // `state_pending`: the follower's primary-key state is not open yet (not caught up, no ISR).
  void on_follower_fetch(int32_t replica, int64_t fetch_offset, int64_t leader_log_end,
                         int64_t now_ms, bool state_pending = false);

  int64_t high_watermark() const { return hw_; }
  const std::vector<int32_t>& isr() const { return isr_; }
  std::optional<int64_t> position(int32_t replica) const;

  // The ISR to propose, or nullopt when no change is due.
  std::optional<std::vector<int32_t>> shrink_candidate(int64_t now_ms, int64_t lag_max_ms) const;
  std::optional<std::vector<int32_t>> expand_candidate() const;
  void set_isr(std::vector<int32_t> isr);
  // The replica list changed in this epoch (a reassignment added or removed replicas): new
  // followers start unheard of and outside the ISR until caught up; removed ones are forgotten.
  void set_replicas(std::vector<int32_t> replicas);

 private:
  struct Follower {
    int64_t position = -1;  // -1: no fetch yet in this epoch
    int64_t last_caught_up_ms = 0;
    int64_t last_fetch_ms = 0;
    int64_t last_fetch_leader_end = -1;  // -1: none, or its fetch had the state pending
    bool state_pending = false;          // at its latest fetch
  };
  void advance_hw();
  bool in_isr(int32_t replica) const;

  const int32_t self_;
  std::vector<int32_t> replicas_;
  std::vector<int32_t> isr_;
  const int64_t epoch_start_;
  int64_t hw_;
  int64_t leader_durable_end_;
  std::map<int32_t, Follower> followers_;
};

}  // namespace strata::broker::cluster
