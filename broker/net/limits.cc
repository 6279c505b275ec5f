#include "broker/net/limits.h"

#include <utility>
#include <vector>

namespace strata::broker {

bool RequestMemoryPool::reserve_or_wait(int64_t bytes, int64_t held,
                                        std::function<void()> on_grant) {
  if (capacity_ < 0) return true;
  std::lock_guard lock(mu_);
  // Queued readers go first: a stream of small reservations must not starve a waiting one.
  if (waiters_.empty() && fits_locked(bytes, held)) {
    used_.fetch_add(bytes, std::memory_order_relaxed);
    return true;
  }
  waiters_.push_back(Waiter{bytes, held, std::move(on_grant)});
  return false;
}

void RequestMemoryPool::release(int64_t bytes) {
  if (capacity_ < 0 || bytes == 0) return;
  std::vector<std::function<void()>> granted;
  {
    std::lock_guard lock(mu_);
    used_.fetch_sub(bytes, std::memory_order_relaxed);
    while (!waiters_.empty() && fits_locked(waiters_.front().bytes, waiters_.front().held)) {
      used_.fetch_add(waiters_.front().bytes, std::memory_order_relaxed);
      granted.push_back(std::move(waiters_.front().on_grant));
      waiters_.pop_front();
    }
  }
  for (auto& g : granted) g();  // outside the lock: a grant may give bytes back at once
}

size_t RequestMemoryPool::waiters() const {
  std::lock_guard lock(mu_);
  return waiters_.size();
}

}  // namespace strata::broker
