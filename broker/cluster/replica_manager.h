// ReplicaManager: the data plane of cluster mode on one broker — what it does for each partition
// it replicates, as the cluster view says (roles.h):
//  - leader: the local log becomes leader of the epoch from etcd (PartitionLog::become_leader),
//    and a LeaderState tracks the followers' fetch positions; the high watermark (min over the
//    ISR) is pushed into the log, which wakes consumers and acks=all produces. ISR shrinks (a
//    follower not caught up for replica.lag.time.max.ms) and expands (a follower that reached the
//    high watermark) are written to etcd by compare-and-swap on the partition key, from this
//    manager's own thread, never from an I/O thread;
//  - follower: the partition is handed to the ReplicaFetcher of its leader broker (one thread and
//    connection per leader);
//  - local topics follow the view: a topic with a replica here is created locally under the
//    cluster's topic id (every partition of it, so partition indexes stay dense; partitions this
//    broker does not replicate stay empty and are never served), a deleted one is deleted.
// View changes are queued and applied on the manager's thread, newest first (a snapshot is
// complete, so skipping intermediate ones loses nothing). Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "broker/cluster/coordination.h"
#include "broker/cluster/leader_state.h"
#include "broker/cluster/metadata_view.h"
#include "broker/cluster/roles.h"
#include "protocol/client/connection.h"
#include "protocol/wire/errors.h"

namespace strata::storage {
class PartitionLog;
}

namespace strata::broker {
class TopicRegistry;
struct TopicEntry;
}  // namespace strata::broker

namespace strata::broker::cluster {

class ReplicaFetcher;
class ReplicationThrottle;

// For metrics: counters since start, and the partitions a broker leads or follows now.
struct ReplicaManagerStats {
  uint64_t leader_elections = 0;  // partitions this broker became leader of (new terms)
  uint64_t isr_shrinks = 0;       // ISR shrinks / expands this broker wrote as a leader
  uint64_t isr_expands = 0;
  uint64_t isr_write_conflicts = 0;  // ISR writes that lost the compare-and-swap
  uint64_t fetched_bytes = 0;        // record bytes the replica fetchers appended
  uint64_t fetch_errors = 0;         // failed fetch requests and partition answers
  struct Led {
    std::string topic;
    int32_t partition = 0;
    size_t replicas = 0;
    size_t isr = 0;
    // leader log end - follower position, per follower (-1: no fetch yet in this term)
    std::vector<std::pair<int32_t, int64_t>> lag;
  };
  std::vector<Led> leading;
  size_t following = 0;
};

class ReplicaManager {
 public:
  struct Options {
    int32_t self = 0;
    int64_t replica_lag_time_max_ms = 30000;
    int32_t fetch_max_bytes = 1048576;
    int32_t fetch_wait_max_ms = 500;
    int32_t fetch_backoff_ms = 1000;
    // follower.replication.throttled.rate for replicas a reassignment is adding (null = none).
    std::shared_ptr<ReplicationThrottle> throttle;
    client::ClientSecurity security;  // of connections to leaders
    // A followed partition's primary-key state is not open yet (ReplicaFetcher::Options).
    std::function<bool(const std::string&, int32_t)> state_pending;
    // Called before a deleted topic's local data goes (close its PK states) and after.
    std::function<void(const TopicEntry&)> before_delete;
    std::function<void(const std::string&)> after_delete;
    // This broker now leads (true) or follows or lost (false) a partition: called before the
    // partition takes writes as a leader and before a fetcher may truncate it as a follower.
    std::function<void(const std::string& topic, int32_t partition, bool leader)> on_role;
  };
  ReplicaManager(Coordination& coordination, Layout layout, TopicRegistry& topics, Options options);
  ~ReplicaManager();

  // Applies `initial` synchronously (roles in place before the broker serves), then starts the
  // manager's thread.
  void start(std::shared_ptr<const ClusterSnapshot> initial);
  // A new view (any thread): applied on the manager's thread.
  void on_view(std::shared_ptr<const ClusterSnapshot> snapshot);
  void stop();

  protocol::ErrorCode leader_check(std::string_view topic, int32_t partition,
                                   int32_t current_leader_epoch) const;
  protocol::ErrorCode min_isr_check(std::string_view topic, int32_t partition,
                                    int32_t min_isr) const;
  std::vector<int32_t> isr(std::string_view topic, int32_t partition) const;
  void on_follower_fetch(std::string_view topic, int32_t partition, int32_t replica,
                         int64_t fetch_offset, int64_t leader_log_end, bool state_pending = false);
  void on_log_end(const storage::PartitionLog& log);
  // Partitions this broker leads that have another live in-sync replica to take over (a clean
  // shutdown waits for these to move).
  size_t movable_leaderships() const;

  using Stats = ReplicaManagerStats;
  Stats stats() const;

 private:
  struct Leading {
    Leading(std::shared_ptr<storage::PartitionLog> l, PartitionRole r, LeaderState s)
        : log(std::move(l)), role(std::move(r)), state(std::move(s)) {}
    const std::shared_ptr<storage::PartitionLog> log;
    std::mutex mu;  // guards everything below
    PartitionRole role;
    LeaderState state;
    int64_t mod_revision = 0;  // of the partition key, for the next compare-and-swap
    bool expand_due = false;
  };
  using Key = TopicPartitionKey;

  void loop();
  void apply(const ClusterSnapshot& s);
  void ensure_local_topics(const ClusterSnapshot& s);
  void delete_local_topic(const std::string& name);
  void lead(const Key& tp, const PartitionRole& role, const ClusterSnapshot& s);
  void follow(const Key& tp, const PartitionRole& role, const ClusterSnapshot& s);
  void unfollow(const Key& tp);
  void stop_leading(const Key& tp);
  void check_isr(int64_t now_ms);
  void reap_retired_fetchers();
  // Writes `isr` for a partition this broker leads (compare-and-swap); true when it took.
  bool write_isr(const Key& tp, Leading& l, std::vector<int32_t> isr);
  static void publish_hw(Leading& l);
  std::shared_ptr<Leading> find(std::string_view topic, int32_t partition) const;

  Coordination& coordination_;
  const Layout layout_;
  TopicRegistry& topics_;
  const Options options_;

  mutable std::shared_mutex map_mu_;  // leading_, by_log_, latest_
  std::map<Key, std::shared_ptr<Leading>, std::less<>> leading_;
  std::unordered_map<const storage::PartitionLog*, std::shared_ptr<Leading>> by_log_;
  std::shared_ptr<const ClusterSnapshot> latest_;  // the last applied view

  // The manager's thread only.
  Roles roles_;
  std::map<int32_t, std::unique_ptr<ReplicaFetcher>> fetchers_;  // by leader broker id
  std::map<Key, int32_t> following_;                             // partition -> leader id
  std::atomic<size_t> following_count_{0};
  std::atomic<uint64_t> leader_elections_{0};
  std::atomic<uint64_t> isr_shrinks_{0};
  std::atomic<uint64_t> isr_expands_{0};
  std::atomic<uint64_t> isr_write_conflicts_{0};
  // Counters of fetchers that were stopped (so the totals never go back).
  std::atomic<uint64_t> retired_fetched_bytes_{0};
  std::atomic<uint64_t> retired_fetch_errors_{0};
  mutable std::mutex fetchers_mu_;  // fetchers_ and retired_ against stats() readers
  // Fetchers left with nothing to follow, ending on their own (see unfollow).
  std::vector<std::unique_ptr<ReplicaFetcher>> retired_;

  std::mutex mu_;  // pending_, stopping_, wake-ups
  std::condition_variable cv_;
  std::shared_ptr<const ClusterSnapshot> pending_;
  bool expand_pending_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace strata::broker::cluster
