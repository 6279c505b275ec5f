#include "broker/txn/txn_coordinator.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>

namespace strata::broker::txn {

std::shared_ptr<TxnCoordinator::Entry> TxnCoordinator::entry(const std::string& txn_id,
                                                             bool create) {
  std::lock_guard l(mu_);
  auto it = entries_.find(txn_id);
  if (it != entries_.end()) return it->second;
  if (!create) return nullptr;
  auto e = std::make_shared<Entry>(limits_);
  entries_.emplace(txn_id, e);
  return e;
}

TxnCoordinator::Held TxnCoordinator::held(const std::string& txn_id, bool create) {
  for (;;) {
    Held h;
    h.e = entry(txn_id, create);
    if (!h.e) return h;
    h.l = std::unique_lock(h.e->mu);
    if (!h.e->removed) return h;  // else expired meanwhile: look it up again
  }
}

void TxnCoordinator::release_pending(const std::string& group,
                                     const std::vector<TopicPartition>& tps) {
  std::lock_guard l(pending_mu_);
  auto g = pending_.find(group);
  if (g == pending_.end()) return;
  for (const auto& tp : tps) {
    auto it = g->second.find(tp);
    if (it != g->second.end() && --it->second <= 0) g->second.erase(it);
  }
  if (g->second.empty()) pending_.erase(g);
}

void TxnCoordinator::drop_offsets(Entry& e) {
  for (auto& [group, parts] : e.offsets) {
    std::vector<TopicPartition> tps;
    for (const auto& [tp, _] : parts) tps.push_back(tp);
    release_pending(group, tps);
  }
  e.offsets.clear();
  e.groups.clear();
}

bool TxnCoordinator::complete(Entry& e, std::function<void()> done) {
  const TxnMetadata& m = e.sm.metadata();
  const bool commit = m.state == TxnState::prepare_commit;
  bool all = true;
  for (const auto& tp : m.partitions) {
    if (e.markers_done.count(tp)) continue;
    if (effects_.write_marker(tp, m.producer_id, m.producer_epoch, commit)) {
      e.markers_done.insert(tp);
    } else {
      all = false;
    }
  }
  if (!all) return false;
  e.markers_done.clear();
  e.sm.markers_written();
  if (!commit) {
    drop_offsets(e);
    if (done) done();
    return true;
  }
  // The offsets become visible once durable; until then require_stable fetches still see them
  // pending. `done` runs after the last group's commit.
  auto offsets = std::move(e.offsets);
  e.offsets.clear();
  e.groups.clear();
  if (offsets.empty()) {
    if (done) done();
    return true;
  }
  auto remaining = std::make_shared<std::atomic<size_t>>(offsets.size());
  auto finish = std::make_shared<std::function<void()>>(std::move(done));
  for (auto& [group, parts] : offsets) {
    std::vector<PendingOffset> list;
    std::vector<TopicPartition> tps;
    for (auto& [tp, o] : parts) {
      tps.push_back(tp);
      list.push_back(std::move(o));
    }
    effects_.commit_offsets(group, std::move(list),
                            [this, group = group, tps = std::move(tps), remaining, finish]() {
                              release_pending(group, tps);
                              if (remaining->fetch_sub(1) == 1 && *finish) (*finish)();
                            });
  }
  return true;
}

InitResult TxnCoordinator::init_producer_id(const std::string& txn_id, int32_t timeout_ms,
                                            int64_t expected_producer_id, int16_t expected_epoch,
                                            int64_t now_ms) {
  InitResult r;
  auto [e, l] = held(txn_id, true);
  e->last_used_ms = now_ms;
  const TxnMetadata& m = e->sm.metadata();
  if (expected_producer_id >= 0 || expected_epoch >= 0) {
    // A v3+ producer resuming: it must still be the id's producer.
    if (m.producer_id < 0) {
      r.error = TxnError::invalid_producer_id_mapping;
      return r;
    }
    if (expected_producer_id != m.producer_id || expected_epoch != m.producer_epoch) {
      r.error = TxnError::producer_fenced;
      return r;
    }
  }
  auto id = effects_.new_producer_id();
  if (!id.ok()) {
    spdlog::error("allocating a producer id for transactional id '{}' failed: {}", txn_id,
                  id.status().to_string());
    r.no_producer_id = true;
    return r;
  }
  TxnOutcome o = e->sm.init_producer_id(timeout_ms, *id, now_ms);
  if (o.write_markers_commit) {
    // An earlier instance's transaction is aborted with a bumped epoch (fencing it); the client
    // retries on concurrent_transactions and gets the next epoch.
    complete(*e, nullptr);
  }
  r.error = o.error;
  if (r.error == TxnError::none) {
    r.producer_id = m.producer_id;
    r.producer_epoch = m.producer_epoch;
  }
  return r;
}

TxnError TxnCoordinator::add_partitions(const std::string& txn_id, int64_t producer_id,
                                        int16_t epoch,
                                        const std::vector<TopicPartition>& partitions,
                                        int64_t now_ms) {
  auto [e, l] = held(txn_id, false);
  if (!e) return TxnError::invalid_producer_id_mapping;
  e->last_used_ms = now_ms;
  const bool was_open = e->sm.metadata().state == TxnState::ongoing;
  TxnOutcome o = e->sm.add_partitions(producer_id, epoch, partitions, now_ms);
  if (o.error == TxnError::none && !was_open) {
    e->groups.clear();  // a new transaction
    e->offsets.clear();
  }
  return o.error;
}

TxnError TxnCoordinator::add_offsets(const std::string& txn_id, int64_t producer_id, int16_t epoch,
                                     const std::string& group, int64_t now_ms) {
  auto [e, l] = held(txn_id, false);
  if (!e) return TxnError::invalid_producer_id_mapping;
  e->last_used_ms = now_ms;
  const bool was_open = e->sm.metadata().state == TxnState::ongoing;
  TxnOutcome o = e->sm.add_partitions(producer_id, epoch, {}, now_ms);
  if (o.error != TxnError::none) return o.error;
  if (!was_open) {
    e->groups.clear();
    e->offsets.clear();
  }
  e->groups.insert(group);
  return TxnError::none;
}

TxnError TxnCoordinator::commit_offsets(const std::string& txn_id, const std::string& group,
                                        int64_t producer_id, int16_t epoch,
                                        std::vector<PendingOffset> offsets) {
  auto [e, l] = held(txn_id, false);
  if (!e) return TxnError::invalid_producer_id_mapping;
  if (auto o = e->sm.check_producer(producer_id, epoch); o.error != TxnError::none) {
    return o.error;
  }
  if (e->sm.metadata().state != TxnState::ongoing || !e->groups.count(group)) {
    return TxnError::invalid_txn_state;
  }
  auto& slot = e->offsets[group];
  std::vector<TopicPartition> added;
  for (auto& o : offsets) {
    TopicPartition tp{o.topic, o.partition};
    if (!slot.count(tp)) added.push_back(tp);
    slot[tp] = std::move(o);
  }
  std::lock_guard pl(pending_mu_);
  for (const auto& tp : added) ++pending_[group][tp];
  return TxnError::none;
}

void TxnCoordinator::end_txn(const std::string& txn_id, int64_t producer_id, int16_t epoch,
                             bool commit, std::function<void(TxnError)> done) {
  auto [e, l] = held(txn_id, false);
  if (!e) return done(TxnError::invalid_producer_id_mapping);
  TxnOutcome o = e->sm.end_txn(producer_id, epoch, commit);
  if (o.error != TxnError::none || !o.write_markers_commit) {
    l.unlock();
    return done(o.error);
  }
  auto shared_done = std::make_shared<std::function<void(TxnError)>>(std::move(done));
  if (!complete(*e, [shared_done] { (*shared_done)(TxnError::none); })) {
    spdlog::warn("transactional id '{}': some {} markers failed; the sweep retries them", txn_id,
                 commit ? "COMMIT" : "ABORT");
    l.unlock();
    (*shared_done)(TxnError::none);
  }
}

TxnError TxnCoordinator::append_in_txn(const std::string& txn_id, int64_t producer_id,
                                       int16_t epoch, const TopicPartition& tp,
                                       const std::function<void()>& append) {
  auto [e, l] = held(txn_id, false);
  if (!e) return TxnError::invalid_producer_id_mapping;
  if (auto o = e->sm.check_producer(producer_id, epoch); o.error != TxnError::none) {
    return o.error;
  }
  const TxnMetadata& m = e->sm.metadata();
  if (m.state != TxnState::ongoing || !m.partitions.count(tp)) return TxnError::invalid_txn_state;
  append();
  return TxnError::none;
}

bool TxnCoordinator::has_pending_offset(const std::string& group, const std::string& topic,
                                        int32_t partition) {
  std::lock_guard l(pending_mu_);
  auto g = pending_.find(group);
  return g != pending_.end() && g->second.count({topic, partition}) > 0;
}

size_t TxnCoordinator::sweep(int64_t now_ms) {
  std::vector<std::pair<std::string, std::shared_ptr<Entry>>> all;
  {
    std::lock_guard l(mu_);
    all.assign(entries_.begin(), entries_.end());
  }
  size_t aborted = 0;
  for (auto& [id, e] : all) {
    std::lock_guard l(e->mu);
    if (e->removed) continue;
    const TxnState s = e->sm.metadata().state;
    if (s == TxnState::prepare_commit || s == TxnState::prepare_abort) {
      complete(*e, nullptr);  // markers that failed earlier
      continue;
    }
    TxnOutcome o = e->sm.expire_if_timed_out(now_ms);
    if (!o.write_markers_commit) {
      const bool idle =
          s == TxnState::empty || s == TxnState::complete_commit || s == TxnState::complete_abort;
      if (idle && id_expiration_ms_ > 0 && now_ms - e->last_used_ms > id_expiration_ms_) {
        std::lock_guard ml(mu_);  // order: an entry's mutex, then mu_ (nobody holds mu_ long)
        auto it = entries_.find(id);
        if (it != entries_.end() && it->second == e) entries_.erase(it);
        e->removed = true;
        spdlog::info("transactional id '{}' expired (idle for {} ms)", id,
                     now_ms - e->last_used_ms);
      }
      continue;
    }
    ++aborted;
    spdlog::info(
        "transactional id '{}': transaction open longer than {} ms aborted, producer epoch "
        "now {}",
        id, e->sm.metadata().timeout_ms, e->sm.metadata().producer_epoch);
    complete(*e, nullptr);
  }
  return aborted;
}

std::optional<TxnMetadata> TxnCoordinator::describe(const std::string& txn_id) {
  auto [e, l] = held(txn_id, false);
  if (!e) return std::nullopt;
  return e->sm.metadata();
}

void TxnCoordinator::start(int64_t interval_ms) {
  sweeper_ = std::thread([this, interval_ms] {
    std::unique_lock l(sweep_mu_);
    while (!stopping_) {
      sweep_cv_.wait_for(l, std::chrono::milliseconds(interval_ms));
      if (stopping_) break;
      l.unlock();
      sweep(std::chrono::duration_cast<std::chrono::milliseconds>(
                std::chrono::system_clock::now().time_since_epoch())
                .count());
      l.lock();
    }
  });
}

void TxnCoordinator::stop() {
  {
    std::lock_guard l(sweep_mu_);
    stopping_ = true;
  }
  sweep_cv_.notify_all();
  if (sweeper_.joinable()) sweeper_.join();
}

std::vector<std::pair<std::string, TxnMetadata>> TxnCoordinator::list() {
  std::vector<std::pair<std::string, std::shared_ptr<Entry>>> all;
  {
    std::lock_guard l(mu_);
    all.assign(entries_.begin(), entries_.end());
  }
  std::vector<std::pair<std::string, TxnMetadata>> out;
  out.reserve(all.size());
  for (auto& [id, e] : all) {
    std::lock_guard l(e->mu);
    if (e->removed) continue;  // expired meanwhile
    out.emplace_back(id, e->sm.metadata());
  }
  return out;
}

}  // namespace strata::broker::txn
