// What bounds one connection and all of them together (docs/operations.md, "Connection limits"):
// frame size, idle time, the time a started frame may take to arrive, a broker-wide pool of
// request-body bytes (Kafka's queued.max.request.bytes: when it is used up, connections stop
// reading until handled requests give their bytes back, instead of allocating more), and the
// response bytes one connection may have queued unwritten (a client that sends but never reads
// stops being read from, instead of pinning memory).
// ConnectionLimits is immutable after start and shared by every connection; RequestMemoryPool is
// thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>

namespace strata::broker {

// Request-body bytes are taken as they arrive, not when a frame's size is announced, so a client
// that announces a large frame and trickles it (slowloris) holds only what it has sent. When the
// pool is used up, a reader queues and is woken, in arrival order, once enough comes back.
class RequestMemoryPool {
 public:
  explicit RequestMemoryPool(int64_t capacity) : capacity_(capacity) {}
  // Takes `bytes` for a reader that already holds `held` of the pool, when they fit or when the
  // reader holds everything taken (so one frame larger than the pool is still read, alone), and
  // returns true. Otherwise returns false and calls `on_grant` later, from the thread that gave
  // bytes back, once they have been taken for the reader (`on_grant` must only post work).
  // Unbounded when capacity < 0.
  bool reserve_or_wait(int64_t bytes, int64_t held, std::function<void()> on_grant);
  void release(int64_t bytes);
  int64_t used() const { return used_.load(std::memory_order_relaxed); }
  int64_t capacity() const { return capacity_; }
  size_t waiters() const;

 private:
  struct Waiter {
    int64_t bytes;
    int64_t held;
    std::function<void()> on_grant;
  };
  bool fits_locked(int64_t bytes, int64_t held) const {
    const int64_t used = used_.load(std::memory_order_relaxed);
    return used + bytes <= capacity_ || used == held;
  }
  const int64_t capacity_;
  mutable std::mutex mu_;
  std::atomic<int64_t> used_{0};  // written under mu_; read anywhere (metrics)
  std::deque<Waiter> waiters_;
};

struct ConnectionLimits {
  int32_t max_request_bytes = 104857600;         // socket.request.max.bytes
  int64_t idle_ms = 600000;                      // connections.max.idle.ms; < 0: never
  int64_t request_read_timeout_ms = 30000;       // socket.request.read.timeout.ms
  int64_t max_queued_response_bytes = 16777216;  // connection.max.queued.response.bytes
  // sasl.server.max.receive.size: the largest frame of a connection that has not authenticated
  // yet (a stranger cannot make the broker allocate a 100 MiB request buffer).
  int32_t max_unauthenticated_bytes = 524288;
  std::shared_ptr<RequestMemoryPool> pool =  // queued.max.request.bytes
      std::make_shared<RequestMemoryPool>(-1);
};

}  // namespace strata::broker
