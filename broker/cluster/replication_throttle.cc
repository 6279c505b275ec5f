#include "broker/cluster/replication_throttle.h"

#include <algorithm>
#include <cmath>

namespace strata::broker::cluster {

void ReplicationThrottle::refill(int64_t rate, int64_t now_ms) {
  if (last_ms_ < 0) {
    tokens_ = static_cast<double>(rate);  // start with one second's worth
  } else if (now_ms > last_ms_) {
    tokens_ += static_cast<double>(rate) * static_cast<double>(now_ms - last_ms_) / 1000.0;
  }
  tokens_ = std::min(tokens_, static_cast<double>(rate));
  last_ms_ = std::max(last_ms_, now_ms);
}

int64_t ReplicationThrottle::delay_ms(int64_t now_ms) {
  const int64_t rate = rate_ ? rate_() : -1;
  if (rate < 0) return 0;
  std::lock_guard lk(mu_);
  refill(rate, now_ms);
  if (tokens_ > 0) return 0;
  if (rate == 0) return 1000;  // nothing may pass: look again in a second
  return std::max<int64_t>(
      1, static_cast<int64_t>(std::ceil((1.0 - tokens_) * 1000.0 / static_cast<double>(rate))));
}

void ReplicationThrottle::record(uint64_t bytes, int64_t now_ms) {
  const int64_t rate = rate_ ? rate_() : -1;
  std::lock_guard lk(mu_);
  bytes_ += bytes;
  if (rate < 0) return;
  refill(rate, now_ms);
  tokens_ -= static_cast<double>(bytes);
}

uint64_t ReplicationThrottle::throttled_bytes() const {
  std::lock_guard lk(mu_);
  return bytes_;
}

}  // namespace strata::broker::cluster
