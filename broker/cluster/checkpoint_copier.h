// CheckpointCopier: brings up the primary-key state of a new replica whose log no longer starts
// at 0 (retention or DeleteRecords moved the leader's log start; the replica fetcher reset the
// local log to it), which no replay can rebuild. It copies the leader's newest checkpoint — its
// offset lies at or past the leader's log start, since retention never passes what the newest
// checkpoint needs — file by file over ReplicaCheckpoint (ext key 16005), throttled like a
// reassigned replica's fetches (follower.replication.throttled.rate), into
// kv-checkpoints/<offset>.tmp/, renames it once every file is fsynced, waits until the local log
// reaches the checkpoint, and asks for the state to be reopened: the open restores the checkpoint
// and the role's apply replays the log from there. One thread; a failed copy is retried after a
// second (a checkpoint replaced on the leader meanwhile starts over with the newest).
// Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "protocol/base/result.h"
#include "protocol/client/connection.h"

namespace strata::broker {
class TopicRegistry;
}

namespace strata::broker::cluster {

class ReplicationThrottle;

class CheckpointCopier {
 public:
  struct Options {
    // The partition leader's address now (nullopt: none, or this broker).
    std::function<std::optional<std::pair<std::string, int>>(const std::string&, int32_t)> leader;
    // Reopens the partition's state once the checkpoint is in place: true once it is open (else
    // the copy is retried).
    std::function<bool(const std::string&, int32_t)> reopen;
    std::shared_ptr<ReplicationThrottle> throttle;  // may be null
    int32_t chunk_bytes = 1 << 20;
    int64_t wait_for_log_ms = 600000;  // for the local log to reach the checkpoint
    client::ClientSecurity security;   // of the connection to the leader
  };
  CheckpointCopier(TopicRegistry& topics, Options options);
  ~CheckpointCopier();

  // Queues a copy for `topic`-`partition` (no-op while one is queued or running).
  void request(const std::string& topic, int32_t partition);
  // From request() until the state is open again (the replica stays out of the ISR meanwhile).
  bool pending(const std::string& topic, int32_t partition) const;
  void stop();
  uint64_t copied_bytes() const;
  uint64_t completed() const;

 private:
  using Key = std::pair<std::string, int32_t>;
  void loop();
  Status copy(const Key& k);

  TopicRegistry& topics_;
  const Options options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Key> queue_;
  std::set<Key> pending_;                 // queued or being copied
  std::optional<Key> running_;            // being copied
  bool again_ = false;                    // running_ was requested again meanwhile
  std::atomic<size_t> pending_count_{0};  // pending_.size(): most fetch rounds skip the lock
  bool stopping_ = false;
  uint64_t copied_bytes_ = 0;
  uint64_t completed_ = 0;
  std::thread thread_;
};

}  // namespace strata::broker::cluster
