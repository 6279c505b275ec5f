#include "broker/quota/windowed_rate.h"

#include <algorithm>
#include <cmath>

namespace strata::broker::quota {

WindowedRate::WindowedRate(RateConfig cfg, int64_t created_ms)
    : cfg_(cfg), last_ms_(created_ms), slots_(static_cast<size_t>(std::max(1, cfg.samples))) {
  cfg_.samples = std::max(1, cfg_.samples);
  cfg_.window_ms = std::max<int64_t>(1, cfg_.window_ms);
  created_window_ = window_of(created_ms);
}

int64_t WindowedRate::window_of(int64_t ms) const {
  // floor division: times before the epoch never occur, but stay correct anyway
  return ms >= 0 ? ms / cfg_.window_ms : -((-ms + cfg_.window_ms - 1) / cfg_.window_ms);
}

int64_t WindowedRate::oldest_window(int64_t now_ms) const {
  return std::max(created_window_, window_of(now_ms) - cfg_.samples + 1);
}

void WindowedRate::record(double value, int64_t now_ms) {
  now_ms = std::max(now_ms, last_ms_);
  last_ms_ = now_ms;
  const int64_t w = window_of(now_ms);
  Slot& s = slots_[static_cast<size_t>(w % cfg_.samples)];
  if (s.window != w) {  // the slot held an expired window (or none): start it afresh
    s.window = w;
    s.value = 0;
  }
  s.value += value;
}

int64_t WindowedRate::elapsed_ms(int64_t now_ms) const {
  now_ms = std::max(now_ms, last_ms_);
  const int64_t since_oldest = now_ms - oldest_window(now_ms) * cfg_.window_ms;
  return std::max<int64_t>((cfg_.samples - 1) * cfg_.window_ms, since_oldest);
}

double WindowedRate::rate(int64_t now_ms) const {
  now_ms = std::max(now_ms, last_ms_);
  const int64_t lo = oldest_window(now_ms);
  const int64_t hi = window_of(now_ms);
  double sum = 0;
  for (const auto& s : slots_) {
    if (s.window >= lo && s.window <= hi) sum += s.value;
  }
  const int64_t elapsed = elapsed_ms(now_ms);
  return elapsed > 0 ? sum * 1000.0 / static_cast<double>(elapsed) : 0.0;
}

int64_t WindowedRate::throttle_ms(double quota, int64_t now_ms) const {
  if (!(quota > 0)) return 0;
  const double r = rate(now_ms);
  if (r <= quota) return 0;
  const double wait = (r - quota) / quota * static_cast<double>(elapsed_ms(now_ms));
  return wait >= 9.0e18 ? INT64_MAX : std::llround(wait);
}

}  // namespace strata::broker::quota
