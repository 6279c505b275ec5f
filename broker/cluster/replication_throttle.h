// ReplicationThrottle: the follower side of Kafka's replication throttle
// (follower.replication.throttled.rate, bytes/s; -1 = unlimited), shared by every replica fetcher
// of a broker. Only partitions whose replica here is being added by a reassignment (catching up)
// are throttled; replicas already in sync are never slowed. A token bucket holding at most one
// second of the rate: a throttled partition joins a fetch only while the bucket is positive, and
// what it fetched is taken out afterwards (the bucket may go negative after a large answer, so the
// average stays at the rate). The rate is read at each call, so a dynamic config change applies
// at once. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>

namespace strata::broker::cluster {

class ReplicationThrottle {
 public:
  explicit ReplicationThrottle(std::function<int64_t()> rate) : rate_(std::move(rate)) {}

  // Milliseconds a throttled partition must wait before its next fetch (0 = fetch now).
  int64_t delay_ms(int64_t now_ms);
  // A throttled partition received `bytes`.
  void record(uint64_t bytes, int64_t now_ms);
  uint64_t throttled_bytes() const;

 private:
  void refill(int64_t rate, int64_t now_ms);

  const std::function<int64_t()> rate_;
  mutable std::mutex mu_;
  double tokens_ = 0;
  int64_t last_ms_ = -1;
  uint64_t bytes_ = 0;
};

}  // namespace strata::broker::cluster
