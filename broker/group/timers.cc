#include "broker/group/timers.h"

#include <chrono>

namespace strata::broker::group {

int64_t AsioTimers::now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t AsioTimers::wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

uint64_t AsioTimers::schedule(int64_t delay_ms, std::function<void()> fn) {
  std::lock_guard l(mu_);
  if (closed_) return 0;
  uint64_t id = next_id_++;
  auto t = std::make_shared<boost::asio::steady_timer>(io_);
  t->expires_after(std::chrono::milliseconds(std::max<int64_t>(0, delay_ms)));
  timers_[id] = t;
  t->async_wait([this, id, t, fn = std::move(fn)](boost::system::error_code ec) {
    {
      std::lock_guard l(mu_);
      auto it = timers_.find(id);
      if (it == timers_.end()) return;  // cancelled
      timers_.erase(it);
    }
    if (!ec) fn();
  });
  return id;
}

void AsioTimers::cancel(uint64_t id) {
  std::lock_guard l(mu_);
  auto it = timers_.find(id);
  if (it == timers_.end()) return;
  it->second->cancel();
  timers_.erase(it);
}

void AsioTimers::cancel_all() {
  std::lock_guard l(mu_);
  closed_ = true;
  for (auto& [id, t] : timers_) t->cancel();
  timers_.clear();
}

}  // namespace strata::broker::group
