// GroupCoordinator, ownership half: which journal partitions this broker serves, their loading
// when it becomes their leader and the dropping of their groups when leadership moves.
#include <spdlog/spdlog.h>

#include <chrono>

#include "broker/group/group_coordinator.h"
#include "protocol/wire/errors.h"

namespace strata::broker::group {

namespace {
using protocol::ErrorCode;
}  // namespace

int32_t GroupCoordinator::partition_for(const std::string& group_id) const {
  return partition_for_group(group_id, partitions());
}

int32_t GroupCoordinator::partitions() const {
  if (!journal_) return 1;
  if (const int32_t n = partitions_cache_.load(std::memory_order_acquire); n > 0) return n;
  // Asked before the count: once the topic exists the count read next is the topic's own.
  const bool fixed = journal_->partitions_fixed();
  const int32_t n = std::max(journal_->partitions(), 1);
  if (fixed) partitions_cache_.store(n, std::memory_order_release);
  return n;
}

ErrorCode GroupCoordinator::owner_error(const std::string& group_id) const {
  if (stopped_) return ErrorCode::not_coordinator;
  auto it = owned_.find(partition_for(group_id));
  if (it == owned_.end()) return ErrorCode::not_coordinator;
  switch (it->second.state) {
    case Ownership::State::loaded:
      return ErrorCode::none;
    case Ownership::State::loading:
      return ErrorCode::coordinator_load_in_progress;
    case Ownership::State::none:
      break;
  }
  return ErrorCode::not_coordinator;
}

void GroupCoordinator::own_partition(int32_t p) {
  if (!journal_ || p < 0 || p >= partitions()) return;
  uint64_t token = 0;
  {
    Locked lk(*this);
    if (stopped_) return;
    Ownership& o = owned_[p];
    o.wanted = true;
    if (o.state != Ownership::State::none) return;
    o.state = Ownership::State::loading;
    token = o.token = next_token_++;
  }
  journal_->run_async([this, p, token] {
    Status st = load_partition(p, token);
    if (st.ok()) return;
    spdlog::error("loading group partition {} failed (retrying in 5 s): {}", p, st.to_string());
    timers_.schedule(5000, [this, p] { own_partition(p); });
  });
}

Status GroupCoordinator::own_all_now() {
  if (!journal_) return Status::Ok();
  for (int32_t p = 0; p < partitions(); ++p) {
    uint64_t token = 0;
    {
      Locked lk(*this);
      Ownership& o = owned_[p];
      o.wanted = true;
      if (o.state != Ownership::State::none) continue;
      o.state = Ownership::State::loading;
      token = o.token = next_token_++;
    }
    STRATA_RETURN_IF_ERROR(load_partition(p, token));
  }
  return Status::Ok();
}

Status GroupCoordinator::load_partition(int32_t p, uint64_t token) {
  const auto started = std::chrono::steady_clock::now();
  std::map<std::string, Group> loaded;
  size_t count = 0;
  Status st = journal_->replay(p, [&](const JournalRecord& r) {
    ++count;
    std::optional<std::string_view> value;
    if (r.value) value = *r.value;
    return records::apply(loaded, r.key, value);
  });
  Locked lk(*this);
  Ownership& o = owned_[p];
  if (o.token != token || o.state != Ownership::State::loading) return Status::Ok();  // released
  if (!st.ok()) {
    o.state = Ownership::State::none;
    if (!o.wanted) return Status::Ok();
    return st;
  }
  for (auto& [id, g] : loaded) {
    if (partition_for(id) != p) continue;  // not this partition's (a foreign record): ignore
    g.id = id;
    auto [it, fresh] = groups_.insert_or_assign(id, std::move(g));
    for (auto& [mid, m] : it->second.members) arm_session(it->second, m, m.session_timeout_ms);
  }
  o.state = Ownership::State::loaded;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - started)
                      .count();
  if (!loaded.empty() || count > 0) {
    spdlog::info("group partition {} loaded: {} groups from {} records in {} ms", p, loaded.size(),
                 count, ms);
  }
  return Status::Ok();
}

void GroupCoordinator::release_partition(int32_t p) {
  if (!journal_ || p < 0) return;
  Locked lk(*this);
  auto it_o = owned_.find(p);
  if (it_o == owned_.end()) return;
  Ownership& o = it_o->second;
  o.wanted = false;
  if (o.state == Ownership::State::none) return;
  o.state = Ownership::State::none;
  o.token = next_token_++;
  size_t dropped = 0;
  for (auto it = groups_.begin(); it != groups_.end();) {
    if (partition_for(it->first) != p) {
      ++it;
      continue;
    }
    drop_group(it->second, ErrorCode::not_coordinator);
    it = groups_.erase(it);
    ++dropped;
  }
  spdlog::info("group partition {} released ({} groups now served elsewhere)", p, dropped);
}

std::pair<size_t, size_t> GroupCoordinator::owned_partitions() {
  std::lock_guard l(mu_);
  std::pair<size_t, size_t> n{0, 0};
  for (const auto& [p, o] : owned_) {
    if (o.state == Ownership::State::loaded) ++n.first;
    if (o.state == Ownership::State::loading) ++n.second;
  }
  return n;
}

}  // namespace strata::broker::group
