// Cleaner I/O throttle (see throttler.h).
#include "storage/cleaner/throttler.h"

#include <cmath>
#include <thread>

namespace strata::storage::cleaner {

namespace {
constexpr auto kWindow = std::chrono::milliseconds(100);  // Kafka's checkIntervalMs
}

Throttler::Throttler(double bytes_per_second, Sleep sleep)
    : rate_(bytes_per_second),
      sleep_(sleep ? std::move(sleep)
                   : Sleep([](std::chrono::nanoseconds d) { std::this_thread::sleep_for(d); })),
      window_start_(std::chrono::steady_clock::now()) {}

void Throttler::maybe_throttle(uint64_t bytes) {
  const double rate = rate_.load();
  if (!(rate > 0) || std::isinf(rate)) return;
  std::chrono::nanoseconds pause{0};
  {
    std::lock_guard<std::mutex> lock(mu_);
    window_bytes_ += bytes;
    const auto now = std::chrono::steady_clock::now();
    const auto elapsed = now - window_start_;
    // In double: the default rate (DBL_MAX, "unlimited") does not fit an integer.
    if (elapsed < kWindow && static_cast<double>(window_bytes_) < rate * 0.1) return;
    // Time the window's bytes should have taken at `rate`, minus the time they did take.
    const auto needed = std::chrono::nanoseconds(
        static_cast<int64_t>(static_cast<double>(window_bytes_) / rate * 1e9));
    if (needed > elapsed)
      pause = std::chrono::duration_cast<std::chrono::nanoseconds>(needed - elapsed);
    slept_ += pause;
    window_bytes_ = 0;
    window_start_ = now;  // the pause below counts towards the next window
  }
  if (pause.count() > 0) sleep_(pause);
}

std::chrono::nanoseconds Throttler::slept() const {
  std::lock_guard<std::mutex> lock(mu_);
  return slept_;
}

}  // namespace strata::storage::cleaner
