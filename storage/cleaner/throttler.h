// Throttler: caps the cleaner's I/O rate (log.cleaner.io.max.bytes.per.second, Kafka's Throttler):
// callers report bytes read or written and are put to sleep long enough that the average rate since
// the last check window stays under the limit. The rate may be changed at any time (dynamic
// config).
//
// Shared by the cleaner threads; thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>

namespace strata::storage::cleaner {

class Throttler {
 public:
  using Sleep = std::function<void(std::chrono::nanoseconds)>;
  // rate <= 0 or infinite = unthrottled. `sleep` is replaceable for tests.
  explicit Throttler(double bytes_per_second, Sleep sleep = {});

  void set_rate(double bytes_per_second) { rate_.store(bytes_per_second); }
  double rate() const { return rate_.load(); }
  // Accounts `bytes` and sleeps if the rate is exceeded.
  void maybe_throttle(uint64_t bytes);
  // Total time spent sleeping (metrics, tests).
  std::chrono::nanoseconds slept() const;

 private:
  std::atomic<double> rate_;
  Sleep sleep_;
  mutable std::mutex mu_;
  std::chrono::steady_clock::time_point window_start_;
  uint64_t window_bytes_ = 0;
  std::chrono::nanoseconds slept_{0};
};

}  // namespace strata::storage::cleaner
