// PrefixFollower: keeps an in-memory copy of every key under one etcd prefix in step with etcd.
// start() reads the prefix (range) and hands everything to `reset`, then watches from the range's
// revision + 1 and hands each batch of changes to `apply`. When etcd compacted the history the
// watch needed, the watch ends; the follower re-reads (a fresh `reset`) and watches again, on a
// thread of its own (never on the ending watch's thread), retrying with backoff while etcd cannot
// be read. wait_for(revision) returns once the copy reflects that revision, so a broker that wrote
// a key answers only after its own copy has the write (read-your-writes).
// The handlers run one at a time, never concurrently with each other (on the caller's thread in
// start(), then on the watch's or the re-read thread), and never after stop() returns.
// Used by the cluster ACL authorizer and the SCRAM credential store. MetadataView follows its
// prefixes the same way but keeps its own loop for now: it can be restarted (start() after
// stop()) and waits on its snapshot's revision under its own lock; moving it is a change to the
// cluster's most critical path, to be made with its own tests.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "broker/cluster/coordination.h"

namespace strata::broker::cluster {

class PrefixFollower {
 public:
  struct Handlers {
    // Everything under the prefix at `all.revision` (keys sorted): replace the whole copy.
    std::function<void(const RangeResult& all)> reset;
    // One batch of puts and deletions, in revision order.
    std::function<void(const std::vector<WatchEvent>& events)> apply;
  };

  // `name` prefixes log lines ("ACLs", "SCRAM credentials"). `coordination` outlives this.
  PrefixFollower(Coordination& coordination, std::string prefix, Handlers handlers,
                 std::string name);
  ~PrefixFollower();  // stop()
  PrefixFollower(const PrefixFollower&) = delete;
  PrefixFollower& operator=(const PrefixFollower&) = delete;

  // Reads the prefix and starts watching; fails when etcd cannot be read. Once only.
  Status start();
  // Ends the watch and joins the re-read thread. Idempotent; the copy stays as it is.
  void stop();

  // Waits up to `timeout` until the copy reflects etcd revision `revision`; false if it did not.
  bool wait_for(int64_t revision, std::chrono::milliseconds timeout) const;
  int64_t applied_revision() const;

  const std::string& prefix() const { return prefix_; }
  // `key` without the prefix (empty if it does not start with it).
  std::string_view relative(std::string_view key) const;

 private:
  Status load_and_watch();  // with watch_mu_ held
  void on_batch(const WatchBatch& batch);
  void rewatch();  // the re-read thread's body
  void advance(int64_t revision);

  Coordination& coordination_;
  const std::string prefix_;
  const Handlers handlers_;
  const std::string name_;

  mutable std::mutex rev_mu_;
  mutable std::condition_variable rev_cv_;
  int64_t applied_revision_ = 0;

  std::mutex watch_mu_;              // serialises start, stop and re-reads
  std::condition_variable stop_cv_;  // wakes a re-read's backoff on stop()
  std::unique_ptr<Watch> watch_;
  bool stopped_ = false;
  std::mutex rewatch_mu_;
  std::thread rewatch_;
};

}  // namespace strata::broker::cluster
