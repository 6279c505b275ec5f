// FakeTimers: the group coordinator's timer seam driven by hand — advance(ms) moves the clock and
// fires due callbacks in deadline order. Single-threaded test helper.
#pragma once

#include <map>
#include <utility>

#include "broker/group/timers.h"

namespace strata::broker::group::testing {

class FakeTimers : public Timers {
 public:
  int64_t now_ms() override { return now_; }
  int64_t wall_ms() override { return 1'700'000'000'000 + now_; }
  uint64_t schedule(int64_t delay_ms, std::function<void()> fn) override {
    uint64_t id = next_++;
    due_.emplace(std::make_pair(now_ + std::max<int64_t>(delay_ms, 0), id), std::move(fn));
    return id;
  }
  void cancel(uint64_t id) override {
    for (auto it = due_.begin(); it != due_.end(); ++it) {
      if (it->first.second == id) {
        due_.erase(it);
        return;
      }
    }
  }
  void cancel_all() override { due_.clear(); }
  // Fires everything due up to now + ms (including timers those callbacks schedule).
  void advance(int64_t ms) {
    const int64_t end = now_ + ms;
    while (!due_.empty() && due_.begin()->first.first <= end) {
      auto it = due_.begin();
      now_ = it->first.first;
      auto fn = std::move(it->second);
      due_.erase(it);
      fn();
    }
    now_ = end;
  }
  size_t pending() const { return due_.size(); }

 private:
  int64_t now_ = 0;
  uint64_t next_ = 1;
  std::map<std::pair<int64_t, uint64_t>, std::function<void()>> due_;
};

}  // namespace strata::broker::group::testing
