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
#include <memory>

namespace strata::broker {

class RequestMemoryPool {
 public:
  explicit RequestMemoryPool(int64_t capacity) : capacity_(capacity) {}
  // Takes `bytes` when they fit, or when nothing is taken (so one request larger than the pool is
  // still served, alone). Unbounded when capacity < 0.
  bool try_reserve(int64_t bytes) {
    if (capacity_ < 0) return true;
    int64_t used = used_.load(std::memory_order_relaxed);
    for (;;) {
      if (used != 0 && used + bytes > capacity_) return false;
      if (used_.compare_exchange_weak(used, used + bytes, std::memory_order_acq_rel)) return true;
    }
  }
  void release(int64_t bytes) {
    if (capacity_ >= 0) used_.fetch_sub(bytes, std::memory_order_acq_rel);
  }
  int64_t used() const { return used_.load(std::memory_order_relaxed); }
  int64_t capacity() const { return capacity_; }

 private:
  const int64_t capacity_;
  std::atomic<int64_t> used_{0};
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
