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
#include <utility>
#include <vector>

namespace strata::broker {

// An allocator whose resize() leaves bytes uninitialised: a request buffer is overwritten by the
// socket read at once, and zero-filling ~1 MB per Produce first cost 5-7 % of the broker's CPU
// (docs/benchmarks.md).
template <typename T>
struct NoInitAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = NoInitAllocator<U>;
  };
  NoInitAllocator() = default;
  template <typename U>
  NoInitAllocator(const NoInitAllocator<U>&) noexcept {}
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;  // default-initialisation: no zeroing
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

using BodyBytes = std::vector<uint8_t, NoInitAllocator<uint8_t>>;

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

  // Body buffers of handled requests, kept for the next ones. A fresh allocation of a Produce
  // body's size per request, in a heap that the primary-key write path fragments with small row
  // strings, made glibc's malloc walk its bins (8.7 % of the broker's samples under PK upserts,
  // docs/benchmarks.md). Idle capacity, apart from the bytes above and bounded on its own: at
  // most kMaxKeptBuffers buffers of kMinKeptBuffer..kMaxKeptBuffer bytes, kMaxKeptBytes in all.
  static constexpr size_t kMaxKeptBuffers = 16;
  static constexpr size_t kMaxKeptBytes = size_t{32} << 20;
  static constexpr size_t kMinKeptBuffer = size_t{64} << 10;
  static constexpr size_t kMaxKeptBuffer = size_t{8} << 20;
  // An empty buffer for a body of `size` bytes: the kept one of the smallest capacity >= size,
  // or a new one. Bodies under kMinKeptBuffer / 4 get a new one (small blocks are malloc's fast
  // path, and they would take the large buffers Produce requests need).
  BodyBytes take_buffer(size_t size);
  // Keeps `b` (emptied) if it is within the bounds above; frees it otherwise.
  void give_buffer(BodyBytes&& b);
  size_t kept_buffers() const;
  size_t kept_buffer_bytes() const;

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
  mutable std::mutex kept_mu_;  // apart from mu_: a take never waits behind a grant
  std::vector<BodyBytes> kept_;
  size_t kept_bytes_ = 0;
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
