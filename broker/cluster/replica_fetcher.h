// ReplicaFetcher: the follower side of replication for every partition this broker follows from
// ONE leader broker: one thread, one connection (protocol/client/Connection), Fetch v12 with
// replica_id = this broker, and per partition the FollowerPartition rules (replica_fetch.h) over
// its local log (PartitionLogReplica). Each round sends one Fetch for the partitions that are
// ready (not backing off, not waiting for a leader change) and applies every partition's answer:
// appends the leader's batches byte for byte, truncates on a diverging epoch, resets below the
// leader's log start, takes the high watermark. The fetch offset is the local log end, which
// append_as_follower only moves past what the flush policy made durable.
//
// Failures never stop it: a connection that fails or answers something undecodable is closed and
// opened again after backoff_ms; a partition whose answer is an error or does not apply backs off
// on its own, fenced/not-leader answers included (a new leader may not have applied its
// leadership when its first follower fetch arrives); add() replaces an entry (new epoch) and
// ends its backoff, remove() drops it.
//
// Thread-safe. remove() returns once the fetcher thread no longer touches that log: answers are
// applied under the fetcher's lock and only to partitions still registered, so the caller may
// then make the log a leader, truncate it or delete it. For the same reason a log's listeners
// (which run inside append_as_follower) must not call back into its fetcher.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "protocol/client/connection.h"

namespace strata::storage {
class PartitionLog;
}

namespace strata::client {
class Connection;
}

namespace strata::broker::cluster {

class ReplicationThrottle;

class ReplicaFetcher {
 public:
  struct Options {
    int32_t self_id = -1;         // our node id: the Fetch's replica_id
    int32_t max_bytes = 1048576;  // replica.fetch.max.bytes (request and partition bound)
    int32_t max_wait_ms = 500;    // replica.fetch.wait.max.ms
    int32_t backoff_ms = 1000;    // replica.fetch.backoff.ms (errors, reconnects)
    std::string client_id = "strata-replica-fetcher";
    int32_t connect_timeout_ms = 2000;
    int32_t request_timeout_ms = 30000;  // on top of max_wait_ms
    // Shared by the broker's fetchers; applies to partitions added with throttled = true.
    std::shared_ptr<ReplicationThrottle> throttle;
    client::ClientSecurity security;  // of the connection to the leader
    // True while a partition's primary-key state is not open yet (a checkpoint copy is pending):
    // its fetches say so, and the leader keeps it out of the ISR. Called under the fetcher's lock.
    std::function<bool(const std::string&, int32_t)> state_pending;
  };
  struct Counters {
    uint64_t fetches = 0;      // Fetch requests answered
    uint64_t bytes = 0;        // record bytes appended
    uint64_t truncations = 0;  // truncations and resets of local logs
    uint64_t connect_failures = 0;
    uint64_t errors = 0;  // failed requests and partition answers that did not apply
  };

  // Starts the thread; it connects once there is a partition to fetch.
  ReplicaFetcher(int32_t leader_id, std::string host, int port, Options options);
  ~ReplicaFetcher();
  ReplicaFetcher(const ReplicaFetcher&) = delete;
  ReplicaFetcher& operator=(const ReplicaFetcher&) = delete;

  // Follows topic/partition into `log` (a replicated PartitionLog) at `leader_epoch`; replaces an
  // existing entry (new epoch or log), which also ends a backoff. `throttled`: a replica being
  // added by a reassignment, fetched within Options::throttle.
  void add(const std::string& topic, int32_t partition, std::shared_ptr<storage::PartitionLog> log,
           int32_t leader_epoch, bool throttled = false);
  // Stops following; on return the fetcher thread no longer touches that log.
  void remove(const std::string& topic, int32_t partition);
  size_t size() const;
  // Joins the thread (at most one Fetch's wait later). Idempotent.
  void stop();
  // Tells the thread to end without waiting for it: a call to a leader that hangs (SIGSTOP)
  // returns only at its request timeout. finished() once it ended; stop() or the destructor
  // then join at once.
  void request_stop();
  bool finished() const { return finished_.load(std::memory_order_acquire); }

  int32_t leader_id() const { return leader_id_; }
  Counters counters() const;

 private:
  struct Entry;
  using Key = std::pair<std::string, int32_t>;
  using Clock = std::chrono::steady_clock;

  void run();
  // One Fetch for the ready partitions; false when the connection failed.
  bool fetch_round(std::unique_lock<std::mutex>& lk);
  void sleep_for(std::unique_lock<std::mutex>& lk, Clock::duration d);

  const int32_t leader_id_;
  const std::string host_;
  const int port_;
  const Options options_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<Key, std::shared_ptr<Entry>> entries_;
  bool stopping_ = false;
  uint64_t changes_ = 0;  // add/remove count: wakes a thread sleeping with nothing ready
  std::unique_ptr<client::Connection> conn_;  // fetcher thread only

  std::atomic<uint64_t> fetches_{0};
  std::atomic<uint64_t> bytes_{0};
  std::atomic<uint64_t> truncations_{0};
  std::atomic<uint64_t> connect_failures_{0};
  std::atomic<uint64_t> errors_{0};
  std::atomic<bool> finished_{false};

  std::mutex join_mu_;
  std::thread thread_;
};

}  // namespace strata::broker::cluster
