#include "broker/pk/pk_tables.h"

#include <spdlog/spdlog.h>

#include <limits>
#include <utility>
#include <vector>

#include "pkindex/column_stats.h"

namespace strata::broker {

PkTables::PkTables(TopicRegistry& topics, bool replicated, pkindex::PkEnvironment::Options memory)
    : topics_(topics),
      env_(std::move(memory)),
      registry_(topics.registry_handle()),
      replicated_(replicated) {}

PkTables::~PkTables() { (void)close_all(); }

const pkindex::TableConfig* PkTables::table_config(const TopicEntry& topic) {
  return topic.pk_table ? topic.table.get() : nullptr;
}

Status PkTables::open_all() {
  for (const auto& t : topics_.list()) {
    if (!pkindex::is_pk_table(t->configs)) continue;
    for (int32_t p = 0; p < static_cast<int32_t>(t->partitions.size()); ++p) {
      (void)get(*t, p);  // a failing partition stays offline (logged), the broker starts
    }
    spdlog::info("opened primary-key table {} ({} partitions)", t->name, t->partitions.size());
  }
  return Status::Ok();
}

Result<std::shared_ptr<pkindex::PkState>> PkTables::get(const TopicEntry& topic,
                                                        int32_t partition) {
  if (!pkindex::is_pk_table(topic.configs)) return std::shared_ptr<pkindex::PkState>();
  storage::PartitionLog* log = topic.partition(partition);
  if (!log) return Status(Errc::not_found, "no partition " + std::to_string(partition));
  auto key = key_of(topic, partition);
  std::unique_lock lk(mu_);
  if (closed_) return Status(Errc::shutting_down, "primary-key tables are closed");
  if (auto it = states_.find(key); it != states_.end()) return it->second;
  if (dropped_.count(key.first)) {  // deleted: a request that raced DeleteTopics never reopens it
    return Status(Errc::not_found, "the primary-key table was deleted");
  }
  if (auto it = offline_.find(key); it != offline_.end()) {
    if (behind_.count(key) && behind_log_start_) behind_log_start_(topic.name, partition);
    return it->second;
  }
  auto table = pkindex::parse_table_config(topic.configs);
  if (!table.ok()) return table.status();
  pkindex::PkState::Options o;
  o.table = *table;
  o.partition = partition;
  o.partition_count = static_cast<int32_t>(topic.partitions.size());
  o.checkpoints_retained = tasks_.checkpoints_retained;
  o.replicated = replicated_;
  o.decoder = schema::make_table_decoder(registry_, *table);
  auto s = pkindex::PkState::open(env_, *log, o);
  if (!s.ok()) {
    spdlog::error("cannot open the state of {}-{}: {}; the partition is offline", topic.name,
                  partition, s.status().to_string());
    log->set_retention_bound([] { return int64_t{0}; });  // keep the whole log
    Status offline(Errc::io_error, "primary-key state offline: " + s.status().message());
    offline_.emplace(key, offline);
    // A replica whose log starts past anything it could rebuild from: the leader's checkpoint
    // can bring it up (copied, then retry_open).
    if (replicated_ && s.status().code() == Errc::corruption && log->log_start_offset() > 0) {
      behind_.insert(key);
      if (behind_log_start_) behind_log_start_(topic.name, partition);
    }
    return offline;
  }
  std::shared_ptr<pkindex::PkState> state = std::move(*s);
  states_.emplace(key, state);
  if (state->restored_from_checkpoint() >= 0) {
    spdlog::warn(
        "state of {}-{} did not match its log (ahead of it, or behind its start); restored from "
        "checkpoint {}",
        topic.name, partition, state->restored_from_checkpoint());
  }
  // Retention, compaction and DeleteRecords keep what the durable state still needs.
  log->set_retention_bound([w = std::weak_ptr<pkindex::PkState>(state)] {
    auto st = w.lock();
    return st ? st->retention_bound() : int64_t{0};
  });
  if (replicated_) {
    {
      std::unique_lock blk(by_log_mu_);
      by_log_[log] = ByLog{state, topic.name, partition};
    }
    // A state (re)opened after its role was given takes it again at once.
    if (auto r = leader_roles_.find({topic.name, partition}); r != leader_roles_.end()) {
      apply_role(*state, *log, r->second, topic.name, partition);
    }
  }
  lk.unlock();
  // table.statistics.columns: the batches appended from now on get their column statistics, and
  // the active segment's unsummarised ones now (up to a segment of work: not under mu_, which
  // every PK request takes).
  if (auto summarizer = pkindex::stats::make_summarizer(*table)) {
    log->set_batch_summarizer(std::move(summarizer));
  }
  return state;
}

void PkTables::apply_role(pkindex::PkState& state, const storage::PartitionLog& log, bool leader,
                          const std::string& topic, int32_t partition) {
  Status st = leader ? state.lead() : state.follow();
  if (st.ok()) st = state.apply_committed(log.high_watermark());
  if (!st.ok()) {
    spdlog::error("primary-key state of {}-{} as {}: {}", topic, partition,
                  leader ? "leader" : "follower", st.to_string());
  }
}

void PkTables::on_role(const std::string& topic, int32_t partition, bool leader) {
  auto t = topics_.find(topic);
  if (!t || !pkindex::is_pk_table(t->configs)) return;
  bool open = false;
  {
    std::lock_guard lk(mu_);
    leader_roles_[{topic, partition}] = leader;
    open = states_.count(key_of(*t, partition)) > 0;
  }
  // A state opened here (or by anyone from now on) takes the role as it opens: applying it
  // again would load the uncommitted tail twice.
  auto state = get(*t, partition);
  if (!open || !state.ok() || !*state) return;
  apply_role(**state, *t->partitions[partition], leader, topic, partition);
}

bool PkTables::retry_open(const std::string& topic, int32_t partition) {
  auto t = topics_.find(topic);
  if (!t) return true;
  {
    std::lock_guard lk(mu_);
    offline_.erase(key_of(*t, partition));
    behind_.erase(key_of(*t, partition));
  }
  auto state = get(*t, partition);  // takes its role as it opens
  if (state.ok() && *state) {
    spdlog::info("primary-key state of {}-{} open again (restored from checkpoint {})", topic,
                 partition, (*state)->restored_from_checkpoint());
  }
  return state.ok();  // an ok null state: not a PK table (any more)
}

void PkTables::on_high_watermark(const storage::PartitionLog& log, int64_t hw) {
  std::shared_ptr<pkindex::PkState> state;
  std::string topic;
  int32_t partition = 0;
  {
    std::shared_lock blk(by_log_mu_);
    auto it = by_log_.find(&log);
    if (it == by_log_.end()) return;
    state = it->second.state.lock();
    topic = it->second.topic;
    partition = it->second.partition;
  }
  if (!state) return;
  Status st = state->apply_committed(hw);
  if (st.ok()) return;
  if (st.code() != Errc::corruption) {
    spdlog::error("applying {}-{} up to {}: {}", topic, partition, hw, st.to_string());
    return;
  }
  // Ahead of its log (an unclean truncation): reopen, which restores a checkpoint below the log
  // end (or rebuilds from a log that starts at 0) and takes the role again.
  spdlog::warn("primary-key state of {}-{} is ahead of its log ({}); reopening it", topic,
               partition, st.message());
  auto t = topics_.find(topic);
  if (!t) return;
  const auto key = key_of(*t, partition);
  {
    std::lock_guard lk(mu_);
    auto it = states_.find(key);
    if (it == states_.end() || it->second != state) return;  // someone else did
    states_.erase(it);
  }
  (void)state->close();
  (void)get(*t, partition);
}

// Metrics: never opens a state, so a scrape has no side effects.
std::shared_ptr<pkindex::PkState> PkTables::find_open(const TopicEntry& topic, int32_t partition) {
  auto key = std::make_pair(
      std::string(reinterpret_cast<const char*>(topic.id.bytes.data()), topic.id.bytes.size()),
      partition);
  std::lock_guard lk(mu_);
  auto it = states_.find(key);
  return it == states_.end() ? nullptr : it->second;
}

// The states are taken out under mu_ and closed after releasing it: close() flushes RocksDB and
// waits for a running checkpoint, which must not stall get() (every PK produce/lookup/scan).
void PkTables::drop(const TopicEntry& topic) {
  const std::string id(reinterpret_cast<const char*>(topic.id.bytes.data()), topic.id.bytes.size());
  std::vector<std::pair<int32_t, std::shared_ptr<pkindex::PkState>>> closing;
  {
    std::lock_guard lk(mu_);
    std::erase_if(offline_, [&](const auto& e) { return e.first.first == id; });
    auto it = states_.lower_bound({id, std::numeric_limits<int32_t>::min()});
    while (it != states_.end() && it->first.first == id) {
      closing.emplace_back(it->first.second, std::move(it->second));
      it = states_.erase(it);
    }
    dropped_.insert(id);  // final: topic ids are never reused, so the entry stays
    std::erase_if(leader_roles_, [&](const auto& e) { return e.first.first == topic.name; });
  }
  if (replicated_) {
    std::unique_lock blk(by_log_mu_);
    for (const auto& log : topic.partitions) by_log_.erase(log.get());
  }
  for (auto& [partition, state] : closing) {
    Status st = state->close();  // waits for an in-flight write
    if (!st.ok())
      spdlog::warn("closing the state of {}-{}: {}", topic.name, partition, st.to_string());
  }
}

Status PkTables::close_all() {
  stop_tasks();  // the checkpoint thread first
  std::map<Key, std::shared_ptr<pkindex::PkState>> closing;
  {
    std::lock_guard lk(mu_);
    closed_ = true;  // later get() calls fail
    closing.swap(states_);
  }
  Status first;
  for (auto& [key, s] : closing) {
    Status st = s->close();
    if (!st.ok() && first.ok()) first = st;
  }
  return first;
}

Result<storage::PartitionLog::AppendInfo> PkTables::append_marker(
    const TopicEntry& topic, int32_t partition, storage::PartitionLog& log, int64_t producer_id,
    int16_t epoch, int32_t coordinator_epoch, bool commit, int64_t now_ms) {
  auto write = [&] {
    return log.append_marker(producer_id, epoch, coordinator_epoch, commit, now_ms);
  };
  if (!topic.pk_table) return write();
  auto state = get(topic, partition);
  if (!state.ok()) return state.status();
  auto r = (*state)->end_transaction(producer_id, commit, write);
  if (replicated_ && r.ok()) {
    // The high watermark may have moved inside the append (replication factor 1), where the
    // state could not apply: apply now, before the marker's answer.
    if (Status st = (*state)->apply_committed(log.high_watermark()); !st.ok()) {
      spdlog::error("applying {}-{} after a marker: {}", topic.name, partition, st.to_string());
    }
  }
  return r;
}

}  // namespace strata::broker
