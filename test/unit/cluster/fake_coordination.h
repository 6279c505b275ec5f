// FakeCoordination: an in-memory Coordination with etcd's semantics (one revision counter,
// per-key create/mod revision and version, lease-bound keys deleted when the lease expires,
// watches from a revision with history until compact()), for unit tests of what is built on
// Coordination. The contract test (coordination_contract_test.cc) runs the same cases against it
// and against a real etcd, so the fake cannot drift from etcd unnoticed.
// Leases expire lazily, when any call sees the clock past their deadline, or on expire_leases().
// Thread-safe; each watch delivers on its own thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "broker/cluster/coordination.h"

namespace strata::broker::cluster {

class FakeCoordination : public Coordination {
 public:
  using Clock = std::function<int64_t()>;  // milliseconds, monotonic
  explicit FakeCoordination(Clock clock = {});
  ~FakeCoordination() override;

  Result<RangeResult> range(const std::string& key, const std::string& range_end = {}) override;
  Result<int64_t> put(const std::string& key, const std::string& value, int64_t lease = 0) override;
  Result<int64_t> delete_range(const std::string& key, const std::string& range_end = {}) override;
  Result<TxnResult> txn(const std::vector<Compare>& compares, const std::vector<TxnOp>& success,
                        const std::vector<TxnOp>& failure) override;
  Result<int64_t> grant_lease(int64_t ttl_seconds) override;
  Status keep_alive(int64_t lease) override;
  Status revoke_lease(int64_t lease) override;
  Result<std::unique_ptr<Watch>> watch(const std::string& key, const std::string& range_end,
                                       int64_t start_revision, WatchFn fn) override;

  // Drops history before `revision`: a watch from an earlier revision ends with compact_revision.
  Status compact(int64_t revision);
  void expire_leases();
  // While set, every call fails with io_error (an unreachable etcd).
  void set_unreachable(bool unreachable);
  int64_t revision() const;

  class FakeWatch;

 private:
  struct Lease {
    int64_t ttl_ms;
    int64_t deadline_ms;
  };
  struct Event {
    int64_t revision;
    WatchEvent event;
  };

  int64_t now() const;
  Status check_reachable() const;
  void expire_locked(std::vector<Event>& fired);
  bool in_range(const std::string& k, const std::string& key, const std::string& range_end) const;
  void put_locked(const std::string& key, const std::string& value, int64_t lease,
                  std::vector<Event>& fired);
  int64_t delete_locked(const std::string& key, const std::string& range_end,
                        std::vector<Event>& fired);
  RangeResult range_locked(const std::string& key, const std::string& range_end) const;
  bool holds(const Compare& c) const;
  void publish(std::vector<Event> fired);  // outside mu_

  Clock clock_;
  mutable std::mutex mu_;
  int64_t revision_ = 1;  // etcd starts at 1
  int64_t compacted_ = 0;
  int64_t next_lease_ = 7000;
  bool unreachable_ = false;
  std::map<std::string, KeyValue> kvs_;
  std::map<int64_t, Lease> leases_;
  std::deque<Event> history_;
  std::vector<FakeWatch*> watches_;
};

}  // namespace strata::broker::cluster
