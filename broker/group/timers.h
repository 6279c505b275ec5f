// Timer seam for the group coordinator: a clock and one-shot timers. The broker uses AsioTimers
// (steady timers on the broker's io_context); unit tests drive the coordinator with a fake that
// advances time by hand. Implementations are thread-safe; callbacks run without any coordinator
// lock held and may fire after cancel() (the coordinator checks a token, so a late callback is a
// no-op).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include "broker/net/asio.h"

namespace strata::broker::group {

class Timers {
 public:
  virtual ~Timers() = default;
  // Monotonic milliseconds (used for timeouts) and wall-clock milliseconds (stored timestamps).
  virtual int64_t now_ms() = 0;
  virtual int64_t wall_ms() = 0;
  // Runs `fn` once after `delay_ms`; returns an id for cancel().
  virtual uint64_t schedule(int64_t delay_ms, std::function<void()> fn) = 0;
  virtual void cancel(uint64_t id) = 0;
  // Cancels everything; no callback runs afterwards (best effort for one already running).
  virtual void cancel_all() = 0;
};

// Steady timers on an io_context. Thread-safe.
class AsioTimers : public Timers {
 public:
  explicit AsioTimers(boost::asio::io_context& io) : io_(io) {}
  int64_t now_ms() override;
  int64_t wall_ms() override;
  uint64_t schedule(int64_t delay_ms, std::function<void()> fn) override;
  void cancel(uint64_t id) override;
  void cancel_all() override;

 private:
  boost::asio::io_context& io_;
  std::mutex mu_;
  uint64_t next_id_ = 1;
  bool closed_ = false;
  std::map<uint64_t, std::shared_ptr<boost::asio::steady_timer>> timers_;
};

}  // namespace strata::broker::group
