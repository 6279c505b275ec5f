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

BodyBytes RequestMemoryPool::take_buffer(size_t size) {
  if (size < kMinKeptBuffer / 4 || size > kMaxKeptBuffer) return {};
  std::lock_guard lock(kept_mu_);
  size_t best = kept_.size();
  for (size_t i = 0; i < kept_.size(); ++i) {
    const size_t c = kept_[i].capacity();
    if (c >= size && (best == kept_.size() || c < kept_[best].capacity())) best = i;
  }
  if (best == kept_.size()) return {};
  BodyBytes b = std::move(kept_[best]);
  kept_[best] = std::move(kept_.back());
  kept_.pop_back();
  kept_bytes_ -= b.capacity();
  return b;
}

void RequestMemoryPool::give_buffer(BodyBytes&& b) {
  BodyBytes mine = std::move(b);  // freed here unless kept
  const size_t c = mine.capacity();
  if (c < kMinKeptBuffer || c > kMaxKeptBuffer) return;
  mine.clear();
  std::lock_guard lock(kept_mu_);
  if (kept_.size() >= kMaxKeptBuffers || kept_bytes_ + c > kMaxKeptBytes) return;
  kept_bytes_ += c;
  kept_.push_back(std::move(mine));
}

size_t RequestMemoryPool::kept_buffers() const {
  std::lock_guard lock(kept_mu_);
  return kept_.size();
}

size_t RequestMemoryPool::kept_buffer_bytes() const {
  std::lock_guard lock(kept_mu_);
  return kept_bytes_;
}

}  // namespace strata::broker
