#include "broker/cluster/replica_manager.h"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "broker/cluster/elections.h"
#include "broker/cluster/replica_fetcher.h"
#include "broker/topics/topic_registry.h"
#include "protocol/wire/uuid.h"
#include "storage/partition_log.h"

namespace strata::broker::cluster {

namespace {

using protocol::ErrorCode;

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool contains(const std::vector<int32_t>& v, int32_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

ReplicaManager::ReplicaManager(Coordination& coordination, Layout layout, TopicRegistry& topics,
                               Options options)
    : coordination_(coordination),
      layout_(std::move(layout)),
      topics_(topics),
      options_(std::move(options)) {}

ReplicaManager::~ReplicaManager() { stop(); }

void ReplicaManager::start(std::shared_ptr<const ClusterSnapshot> initial) {
  if (initial) apply(*initial);
  thread_ = std::thread([this] { loop(); });
}

void ReplicaManager::stop() {
  {
    std::lock_guard lk(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::map<int32_t, std::unique_ptr<ReplicaFetcher>> fetchers;
  std::vector<std::unique_ptr<ReplicaFetcher>> retired;
  {
    std::lock_guard flk(fetchers_mu_);
    fetchers.swap(fetchers_);
    retired.swap(retired_);
  }
  for (auto& [id, f] : fetchers) f->stop();
  for (auto& f : retired) f->stop();
  following_.clear();
}

void ReplicaManager::on_view(std::shared_ptr<const ClusterSnapshot> snapshot) {
  {
    std::lock_guard lk(mu_);
    if (!pending_ || snapshot->revision >= pending_->revision) pending_ = std::move(snapshot);
  }
  cv_.notify_all();
}

void ReplicaManager::loop() {
  // Kafka checks for lagging followers every replica.lag.time.max.ms / 2.
  const auto period = std::chrono::milliseconds(
      std::max<int64_t>(100, std::min<int64_t>(options_.replica_lag_time_max_ms / 2, 5000)));
  auto next_check = std::chrono::steady_clock::now() + period;
  for (;;) {
    std::shared_ptr<const ClusterSnapshot> s;
    bool expand = false;
    {
      std::unique_lock lk(mu_);
      cv_.wait_until(lk, next_check, [&] { return stopping_ || pending_ || expand_pending_; });
      if (stopping_) return;
      s = std::move(pending_);
      pending_.reset();
      expand = expand_pending_;
      expand_pending_ = false;
    }
    try {
      if (s) apply(*s);
      reap_retired_fetchers();
      const auto now = std::chrono::steady_clock::now();
      if (expand || now >= next_check) {
        check_isr(wall_ms());
        if (now >= next_check) next_check = now + period;
      }
    } catch (const std::exception& e) {
      // A failed step is retried with the next view or check; the thread must not die.
      spdlog::error("replica manager: {}", e.what());
    }
  }
}

std::shared_ptr<ReplicaManager::Leading> ReplicaManager::find(std::string_view topic,
                                                              int32_t partition) const {
  std::shared_lock lk(map_mu_);
  auto it = leading_.find(Key{std::string(topic), partition});
  return it == leading_.end() ? nullptr : it->second;
}

// --- what handlers ask ---

ErrorCode ReplicaManager::leader_check(std::string_view topic, int32_t partition,
                                       int32_t current_leader_epoch) const {
  if (auto l = find(topic, partition)) {
    std::lock_guard lk(l->mu);
    if (current_leader_epoch >= 0 && current_leader_epoch < l->role.leader_epoch) {
      return ErrorCode::fenced_leader_epoch;
    }
    if (current_leader_epoch > l->role.leader_epoch) return ErrorCode::unknown_leader_epoch;
    return ErrorCode::none;
  }
  std::shared_lock lk(map_mu_);
  if (!latest_) return ErrorCode::not_leader_or_follower;
  auto t = latest_->topics.find(std::string(topic));
  if (t == latest_->topics.end() || partition < 0 ||
      partition >= static_cast<int32_t>(t->second.replicas.size())) {
    return ErrorCode::unknown_topic_or_partition;
  }
  if (current_leader_epoch >= 0) {
    if (const auto* vp = latest_->partition(std::string(topic), partition)) {
      if (current_leader_epoch < vp->state.leader_epoch) return ErrorCode::fenced_leader_epoch;
    }
  }
  return ErrorCode::not_leader_or_follower;
}

ErrorCode ReplicaManager::min_isr_check(std::string_view topic, int32_t partition,
                                        int32_t min_isr) const {
  auto l = find(topic, partition);
  if (!l) return ErrorCode::not_leader_or_follower;
  std::lock_guard lk(l->mu);
  return static_cast<int32_t>(l->state.isr().size()) < min_isr ? ErrorCode::not_enough_replicas
                                                               : ErrorCode::none;
}

std::vector<int32_t> ReplicaManager::isr(std::string_view topic, int32_t partition) const {
  auto l = find(topic, partition);
  if (!l) return {};
  std::lock_guard lk(l->mu);
  return l->state.isr();
}

// Outside l.mu: the log's high-watermark listener applies PK states, and a PK write in progress
// (holding the state's write mutex) needs l.mu in on_log_end before it can finish.
// advance_high_watermark never moves backwards, so racing publishers are harmless.
void ReplicaManager::publish_hw(Leading& l) {
  int64_t hw = 0;
  {
    std::lock_guard lk(l.mu);
    hw = l.state.high_watermark();
  }
  if (hw > l.log->high_watermark()) l.log->advance_high_watermark(hw);
}

void ReplicaManager::on_follower_fetch(std::string_view topic, int32_t partition, int32_t replica,
                                       int64_t fetch_offset, int64_t leader_log_end,
                                       bool state_pending) {
  auto l = find(topic, partition);
  if (!l) return;
  bool expand = false;
  {
    std::lock_guard lk(l->mu);
    l->state.on_follower_fetch(replica, fetch_offset, leader_log_end, wall_ms(), state_pending);
    if (!l->expand_due && l->state.expand_candidate()) expand = l->expand_due = true;
  }
  publish_hw(*l);
  if (expand) {
    {
      std::lock_guard lk(mu_);
      expand_pending_ = true;
    }
    cv_.notify_all();
  }
}

void ReplicaManager::on_log_end(const storage::PartitionLog& log) {
  std::shared_ptr<Leading> l;
  {
    std::shared_lock lk(map_mu_);
    auto it = by_log_.find(&log);
    if (it == by_log_.end()) return;
    l = it->second;
  }
  {
    std::lock_guard lk(l->mu);
    l->state.on_leader_durable_end(log.durable_end_offset());
  }
  publish_hw(*l);
}

size_t ReplicaManager::movable_leaderships() const {
  std::shared_lock lk(map_mu_);
  size_t n = 0;
  for (const auto& [tp, l] : leading_) {
    std::lock_guard llk(l->mu);
    for (int32_t r : l->state.isr()) {
      if (r != options_.self && latest_ && latest_->brokers.count(r) &&
          !latest_->brokers.at(r).shutting_down) {
        ++n;
        break;
      }
    }
  }
  return n;
}

ReplicaManager::Stats ReplicaManager::stats() const {
  Stats out;
  out.leader_elections = leader_elections_.load(std::memory_order_relaxed);
  out.isr_shrinks = isr_shrinks_.load(std::memory_order_relaxed);
  out.isr_expands = isr_expands_.load(std::memory_order_relaxed);
  out.isr_write_conflicts = isr_write_conflicts_.load(std::memory_order_relaxed);
  out.fetched_bytes = retired_fetched_bytes_.load(std::memory_order_relaxed);
  out.fetch_errors = retired_fetch_errors_.load(std::memory_order_relaxed);
  {
    std::lock_guard flk(fetchers_mu_);
    for (const auto& [id, f] : fetchers_) {
      const auto c = f->counters();
      out.fetched_bytes += c.bytes;
      out.fetch_errors += c.errors;
    }
    for (const auto& f : retired_) {
      const auto c = f->counters();
      out.fetched_bytes += c.bytes;
      out.fetch_errors += c.errors;
    }
  }
  out.following = following_count_.load(std::memory_order_relaxed);
  std::shared_lock lk(map_mu_);
  for (const auto& [tp, l] : leading_) {
    Stats::Led led;
    led.topic = tp.first;
    led.partition = tp.second;
    const int64_t end = l->log->log_end_offset();
    std::lock_guard llk(l->mu);
    led.replicas = l->role.replicas.size();
    led.isr = l->state.isr().size();
    for (int32_t r : l->role.replicas) {
      if (r == options_.self) continue;
      auto pos = l->state.position(r);
      led.lag.emplace_back(r, pos ? std::max<int64_t>(0, end - *pos) : -1);
    }
    out.leading.push_back(std::move(led));
  }
  return out;
}

// Destroys the retired fetchers whose thread ended, keeping their counters in the totals.
void ReplicaManager::reap_retired_fetchers() {
  std::lock_guard flk(fetchers_mu_);
  std::erase_if(retired_, [this](const auto& f) {
    if (!f->finished()) return false;
    const auto c = f->counters();
    retired_fetched_bytes_.fetch_add(c.bytes, std::memory_order_relaxed);
    retired_fetch_errors_.fetch_add(c.errors, std::memory_order_relaxed);
    return true;
  });
}

// --- applying the view (manager's thread, or start()) ---

void ReplicaManager::apply(const ClusterSnapshot& s) {
  Roles roles = roles_of(s, options_.self);
  RoleChanges changes = diff_roles(roles_, roles, s);
  for (const auto& name : changes.deleted_topics) delete_local_topic(name);
  ensure_local_topics(s);
  for (const auto& tp : changes.stop) {
    unfollow(tp);
    stop_leading(tp);
  }
  for (const auto& [tp, role] : changes.lead) lead(tp, role, s);
  for (const auto& [tp, role] : changes.follow) follow(tp, role, s);
  for (const auto& [tp, role] : changes.update) {
    if (auto l = find(tp.first, tp.second)) {
      {
        std::lock_guard lk(l->mu);
        const auto* vp = s.partition(tp.first, tp.second);
        // A view older than this leader's own last ISR write would undo it (and make it write
        // the same change again): keep what it wrote.
        if (vp && vp->mod_revision < l->mod_revision) continue;
        if (l->role.replicas != role.replicas) l->state.set_replicas(role.replicas);
        l->role = role;
        l->state.set_isr(role.isr);
        if (vp) l->mod_revision = vp->mod_revision;
      }
      publish_hw(*l);
    } else if (role.kind == PartitionRole::Kind::follower) {
      follow(tp, role, s);  // e.g. the leader's address became known
    }
  }
  // A leader whose partition key changed only by our own ISR write still needs its revision.
  {
    std::shared_lock lk(map_mu_);
    for (const auto& [tp, l] : leading_) {
      if (const auto* vp = s.partition(tp.first, tp.second)) {
        std::lock_guard llk(l->mu);
        l->mod_revision = std::max(l->mod_revision, vp->mod_revision);
      }
    }
  }
  roles_ = std::move(roles);
  std::unique_lock lk(map_mu_);
  latest_ = std::make_shared<const ClusterSnapshot>(s);
}

void ReplicaManager::ensure_local_topics(const ClusterSnapshot& s) {
  for (const auto& [name, record] : s.topics) {
    bool here = false;
    for (const auto& replicas : record.replicas) here = here || contains(replicas, options_.self);
    if (!here) continue;
    auto id = protocol::Uuid::parse(record.topic_id);
    if (!id) {
      spdlog::error("cluster: topic {} has an unreadable id '{}'; not created here", name,
                    record.topic_id);
      continue;
    }
    auto local = topics_.find(name);
    if (local && local->id != *id) {  // deleted and created again while we did not look
      delete_local_topic(name);
      local = nullptr;
    }
    const auto n = static_cast<int32_t>(record.replicas.size());
    if (!local) {
      auto created = topics_.create(name, n, record.configs, false, *id);
      if (!created.ok()) {
        spdlog::error("cluster: creating local topic {} failed: {}", name,
                      created.status().to_string());
      } else {
        spdlog::info("cluster: created local replica of topic {} ({} partitions)", name, n);
      }
    } else if (local->configs != record.configs) {  // AlterConfigs on any broker
      auto altered = topics_.alter_configs(name, record.configs, false);
      if (!altered.ok()) {
        spdlog::error("cluster: applying the configs of topic {} failed: {}", name,
                      altered.status().to_string());
      } else {
        spdlog::info("cluster: applied new configs of topic {}", name);
      }
    }
    if (local && static_cast<int32_t>(local->partitions.size()) < n) {
      auto grown = topics_.add_partitions(name, n, false);
      if (!grown.ok()) {
        spdlog::error("cluster: growing local topic {} to {} partitions failed: {}", name, n,
                      grown.status().to_string());
      }
    }
  }
}

void ReplicaManager::delete_local_topic(const std::string& name) {
  auto local = topics_.find(name);
  if (!local) return;
  for (int32_t p = 0; p < static_cast<int32_t>(local->partitions.size()); ++p) {
    unfollow(Key{name, p});
    stop_leading(Key{name, p});
  }
  for (auto it = roles_.begin(); it != roles_.end();) {
    it = it->first.first == name ? roles_.erase(it) : std::next(it);
  }
  if (options_.before_delete) options_.before_delete(*local);
  Status st = topics_.remove(name);
  if (!st.ok() && st.code() != Errc::not_found) {
    spdlog::error("cluster: deleting local topic {} failed: {}", name, st.to_string());
    return;
  }
  if (options_.after_delete) options_.after_delete(name);
  spdlog::info("cluster: deleted local replica of topic {}", name);
}

void ReplicaManager::lead(const Key& tp, const PartitionRole& role, const ClusterSnapshot& s) {
  unfollow(tp);
  stop_leading(tp);
  auto topic = topics_.find(tp.first);
  std::shared_ptr<storage::PartitionLog> log =
      topic && tp.second < static_cast<int32_t>(topic->partitions.size())
          ? topic->partitions[tp.second]
          : nullptr;
  if (!log) {
    spdlog::error("cluster: no local log for {}-{} to lead", tp.first, tp.second);
    return;
  }
  Status st = log->become_leader(role.leader_epoch);
  if (!st.ok()) {
    spdlog::error("cluster: {}-{} cannot become leader of epoch {}: {}", tp.first, tp.second,
                  role.leader_epoch, st.to_string());
    return;
  }
  if (options_.on_role) options_.on_role(tp.first, tp.second, true);
  LeaderState state(options_.self, role.replicas, role.isr, log->log_end_offset(),
                    log->high_watermark(), wall_ms());
  auto l = std::make_shared<Leading>(log, role, std::move(state));
  if (const auto* vp = s.partition(tp.first, tp.second)) l->mod_revision = vp->mod_revision;
  {
    std::lock_guard lk(l->mu);
    l->state.on_leader_durable_end(log->durable_end_offset());
  }
  publish_hw(*l);
  {
    std::unique_lock lk(map_mu_);
    leading_[tp] = l;
    by_log_[log.get()] = l;
  }
  leader_elections_.fetch_add(1, std::memory_order_relaxed);
  spdlog::info("cluster: leading {}-{} in epoch {} from offset {} (isr {})", tp.first, tp.second,
               role.leader_epoch, log->log_end_offset(), fmt::join(role.isr, ","));
}

void ReplicaManager::stop_leading(const Key& tp) {
  std::unique_lock lk(map_mu_);
  auto it = leading_.find(tp);
  if (it == leading_.end()) return;
  by_log_.erase(it->second->log.get());
  leading_.erase(it);
}

void ReplicaManager::follow(const Key& tp, const PartitionRole& role, const ClusterSnapshot& s) {
  stop_leading(tp);
  unfollow(tp);
  if (options_.on_role) options_.on_role(tp.first, tp.second, false);
  if (role.kind != PartitionRole::Kind::follower) return;  // offline: wait for a leader
  auto broker = s.brokers.find(role.leader);
  if (broker == s.brokers.end()) return;  // its address comes with a later view
  auto topic = topics_.find(tp.first);
  std::shared_ptr<storage::PartitionLog> log =
      topic && tp.second < static_cast<int32_t>(topic->partitions.size())
          ? topic->partitions[tp.second]
          : nullptr;
  if (!log) return;
  std::unique_lock flk(fetchers_mu_);
  auto& fetcher = fetchers_[role.leader];
  if (!fetcher) {
    ReplicaFetcher::Options fo;
    fo.self_id = options_.self;
    fo.max_bytes = options_.fetch_max_bytes;
    fo.max_wait_ms = options_.fetch_wait_max_ms;
    fo.backoff_ms = options_.fetch_backoff_ms;
    fo.throttle = options_.throttle;
    fo.security = options_.security;
    fo.state_pending = options_.state_pending;
    std::string client_id("strata-replica-");
    client_id.append(std::to_string(options_.self));
    fo.client_id = std::move(client_id);
    fetcher =
        std::make_unique<ReplicaFetcher>(role.leader, broker->second.host, broker->second.port, fo);
  }
  fetcher->add(tp.first, tp.second, log, role.leader_epoch, contains(role.adding, options_.self));
  flk.unlock();
  following_[tp] = role.leader;
  following_count_.store(following_.size(), std::memory_order_relaxed);
  spdlog::info("cluster: following {}-{} from broker {} in epoch {}", tp.first, tp.second,
               role.leader, role.leader_epoch);
}

void ReplicaManager::unfollow(const Key& tp) {
  auto it = following_.find(tp);
  if (it == following_.end()) return;
  {
    std::lock_guard flk(fetchers_mu_);
    auto f = fetchers_.find(it->second);
    if (f != fetchers_.end()) {
      f->second->remove(tp.first, tp.second);
      if (f->second->size() == 0) {
        // Not joined here: a fetch from a leader that hangs (SIGSTOP) blocks its thread until the
        // request timeout, and this thread must meanwhile apply the view that replaced it.
        f->second->request_stop();
        retired_.push_back(std::move(f->second));
        fetchers_.erase(f);
      }
    }
  }
  following_.erase(it);
  following_count_.store(following_.size(), std::memory_order_relaxed);
}

// --- ISR changes ---

void ReplicaManager::check_isr(int64_t now_ms) {
  std::vector<std::pair<Key, std::shared_ptr<Leading>>> leaders;
  {
    std::shared_lock lk(map_mu_);
    leaders.assign(leading_.begin(), leading_.end());
  }
  for (auto& [tp, l] : leaders) {
    std::optional<std::vector<int32_t>> next;
    {
      std::lock_guard lk(l->mu);
      next = l->state.shrink_candidate(now_ms, options_.replica_lag_time_max_ms);
      // Expansions only after a fetch that reached the high watermark (on_follower_fetch sets
      // expand_due): a dead follower's last position may equal a high watermark that no longer
      // moves, and must not bring it back into the ISR.
      if (!next && l->expand_due) next = l->state.expand_candidate();
      l->expand_due = false;
    }
    if (next) write_isr(tp, *l, std::move(*next));
  }
}

bool ReplicaManager::write_isr(const Key& tp, Leading& l, std::vector<int32_t> isr) {
  PartitionState current;
  int64_t rev = 0;
  std::vector<int32_t> replicas;
  {
    std::lock_guard lk(l.mu);
    current.leader = l.role.leader;
    current.leader_epoch = l.role.leader_epoch;
    current.isr = l.state.isr();
    current.partition_epoch = l.role.partition_epoch;
    // An ISR change keeps a reassignment in progress as it is.
    current.adding_replicas = l.role.adding;
    current.removing_replicas = l.role.removing;
    rev = l.mod_revision;
    replicas = l.role.replicas;
  }
  auto next = change_isr(replicas, current, isr);
  if (!next) return false;
  const std::string key = layout_.partition(tp.first, tp.second);
  auto r =
      coordination_.txn({Compare::mod_revision_is(key, rev)}, {TxnOp::put(key, encode(*next))}, {});
  if (!r.ok() || !r->succeeded) {
    isr_write_conflicts_.fetch_add(1, std::memory_order_relaxed);
    // Someone else changed the partition (the controller, a new leader): the view brings it.
    spdlog::info("cluster: ISR change of {}-{} to [{}] not applied ({}); retried on the next view",
                 tp.first, tp.second, fmt::join(isr, ","),
                 r.ok() ? "lost the compare-and-swap" : r.status().to_string());
    return false;
  }
  {
    std::lock_guard lk(l.mu);
    if (l.role.leader_epoch != next->leader_epoch) return false;  // a newer term meanwhile
    l.role.isr = next->isr;
    l.role.partition_epoch = next->partition_epoch;
    l.mod_revision = r->revision;
    l.state.set_isr(next->isr);
  }
  spdlog::info("cluster: ISR of {}-{} [{}] -> [{}]", tp.first, tp.second,
               fmt::join(current.isr, ","), fmt::join(next->isr, ","));
  (next->isr.size() < current.isr.size() ? isr_shrinks_ : isr_expands_)
      .fetch_add(1, std::memory_order_relaxed);
  publish_hw(l);
  return true;
}

}  // namespace strata::broker::cluster
