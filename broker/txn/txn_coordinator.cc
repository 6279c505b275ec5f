#include "broker/txn/txn_coordinator.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>

#include "broker/group/group_records.h"
#include "broker/topics/topic_registry.h"
#include "broker/txn/txn_records.h"

namespace strata::broker::txn {

namespace {
void run_all(std::vector<std::function<void()>>& fns) {
  for (auto& f : fns) f();
}

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

TxnCoordinator::TxnCoordinator(TxnLimits limits, TxnEffects& effects, int64_t id_expiration_ms,
                               group::GroupJournal* journal, TxnClusterMode cluster)
    : limits_(limits),
      effects_(effects),
      id_expiration_ms_(id_expiration_ms),
      journal_(journal),
      cluster_(cluster.enabled),
      mode_(cluster) {
  if (cluster_ && mode_.marker_thread) marker_thread_ = std::thread([this] { marker_worker(); });
}

std::shared_ptr<TxnCoordinator::Entry> TxnCoordinator::entry(const std::string& txn_id,
                                                             bool create) {
  const int32_t p = partition_for(txn_id);
  std::lock_guard l(mu_);
  auto it = entries_.find(txn_id);
  if (it != entries_.end()) return it->second;
  if (!create) return nullptr;
  int32_t epoch = 0;
  if (cluster_) {
    auto o = owned_.find(p);
    if (o == owned_.end() || !o->second.loaded) return nullptr;
    epoch = o->second.epoch;
  }
  auto e = std::make_shared<Entry>(txn_id, limits_);
  e->partition = p;
  e->coordinator_epoch = epoch;
  entries_.emplace(txn_id, e);
  return e;
}

TxnError TxnCoordinator::missing(const std::string& txn_id) {
  const TxnError o = owner_error(txn_id);
  return o != TxnError::none ? o : TxnError::invalid_producer_id_mapping;
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
}

void TxnCoordinator::changed(Entry& e) {
  ++e.version;
  persist(e);
}

void TxnCoordinator::persist(Entry& e) {
  if (e.writing >= e.version) return;
  const uint64_t v = e.version;
  e.writing = v;
  if (!journal_) {
    e.durable = v;
    return;
  }
  // A full snapshot of the id: its state, and the offsets of its open transaction (a tombstone
  // once none is open) in the same batch, so a load never pairs a state with another
  // transaction's offsets.
  const TxnMetadata& m = e.sm.metadata();
  std::vector<group::JournalRecord> recs;
  recs.push_back({records::state_key(e.id), records::encode_state(m, e.last_used_ms)});
  group::JournalRecord offsets{records::offsets_key(e.id), std::nullopt};
  if (is_open(m.state)) offsets.value = records::encode_offsets(e.offsets);
  recs.push_back(std::move(offsets));
  journal_->append(e.partition, std::move(recs),
                   [this, self = e.shared_from_this(), v](protocol::ErrorCode err, int64_t) {
                     on_written(self, v, err == protocol::ErrorCode::none);
                   });
}

void TxnCoordinator::on_written(const std::shared_ptr<Entry>& e, uint64_t version, bool ok) {
  std::vector<std::function<void()>> run;
  {
    std::lock_guard l(e->mu);
    if (ok) {
      e->durable = std::max(e->durable, version);
    } else {
      spdlog::warn("transactional id '{}': writing its state to {} failed; retried", e->id,
                   kTransactionStateTopic);
      if (e->writing == version) e->writing = e->durable;  // the next request or sweep rewrites
      // An EndTxn whose Prepare* state was not written: it retries (CONCURRENT_TRANSACTIONS
      // until the rewrite and the markers are done, then success).
      if (is_prepare(e->sm.metadata().state) && e->durable < e->version) {
        for (auto& a : e->end_waiters) {
          run.push_back([a = std::move(a)] { a(TxnError::coordinator_not_available); });
        }
        e->end_waiters.clear();
      }
    }
    auto ready = ready_waiters(*e, ok ? 0 : version);
    run.insert(run.end(), std::make_move_iterator(ready.begin()),
               std::make_move_iterator(ready.end()));
    if (ok) {
      auto more = advance(*e);
      run.insert(run.end(), std::make_move_iterator(more.begin()),
                 std::make_move_iterator(more.end()));
    }
  }
  run_all(run);
}

std::vector<std::function<void()>> TxnCoordinator::ready_waiters(Entry& e,
                                                                 uint64_t failed_version) {
  std::vector<std::function<void()>> out;
  auto it = e.waiters.begin();
  while (it != e.waiters.end()) {
    TxnError answer;
    if (it->first <= e.durable) {
      answer = TxnError::none;
    } else if (it->first <= failed_version) {
      answer = TxnError::coordinator_not_available;
    } else {
      ++it;
      continue;
    }
    out.push_back([a = std::move(it->second), answer] { a(answer); });
    it = e.waiters.erase(it);
  }
  return out;
}

std::vector<std::function<void()>> TxnCoordinator::advance(Entry& e) {
  if (!is_prepare(e.sm.metadata().state) || e.durable < e.version) return {};
  if (!cluster_) return write_markers(e);
  if (!e.markers_queued) {
    e.markers_queued = true;
    std::lock_guard l(marker_mu_);
    marker_jobs_.emplace_back(steady_ms(), e.shared_from_this());
    marker_cv_.notify_one();
  }
  return {};
}

std::vector<std::function<void()>> TxnCoordinator::write_markers(Entry& e) {
  std::vector<std::function<void()>> out;
  auto waiters = std::make_shared<std::vector<Answer>>(std::move(e.end_waiters));
  e.end_waiters.clear();
  auto answer = [waiters] {
    for (auto& a : *waiters) a(TxnError::none);
  };
  const bool commit = e.sm.metadata().state == TxnState::prepare_commit;
  if (!complete(e, answer)) {
    spdlog::warn("transactional id '{}': some {} markers failed; the sweep retries them", e.id,
                 commit ? "COMMIT" : "ABORT");
    out.push_back(answer);  // the decision is durable: EndTxn succeeded
  }
  return out;
}

bool TxnCoordinator::complete(Entry& e, std::function<void()> done) {
  const TxnMetadata& m = e.sm.metadata();
  const bool commit = m.state == TxnState::prepare_commit;
  bool all = true;
  std::vector<TopicPartition> todo;
  for (const auto& tp : m.partitions) {
    if (!e.markers_done.count(tp)) todo.push_back(tp);
  }
  const std::vector<bool> written =
      effects_.write_markers(todo, m.producer_id, m.producer_epoch, commit, e.coordinator_epoch);
  for (size_t i = 0; i < todo.size(); ++i) {
    if (i < written.size() && written[i]) {
      e.markers_done.insert(todo[i]);
    } else {
      all = false;
    }
  }
  if (!all) return false;
  e.markers_done.clear();
  e.sm.markers_written();
  if (!commit) {
    for (const auto& [group, parts] : e.offsets) effects_.abort_offsets(group, m.producer_id);
    drop_offsets(e);
    changed(e);
    if (done) done();
    return true;
  }
  // The offsets become visible once durable; until then require_stable fetches still see them
  // pending. `done` runs after the last group's commit. The Complete state is written after the
  // commit was handed over: lost, a load would only write the same markers and offsets again.
  auto offsets = std::move(e.offsets);
  e.offsets.clear();
  changed(e);
  size_t groups = 0;
  for (const auto& [group, parts] : offsets) groups += parts.empty() ? 0 : 1;
  if (groups == 0) {
    if (done) done();
    return true;
  }
  auto remaining = std::make_shared<std::atomic<size_t>>(groups);
  auto finish = std::make_shared<std::function<void()>>(std::move(done));
  for (auto& [group, parts] : offsets) {
    if (parts.empty()) continue;
    std::vector<PendingOffset> list;
    std::vector<TopicPartition> tps;
    for (auto& [tp, o] : parts) {
      tps.push_back(tp);
      list.push_back(std::move(o));
    }
    effects_.commit_offsets(group, m.producer_id, std::move(list),
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
  std::vector<std::function<void()>> run;
  {
    auto [e, l] = held(txn_id, true);
    if (!e) {
      r.error = missing(txn_id);
      return r;
    }
    e->last_used_ms = now_ms;
    const TxnMetadata& m = e->sm.metadata();
    if (expected_producer_id >= 0 || expected_epoch >= 0) {
      // A v3+ producer resuming: it must still be the id's producer.
      if (m.producer_id < 0) {
        r.error = TxnError::invalid_producer_id_mapping;
        return r;
      }
      if (expected_producer_id == m.producer_id && expected_epoch != m.producer_epoch &&
          expected_epoch == e->last_epoch && !is_open(m.state)) {
        r.producer_id = m.producer_id;  // a retry of the bump: answered once that is durable
        r.producer_epoch = m.producer_epoch;
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
    const TxnMetadata before = m;
    TxnOutcome o = e->sm.init_producer_id(timeout_ms, *id, now_ms);
    if (!(m == before)) changed(*e);
    if (o.error == TxnError::none) {
      e->last_epoch = m.producer_id == before.producer_id ? before.producer_epoch : -1;
    } else if (o.write_markers_commit) {
      e->last_epoch = -1;  // the fencing abort of an earlier instance
    }
    // An earlier instance's transaction is aborted with a bumped epoch (fencing it) once that is
    // durable; the client retries on concurrent_transactions and gets the next epoch.
    if (o.write_markers_commit) run = advance(*e);
    r.error = o.error;
    if (r.error == TxnError::none) {
      r.producer_id = m.producer_id;
      r.producer_epoch = m.producer_epoch;
    }
  }
  run_all(run);
  return r;
}

TxnError TxnCoordinator::add_partitions(const std::string& txn_id, int64_t producer_id,
                                        int16_t epoch,
                                        const std::vector<TopicPartition>& partitions,
                                        int64_t now_ms) {
  auto [e, l] = held(txn_id, false);
  if (!e) return missing(txn_id);
  e->last_used_ms = now_ms;
  const TxnMetadata before = e->sm.metadata();
  TxnOutcome o = e->sm.add_partitions(producer_id, epoch, partitions, now_ms);
  if (o.error == TxnError::none && before.state != TxnState::ongoing) {
    e->offsets.clear();  // a new transaction
    e->added_in.clear();
  }
  if (!(e->sm.metadata() == before)) {
    changed(*e);
    for (const auto& tp : partitions) e->added_in.try_emplace(tp, e->version);
  }
  return o.error;
}

TxnError TxnCoordinator::add_offsets(const std::string& txn_id, int64_t producer_id, int16_t epoch,
                                     const std::string& group, int64_t now_ms) {
  auto [e, l] = held(txn_id, false);
  if (!e) return missing(txn_id);
  e->last_used_ms = now_ms;
  const TxnMetadata before = e->sm.metadata();
  TxnOutcome o = e->sm.add_partitions(producer_id, epoch, {}, now_ms);
  if (o.error != TxnError::none) return o.error;
  if (before.state != TxnState::ongoing) {
    e->offsets.clear();
    e->added_in.clear();
  }
  const bool added = e->offsets.try_emplace(group).second;
  if (added || !(e->sm.metadata() == before)) changed(*e);
  return TxnError::none;
}

TxnError TxnCoordinator::commit_offsets(const std::string& txn_id, const std::string& group,
                                        int64_t producer_id, int16_t epoch,
                                        std::vector<PendingOffset> offsets) {
  auto [e, l] = held(txn_id, false);
  if (!e) return missing(txn_id);
  if (auto o = e->sm.check_producer(producer_id, epoch); o.error != TxnError::none) {
    return o.error;
  }
  auto slot_it = e->offsets.find(group);
  if (e->sm.metadata().state != TxnState::ongoing || slot_it == e->offsets.end()) {
    return TxnError::invalid_txn_state;
  }
  auto& slot = slot_it->second;
  std::vector<TopicPartition> added;
  for (auto& o : offsets) {
    TopicPartition tp{o.topic, o.partition};
    if (!slot.count(tp)) added.push_back(tp);
    slot[tp] = std::move(o);
  }
  changed(*e);
  std::lock_guard pl(pending_mu_);
  for (const auto& tp : added) ++pending_[group][tp];
  return TxnError::none;
}

void TxnCoordinator::end_txn(const std::string& txn_id, int64_t producer_id, int16_t epoch,
                             bool commit, Answer done) {
  std::vector<std::function<void()>> run;
  {
    auto [e, l] = held(txn_id, false);
    if (!e) return done(missing(txn_id));
    persist(*e);  // a write that failed: its retry
    TxnOutcome o = e->sm.end_txn(producer_id, epoch, commit);
    if (o.error != TxnError::none) {
      l.unlock();
      return done(o.error);
    }
    if (!o.write_markers_commit) {  // a retry after completion: answered once that is durable
      e->waiters.emplace_back(e->version, std::move(done));
      persist(*e);
      run = ready_waiters(*e, 0);
    } else {
      changed(*e);
      e->end_waiters.push_back(std::move(done));
      run = advance(*e);
    }
  }
  run_all(run);
}

void TxnCoordinator::when_durable(const std::string& txn_id, Answer done) {
  std::vector<std::function<void()>> run;
  {
    auto [e, l] = held(txn_id, false);
    if (!e) return done(owner_error(txn_id));  // none for an unknown id
    e->waiters.emplace_back(e->version, std::move(done));
    persist(*e);  // after a failed write, this request's retry writes it again
    run = ready_waiters(*e, 0);
  }
  run_all(run);
}

TxnError TxnCoordinator::append_in_txn(const std::string& txn_id, int64_t producer_id,
                                       int16_t epoch, const TopicPartition& tp,
                                       const std::function<void()>& append) {
  auto [e, l] = held(txn_id, false);
  if (!e) return missing(txn_id);
  if (auto o = e->sm.check_producer(producer_id, epoch); o.error != TxnError::none) {
    return o.error;
  }
  const TxnMetadata& m = e->sm.metadata();
  if (m.state != TxnState::ongoing || !m.partitions.count(tp)) return TxnError::invalid_txn_state;
  // A client sends a partition's batches only after AddPartitionsToTxn was answered, i.e. durable.
  if (auto a = e->added_in.find(tp); a != e->added_in.end() && a->second > e->durable) {
    return TxnError::invalid_txn_state;
  }
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
  std::vector<std::pair<int32_t, uint64_t>> reload;  // partitions whose load failed
  {
    std::lock_guard l(mu_);
    all.assign(entries_.begin(), entries_.end());
    for (auto& [p, o] : owned_) {
      if (!o.failed) continue;
      o.failed = false;
      reload.emplace_back(p, o.token = next_token_++);
    }
  }
  for (auto [p, token] : reload) {
    journal_->run_async([this, p = p, token = token] { load_owned(p, token); });
  }
  size_t aborted = 0;
  for (auto& [id, e] : all) {
    std::vector<std::function<void()>> run;
    {
      std::lock_guard l(e->mu);
      if (e->removed) continue;
      persist(*e);  // a write that failed earlier
      const TxnState s = e->sm.metadata().state;
      if (is_prepare(s)) {
        run = advance(*e);  // markers that failed earlier
      } else if (TxnOutcome o = e->sm.expire_if_timed_out(now_ms); o.write_markers_commit) {
        ++aborted;
        e->last_epoch = -1;  // fenced: the producer must start over
        spdlog::info(
            "transactional id '{}': transaction open longer than {} ms aborted, producer epoch "
            "now {}",
            id, e->sm.metadata().timeout_ms, e->sm.metadata().producer_epoch);
        changed(*e);
        run = advance(*e);
      } else if (!is_open(s) && id_expiration_ms_ > 0 &&
                 now_ms - e->last_used_ms > id_expiration_ms_ && e->waiters.empty() &&
                 e->durable >= e->version) {
        {
          std::lock_guard ml(mu_);  // order: an entry's mutex, then mu_ (nobody holds mu_ long)
          auto it = entries_.find(id);
          if (it != entries_.end() && it->second == e) entries_.erase(it);
        }
        e->removed = true;
        if (journal_) {  // tombstones: compaction drops the id
          journal_->append(
              e->partition,
              {{records::state_key(id), std::nullopt}, {records::offsets_key(id), std::nullopt}},
              [](protocol::ErrorCode, int64_t) {});
        }
        spdlog::info("transactional id '{}' expired (idle for {} ms)", id,
                     now_ms - e->last_used_ms);
      }
    }
    run_all(run);
  }
  return aborted;
}

std::optional<TxnMetadata> TxnCoordinator::describe(const std::string& txn_id) {
  auto [e, l] = held(txn_id, false);
  if (!e) return std::nullopt;
  return e->sm.metadata();
}

std::set<std::pair<int64_t, TopicPartition>> TxnCoordinator::open_transactions() {
  std::vector<std::shared_ptr<Entry>> all;
  {
    std::lock_guard l(mu_);
    for (const auto& [id, e] : entries_) all.push_back(e);
  }
  std::set<std::pair<int64_t, TopicPartition>> out;
  for (const auto& e : all) {
    std::lock_guard l(e->mu);
    const TxnMetadata& m = e->sm.metadata();
    if (!is_open(m.state)) continue;
    for (const auto& tp : m.partitions) out.emplace(m.producer_id, tp);
  }
  return out;
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
  {
    std::lock_guard l(marker_mu_);
    marker_stopping_ = true;
    marker_jobs_.clear();
  }
  marker_cv_.notify_all();
  if (marker_thread_.joinable()) marker_thread_.join();
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
