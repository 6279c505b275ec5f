#include "broker/pk_tables.h"

#include <spdlog/spdlog.h>

#include <limits>

namespace strata::broker {

PkTables::PkTables(TopicRegistry& topics) : topics_(topics) {}

PkTables::~PkTables() { (void)close_all(); }

std::optional<pkindex::TableConfig> PkTables::table_config(const TopicEntry& topic) {
  if (!pkindex::is_pk_table(topic.configs)) return std::nullopt;
  auto t = pkindex::parse_table_config(topic.configs);
  if (!t.ok()) return std::nullopt;
  return *t;
}

Status PkTables::open_all() {
  for (const auto& t : topics_.list()) {
    if (!pkindex::is_pk_table(t->configs)) continue;
    for (int32_t p = 0; p < static_cast<int32_t>(t->partitions.size()); ++p) {
      auto s = get(*t, p);
      if (!s.ok()) return s.status();
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
  auto key = std::make_pair(
      std::string(reinterpret_cast<const char*>(topic.id.bytes.data()), topic.id.bytes.size()),
      partition);
  std::lock_guard lk(mu_);
  if (closed_) return Status(Errc::shutting_down, "primary-key tables are closed");
  if (auto it = states_.find(key); it != states_.end()) return it->second;
  auto table = pkindex::parse_table_config(topic.configs);
  if (!table.ok()) return table.status();
  pkindex::PkState::Options o;
  o.table = *table;
  o.partition = partition;
  o.partition_count = static_cast<int32_t>(topic.partitions.size());
  auto s = pkindex::PkState::open(env_, *log, o);
  if (!s.ok()) {
    spdlog::error("cannot open the state of {}-{}: {}", topic.name, partition,
                  s.status().to_string());
    return s.status();
  }
  std::shared_ptr<pkindex::PkState> state = std::move(*s);
  states_.emplace(key, state);
  return state;
}

void PkTables::drop(const TopicEntry& topic) {
  const std::string id(reinterpret_cast<const char*>(topic.id.bytes.data()), topic.id.bytes.size());
  std::lock_guard lk(mu_);
  auto it = states_.lower_bound({id, std::numeric_limits<int32_t>::min()});
  while (it != states_.end() && it->first.first == id) {
    auto lock = it->second->lock_writes();
    Status st = it->second->close();
    if (!st.ok()) spdlog::warn("closing the state of {}-{}: {}", topic.name, it->first.second,
                               st.to_string());
    lock.unlock();
    it = states_.erase(it);
  }
}

Status PkTables::close_all() {
  std::lock_guard lk(mu_);
  closed_ = true;
  Status first;
  for (auto& [key, s] : states_) {
    auto lock = s->lock_writes();
    Status st = s->close();
    if (!st.ok() && first.ok()) first = st;
  }
  states_.clear();
  return first;
}

}  // namespace strata::broker
