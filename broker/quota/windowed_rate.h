// WindowedRate: a per-second rate over `samples` aligned windows of `window_ms` each (Kafka's
// quota.window.num / quota.window.size.seconds), and the throttle time that brings a rate above
// a quota back to it. The clock is injected: every call takes the caller's now (ms), so the rate
// is a pure function of the recorded (time, value) sequence and is unit-testable.
//
// Semantics (those of Kafka's Rate over a SampledStat, with windows aligned to multiples of
// window_ms instead of to the first record of each window):
//   current window w = floor(now / window_ms); the retained windows are
//   [max(created, w - samples + 1), w], where `created` is the window the rate was created in;
//   sum     = the values recorded in the retained windows (the current partial window included);
//   elapsed = max((samples - 1) * window_ms, now - start of the oldest retained window), so a fresh
//             rate does not read a burst as an enormous rate;
//   rate    = sum / elapsed (per second);
//   throttle(quota) = 0 if rate <= quota, else round((rate - quota) / quota * elapsed): the wait
//             after which sum / (elapsed + wait) == quota if nothing else is recorded.
// Not thread-safe (ClientQuotas locks around it).
#pragma once

#include <cstdint>
#include <vector>

namespace strata::broker::quota {

struct RateConfig {
  int samples = 11;          // quota.window.num
  int64_t window_ms = 1000;  // quota.window.size.seconds * 1000
};

class WindowedRate {
 public:
  WindowedRate(RateConfig cfg, int64_t created_ms);

  // Adds `value` (may be negative: Kafka "unrecords" a throttled fetch's bytes) at `now_ms`.
  // Times must not go backwards; an earlier time is treated as the latest one seen.
  void record(double value, int64_t now_ms);
  // Values per second over the retained windows.
  double rate(int64_t now_ms) const;
  // Milliseconds the rate is measured over at now (see above).
  int64_t elapsed_ms(int64_t now_ms) const;
  // Wait that brings rate() back to `quota` (> 0); 0 when within it.
  int64_t throttle_ms(double quota, int64_t now_ms) const;
  // The latest time a value was recorded at (the creation time before any).
  int64_t last_record_ms() const { return last_ms_; }

 private:
  struct Slot {
    int64_t window = -1;  // window index this slot holds, -1 none
    double value = 0;
  };
  int64_t window_of(int64_t ms) const;
  int64_t oldest_window(int64_t now_ms) const;

  RateConfig cfg_;
  int64_t created_window_;
  int64_t last_ms_;
  std::vector<Slot> slots_;  // slot i holds windows with index % samples == i
};

}  // namespace strata::broker::quota
