#include "broker/cluster/leader_state.h"

#include <algorithm>

namespace strata::broker::cluster {

LeaderState::LeaderState(int32_t self, std::vector<int32_t> replicas, std::vector<int32_t> isr,
                         int64_t epoch_start_offset, int64_t high_watermark, int64_t now_ms)
    : self_(self),
      replicas_(std::move(replicas)),
      isr_(std::move(isr)),
      epoch_start_(epoch_start_offset),
      hw_(high_watermark),
      leader_durable_end_(epoch_start_offset) {
  for (int32_t r : replicas_) {
    if (r == self_) continue;
    Follower f;
    // A follower in the ISR gets the full lag time to fetch from the new leader.
    f.last_caught_up_ms = in_isr(r) ? now_ms : 0;
    followers_[r] = f;
  }
}

void LeaderState::set_replicas(std::vector<int32_t> replicas) {
  for (auto it = followers_.begin(); it != followers_.end();) {
    it = std::find(replicas.begin(), replicas.end(), it->first) == replicas.end()
             ? followers_.erase(it)
             : std::next(it);
  }
  for (int32_t r : replicas) {
    if (r != self_) followers_.try_emplace(r);
  }
  replicas_ = std::move(replicas);
}

bool LeaderState::in_isr(int32_t replica) const {
  return std::find(isr_.begin(), isr_.end(), replica) != isr_.end();
}

std::optional<int64_t> LeaderState::position(int32_t replica) const {
  if (replica == self_) return leader_durable_end_;
  auto it = followers_.find(replica);
  if (it == followers_.end() || it->second.position < 0) return std::nullopt;
  return it->second.position;
}

void LeaderState::on_leader_durable_end(int64_t durable_end) {
  leader_durable_end_ = std::max(leader_durable_end_, durable_end);
  advance_hw();
}

void LeaderState::on_follower_fetch(int32_t replica, int64_t fetch_offset, int64_t leader_log_end,
                                    int64_t now_ms, bool state_pending) {
  auto it = followers_.find(replica);
  if (it == followers_.end()) return;  // not a replica of this partition
  Follower& f = it->second;
  f.state_pending = state_pending;
  if (state_pending) {
    // Its position still bounds the high watermark while it is in the ISR; it is not caught up.
    f.position = fetch_offset;
    f.last_fetch_ms = now_ms;
    f.last_fetch_leader_end = -1;  // the next fetch does not inherit this one as caught up
    advance_hw();
    return;
  }
  if (fetch_offset >= leader_log_end) {
    f.last_caught_up_ms = std::max(f.last_caught_up_ms, now_ms);
  } else if (f.last_fetch_leader_end >= 0 && fetch_offset >= f.last_fetch_leader_end) {
    f.last_caught_up_ms = std::max(f.last_caught_up_ms, f.last_fetch_ms);
  }
  f.position = fetch_offset;
  f.last_fetch_ms = now_ms;
  f.last_fetch_leader_end = leader_log_end;
  advance_hw();
}

void LeaderState::advance_hw() {
  int64_t hw = leader_durable_end_;
  for (int32_t r : isr_) {
    if (r == self_) continue;
    auto it = followers_.find(r);
    if (it == followers_.end() || it->second.position < 0) return;  // not heard from yet
    hw = std::min(hw, it->second.position);
  }
  hw_ = std::max(hw_, hw);
}

std::optional<std::vector<int32_t>> LeaderState::shrink_candidate(int64_t now_ms,
                                                                  int64_t lag_max_ms) const {
  std::vector<int32_t> next;
  for (int32_t r : isr_) {
    if (r != self_) {
      auto it = followers_.find(r);
      // A member whose state went pending leaves at once: it could not serve as the leader.
      if (it != followers_.end() &&
          (it->second.state_pending || now_ms - it->second.last_caught_up_ms > lag_max_ms)) {
        continue;
      }
    }
    next.push_back(r);
  }
  if (next.size() == isr_.size()) return std::nullopt;
  return next;
}

std::optional<std::vector<int32_t>> LeaderState::expand_candidate() const {
  std::vector<int32_t> next = isr_;
  for (const auto& [r, f] : followers_) {
    if (in_isr(r) || f.position < 0 || f.state_pending) continue;
    if (f.position >= hw_ && f.position >= epoch_start_) next.push_back(r);
  }
  if (next.size() == isr_.size()) return std::nullopt;
  return next;
}

void LeaderState::set_isr(std::vector<int32_t> isr) {
  isr_ = std::move(isr);
  advance_hw();
}

}  // namespace strata::broker::cluster
