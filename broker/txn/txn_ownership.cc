// TxnCoordinator, ownership half: which `__transaction_state` partitions this coordinator serves,
// their loading (a single node's start, or a cluster broker becoming a partition's leader), their
// release when leadership moves, and the cluster's marker worker.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "broker/group/group_records.h"
#include "broker/topics/topic_registry.h"
#include "broker/txn/txn_coordinator.h"
#include "broker/txn/txn_records.h"

namespace strata::broker::txn {

namespace {
int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}
int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

int32_t TxnCoordinator::partition_for(const std::string& txn_id) const {
  if (!journal_) return 0;
  int32_t n = partitions_cache_.load(std::memory_order_acquire);
  if (n <= 0) {
    // Asked before the count: once the topic exists the count read next is the topic's own, and
    // an id must never move to another partition than the one holding its records.
    const bool fixed = journal_->partitions_fixed();
    n = std::max(journal_->partitions(), 1);
    if (fixed) const_cast<std::atomic<int32_t>&>(partitions_cache_).store(n);
  }
  return group::partition_for_group(txn_id, n);
}

TxnError TxnCoordinator::owner_error(const std::string& txn_id) {
  if (!cluster_) return TxnError::none;
  const int32_t p = partition_for(txn_id);
  std::lock_guard l(mu_);
  auto it = owned_.find(p);
  if (it == owned_.end()) return TxnError::not_coordinator;
  return it->second.loaded ? TxnError::none : TxnError::coordinator_load_in_progress;
}

std::vector<int32_t> TxnCoordinator::owned_partitions() {
  std::vector<int32_t> out;
  std::lock_guard l(mu_);
  for (const auto& [p, o] : owned_) {
    if (o.loaded) out.push_back(p);
  }
  return out;
}

Result<std::vector<std::shared_ptr<TxnCoordinator::Entry>>> TxnCoordinator::read_partition(
    int32_t p, int64_t now_ms, LoadStats& stats) {
  struct Loaded {
    TxnMetadata m;
    int64_t last_update_ms = 0;
  };
  std::map<std::string, Loaded> states;
  std::map<std::string, records::TxnOffsets> offsets;
  STRATA_RETURN_IF_ERROR(journal_->replay(p, [&](const group::JournalRecord& r) -> Status {
    auto key = records::decode_key(r.key);
    if (!key) {
      ++stats.skipped;
      return Status::Ok();
    }
    if (key->kind == records::KeyKind::state) {
      Loaded l;
      if (!r.value) {
        states.erase(key->txn_id);
      } else if (records::decode_state(*r.value, l.m, l.last_update_ms)) {
        states[key->txn_id] = std::move(l);
      } else {
        ++stats.skipped;
        spdlog::error("{}-{}: the state of transactional id '{}' is unreadable; skipped",
                      kTransactionStateTopic, p, key->txn_id);
      }
    } else {
      records::TxnOffsets o;
      if (!r.value) {
        offsets.erase(key->txn_id);
      } else if (records::decode_offsets(*r.value, o)) {
        offsets[key->txn_id] = std::move(o);
      } else {
        ++stats.skipped;
        spdlog::error("{}-{}: the offsets of transactional id '{}' are unreadable; skipped",
                      kTransactionStateTopic, p, key->txn_id);
      }
    }
    return Status::Ok();
  }));
  std::vector<std::shared_ptr<Entry>> out;
  for (auto& [id, l] : states) {
    auto e = std::make_shared<Entry>(id, limits_);
    e->partition = p;
    e->sm.restore(l.m);
    e->last_used_ms = l.last_update_ms > 0 ? l.last_update_ms : now_ms;
    ++stats.ids;
    if (is_open(l.m.state)) {
      if (auto o = offsets.find(id); o != offsets.end()) e->offsets = std::move(o->second);
      ++(l.m.state == TxnState::ongoing ? stats.ongoing : stats.completed);
    }
    out.push_back(std::move(e));
  }
  return out;
}

void TxnCoordinator::install(std::vector<std::shared_ptr<Entry>> loaded) {
  std::vector<std::function<void()>> run;
  for (auto& e : loaded) {
    std::lock_guard g(e->mu);
    const TxnMetadata& m = e->sm.metadata();
    if (!is_open(m.state)) continue;
    {
      std::lock_guard pl(pending_mu_);
      for (const auto& [group, parts] : e->offsets) {
        for (const auto& [tp, _] : parts) ++pending_[group][tp];
      }
    }
    if (m.state == TxnState::ongoing) continue;
    spdlog::info("transactional id '{}': finishing its {} (producer {}, epoch {}, {} partitions)",
                 e->id, m.state == TxnState::prepare_commit ? "commit" : "abort", m.producer_id,
                 m.producer_epoch, m.partitions.size());
    auto more = advance(*e);
    run.insert(run.end(), std::make_move_iterator(more.begin()),
               std::make_move_iterator(more.end()));
  }
  for (auto& f : run) f();
}

Result<TxnCoordinator::LoadStats> TxnCoordinator::load(int64_t now_ms) {
  LoadStats stats;
  if (!journal_) return stats;
  const int32_t partitions = journal_->partitions();
  for (int32_t p = 0; p < partitions; ++p) {
    auto loaded = read_partition(p, now_ms, stats);
    if (!loaded.ok()) return loaded.status();
    {
      std::lock_guard l(mu_);
      for (const auto& e : *loaded) entries_[e->id] = e;
    }
    install(std::move(*loaded));
  }
  return stats;
}

void TxnCoordinator::own_partition(int32_t p, int32_t coordinator_epoch) {
  if (!cluster_ || !journal_ || p < 0) return;
  bool new_term = false;
  {
    std::lock_guard l(mu_);
    auto it = owned_.find(p);
    if (it != owned_.end()) {
      if (it->second.epoch == coordinator_epoch) return;
      new_term = true;  // led again in a later term: what was loaded carries the old epoch
    }
  }
  if (new_term) release_partition(p);
  uint64_t token = 0;
  {
    std::lock_guard l(mu_);
    Owned& o = owned_[p];
    o = Owned{};
    o.epoch = coordinator_epoch;
    token = o.token = next_token_++;
  }
  journal_->run_async([this, p, token] { load_owned(p, token); });
}

void TxnCoordinator::load_owned(int32_t p, uint64_t token) {
  {
    std::lock_guard l(mu_);
    auto it = owned_.find(p);
    if (it == owned_.end() || it->second.token != token) return;  // released or superseded
  }
  LoadStats stats;
  auto loaded = read_partition(p, wall_ms(), stats);
  {
    std::lock_guard l(mu_);
    auto it = owned_.find(p);
    if (it == owned_.end() || it->second.token != token) return;
    if (!loaded.ok()) {
      spdlog::error("loading {}-{} failed (the sweep retries): {}", kTransactionStateTopic, p,
                    loaded.status().to_string());
      it->second.failed = true;
      return;
    }
    for (const auto& e : *loaded) {
      e->coordinator_epoch = it->second.epoch;
      entries_[e->id] = e;
    }
    it->second.loaded = true;
    spdlog::info(
        "transaction coordinator for {}-{} (coordinator epoch {}): {} transactional id(s), {} "
        "ongoing, {} to finish{}",
        kTransactionStateTopic, p, it->second.epoch, stats.ids, stats.ongoing, stats.completed,
        stats.skipped ? fmt::format(", {} unreadable record(s) skipped", stats.skipped) : "");
  }
  install(std::move(*loaded));
}

void TxnCoordinator::release_partition(int32_t p) {
  if (!cluster_) return;
  std::vector<std::shared_ptr<Entry>> gone;
  {
    std::lock_guard l(mu_);
    if (owned_.erase(p) == 0) return;
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (it->second->partition != p) {
        ++it;
        continue;
      }
      it->second->removed = true;  // a request holding it looks it up again: not_coordinator
      gone.push_back(std::move(it->second));
      it = entries_.erase(it);
    }
  }
  spdlog::info("transaction coordinator for {}-{} moved away: {} transactional id(s) released",
               kTransactionStateTopic, p, gone.size());
  if (gone.empty()) return;
  // Waiting requests are answered and pending offsets dropped on the journal's worker: an entry's
  // mutex may be held by the marker worker for as long as a marker takes, and the caller (the
  // cluster's role change) must not wait for that. A later own_partition's load queues behind.
  journal_->run_async([this, gone = std::move(gone)] {
    for (const auto& e : gone) {
      std::vector<std::function<void()>> run;
      {
        std::lock_guard g(e->mu);
        drop_offsets(*e);
        for (auto& w : e->waiters) {
          run.push_back([a = std::move(w.second)] { a(TxnError::not_coordinator); });
        }
        e->waiters.clear();
        for (auto& a : e->end_waiters) {
          run.push_back([a = std::move(a)] { a(TxnError::not_coordinator); });
        }
        e->end_waiters.clear();
      }
      for (auto& f : run) f();
    }
  });
}

void TxnCoordinator::marker_worker() {
  std::unique_lock l(marker_mu_);
  while (!marker_stopping_) {
    if (marker_jobs_.empty()) {
      marker_cv_.wait(l);
      continue;
    }
    auto next = std::min_element(marker_jobs_.begin(), marker_jobs_.end(),
                                 [](const auto& a, const auto& b) { return a.first < b.first; });
    const int64_t now = steady_ms();
    if (next->first > now) {
      marker_cv_.wait_for(l, std::chrono::milliseconds(next->first - now));
      continue;
    }
    l.unlock();
    write_due_markers(now);
    l.lock();
  }
}

size_t TxnCoordinator::write_due_markers(int64_t now_steady_ms) {
  std::vector<std::shared_ptr<Entry>> due;
  {
    std::lock_guard l(marker_mu_);
    for (auto it = marker_jobs_.begin(); it != marker_jobs_.end();) {
      if (it->first > now_steady_ms) {
        ++it;
        continue;
      }
      due.push_back(std::move(it->second));
      it = marker_jobs_.erase(it);
    }
  }
  size_t tried = 0;
  for (auto& e : due) {
    std::vector<std::function<void()>> run;
    bool retry = false;
    {
      std::lock_guard g(e->mu);
      e->markers_queued = false;
      if (!e->removed) {  // else released: its new coordinator writes them
        ++tried;
        run = write_markers(*e);
        // Still Prepare*: a marker failed (its leader moved, a broker is down). Soon again; the
        // EndTxn was answered, the client's next request waits on CONCURRENT_TRANSACTIONS.
        retry = is_prepare(e->sm.metadata().state) && e->durable >= e->version;
        if (retry) e->markers_queued = true;
      }
    }
    for (auto& f : run) f();
    if (!retry) continue;
    std::lock_guard l(marker_mu_);
    if (!marker_stopping_) {
      marker_jobs_.emplace_back(steady_ms() + mode_.marker_retry_ms, std::move(e));
    }
  }
  return tried;
}

}  // namespace strata::broker::txn
