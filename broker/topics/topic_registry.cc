#include "broker/topics/topic_registry.h"

#include <spdlog/spdlog.h>

#include <cstring>

#include "broker/schema/table_schema.h"
#include "broker/topics/fd_budget.h"
#include "pkindex/column_stats.h"
#include "pkindex/pk_environment.h"
#include "pkindex/table_config.h"

namespace strata::broker {

bool valid_topic_name(std::string_view name) {
  return storage::LogManager::valid_topic_name(std::string(name));
}

TopicRegistry::TopicRegistry(storage::LogManager& logs, const BrokerConfig& config)
    : logs_(logs),
      registry_(std::make_shared<schema::RegistryHandle>()),
      defaults_(std::make_shared<const BrokerConfig>(config)),
      pk_open_files_(pkindex::PkEnvironment::Options{}.max_open_files_per_partition) {}

void TopicEntry::parse_table() {
  pk_table = pkindex::is_pk_table(configs);
  auto t = pkindex::parse_table_config(configs);
  table = t.ok() ? std::make_shared<const pkindex::TableConfig>(std::move(*t)) : nullptr;
}

std::shared_ptr<TopicEntry> TopicRegistry::make_entry(const storage::TopicMeta& meta,
                                                      const BrokerConfig& defaults) const {
  auto e = std::make_shared<TopicEntry>();
  e->name = meta.name;
  std::memcpy(e->id.bytes.data(), meta.topic_id.data(), meta.topic_id.size());
  e->configs = meta.configs;
  e->config = resolve_topic_config(e->configs, defaults);
  e->parse_table();
  if (!e->table) {
    // Its table.* keys were accepted at creation; a config that no longer parses (edited on
    // disk, or written by a newer broker) leaves the topic untyped: said once, at load.
    auto why = pkindex::parse_table_config(e->configs);
    spdlog::warn("topic {}: table configuration does not parse, typed reads and checks are off: {}",
                 e->name, why.ok() ? std::string("?") : why.status().message());
  }
  for (int32_t i = 0; i < meta.partitions; ++i)
    e->partitions.push_back(logs_.partition(e->name, i));
  if (!e->pk_table) {
    // A typed log topic; its column statistics are kept from the first append on (a PK table's
    // are set when its state opens: broker/pk/pk_tables.cc).
    if (e->table && e->table->typed()) {
      e->writers = schema::make_table_decoder(registry_, *e->table);
      e->json_log = !e->writers;
      auto summarizer =
          pkindex::stats::make_summarizer(*e->table, pkindex::stats::Rows::records, e->writers);
      for (auto& p : e->partitions) {
        if (p && summarizer && !p->has_batch_summarizer()) p->set_batch_summarizer(summarizer);
      }
    }
  }
  return e;
}

Status TopicRegistry::load() {
  auto defaults = broker_defaults();
  std::unique_lock lk(mu_);
  by_name_.clear();
  for (const auto& meta : logs_.list_topics()) {
    auto e = make_entry(meta, *defaults);
    for (auto& p : e->partitions) {
      if (!p) return Status(Errc::corruption, "topic " + e->name + " is missing a partition log");
    }
    by_name_[e->name] = std::move(e);
  }
  return Status::Ok();
}

std::shared_ptr<const TopicEntry> TopicRegistry::find(std::string_view name) const {
  std::shared_lock lk(mu_);
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::shared_ptr<const TopicEntry> TopicRegistry::find(const protocol::Uuid& id) const {
  std::shared_lock lk(mu_);
  for (const auto& [name, e] : by_name_) {
    if (e->id == id) return e;
  }
  return nullptr;
}

std::vector<std::shared_ptr<const TopicEntry>> TopicRegistry::list() const {
  std::shared_lock lk(mu_);
  std::vector<std::shared_ptr<const TopicEntry>> out;
  out.reserve(by_name_.size());
  for (const auto& [name, e] : by_name_) out.push_back(e);
  return out;
}

int64_t TopicRegistry::fd_estimate() const {
  const int64_t pk_files = pk_open_files_.load();
  int64_t n = 0;
  for (const auto& e : list()) {
    for (const auto& p : e->partitions) {
      const auto segments = static_cast<int64_t>(p->segment_base_offsets().size());
      n += partition_fd_estimate(segments, e->pk_table, pk_files);
    }
  }
  return n;
}

// Every partition costs file descriptors (segments, indexes) and, for PK tables, a RocksDB
// instance: the broker refuses to grow past max.broker.partitions, or past what its open files
// limit leaves, instead of running out of them in a segment roll or an accept later.
// create_mu_ held, so concurrent creations cannot both pass.
Status TopicRegistry::check_partition_cap(int64_t adding, bool pk) const {
  const auto defaults = broker_defaults();
  const int64_t cap = defaults->max_broker_partitions;
  int64_t total = 0;
  {
    std::shared_lock lk(mu_);
    for (const auto& [n, e] : by_name_) total += static_cast<int64_t>(e->partitions.size());
  }
  if (total + adding > cap) {
    return Status(Errc::too_large,
                  "the broker would hold " + std::to_string(total + adding) +
                      " partitions, more than max.broker.partitions=" + std::to_string(cap));
  }
  // A new partition has one segment.
  const int64_t each = partition_fd_estimate(1, pk, pk_open_files_.load());
  return check_fd_budget(fd_estimate(), adding * each, open_files_limit(),
                         defaults->open_files_reserved);
}

Result<std::shared_ptr<const TopicEntry>> TopicRegistry::create(
    const std::string& name, int32_t partitions, const std::map<std::string, std::string>& configs,
    bool validate_only, std::optional<protocol::Uuid> given_id) {
  if (!valid_topic_name(name)) return Status(Errc::invalid_argument, "invalid topic name " + name);
  if (partitions < 1) return Status(Errc::invalid_argument, "partitions must be at least 1");
  STRATA_RETURN_IF_ERROR(validate_topic_configs(configs));
  STRATA_RETURN_IF_ERROR(check_topic_config_floors(configs, *broker_defaults()));
  std::lock_guard create_lk(create_mu_);
  if (find(name)) return Status(Errc::already_exists, "topic " + name + " already exists");
  STRATA_RETURN_IF_ERROR(check_partition_cap(partitions, pkindex::is_pk_table(configs)));
  protocol::Uuid id = given_id ? *given_id : protocol::Uuid::random();
  if (validate_only) {
    auto e = std::make_shared<TopicEntry>();
    e->name = name;
    e->id = id;
    e->configs = configs;
    e->config = resolve_topic_config(configs, *broker_defaults());
    return std::shared_ptr<const TopicEntry>(e);
  }
  storage::TopicId tid;
  std::memcpy(tid.data(), id.bytes.data(), tid.size());
  auto meta = logs_.create_topic(name, partitions, configs, tid);
  if (!meta.ok()) return meta.status();
  auto e = make_entry(*meta, *broker_defaults());
  std::unique_lock lk(mu_);
  by_name_[name] = e;
  return std::shared_ptr<const TopicEntry>(e);
}

Status TopicRegistry::remove(const std::string& name) {
  std::lock_guard create_lk(create_mu_);
  {
    std::unique_lock lk(mu_);
    if (!by_name_.erase(name)) return Status(Errc::not_found, "unknown topic " + name);
  }
  // Requests already holding the entry keep their PartitionLog shared_ptrs alive; the files go now.
  return logs_.delete_topic(name);
}

// --- Admin ---

std::shared_ptr<const BrokerConfig> TopicRegistry::broker_defaults() const {
  std::shared_lock lk(mu_);
  return defaults_;
}

Result<std::shared_ptr<const TopicEntry>> TopicRegistry::alter_configs(
    const std::string& name, const std::map<std::string, std::string>& configs,
    bool validate_only) {
  std::lock_guard create_lk(create_mu_);
  auto old = find(name);
  if (!old) return Status(Errc::not_found, "unknown topic " + name);
  STRATA_RETURN_IF_ERROR(check_config_change(old->configs, configs));
  auto e = std::make_shared<TopicEntry>(*old);
  e->configs = configs;
  e->config = resolve_topic_config(configs, *broker_defaults());
  e->parse_table();  // the alterable table.* keys (snapshot interval) too
  if (validate_only) return std::shared_ptr<const TopicEntry>(e);
  auto meta = logs_.update_topic_configs(name, configs);
  if (!meta.ok()) return meta.status();
  std::unique_lock lk(mu_);
  by_name_[name] = e;
  return std::shared_ptr<const TopicEntry>(e);
}

Status TopicRegistry::check_config_change(const std::map<std::string, std::string>& current,
                                          const std::map<std::string, std::string>& next) const {
  // Read-only keys (the table.* keys, per-column ones included) keep their value: one added,
  // removed or changed is refused — first, so that a value nobody may set is never parsed.
  for (const auto* side : {&current, &next}) {
    for (const auto& [k, v] : *side) {
      const TopicKeyDef* def = find_topic_key(k);
      if (!def || !(def->flags & kConfigReadOnly)) continue;
      auto a = current.find(k);
      auto b = next.find(k);
      if (a == current.end() || b == next.end() || a->second != b->second) {
        return Status(Errc::invalid_argument, "Cannot alter read-only configuration " + k);
      }
    }
  }
  STRATA_RETURN_IF_ERROR(validate_topic_configs(next));
  return check_topic_config_floors(next, *broker_defaults(), current);
}

Result<std::shared_ptr<const TopicEntry>> TopicRegistry::add_partitions(const std::string& name,
                                                                        int32_t partitions,
                                                                        bool validate_only) {
  std::lock_guard create_lk(create_mu_);
  auto old = find(name);
  if (!old) return Status(Errc::not_found, "unknown topic " + name);
  const auto current = static_cast<int32_t>(old->partitions.size());
  if (partitions <= current) {
    return Status(Errc::invalid_argument,
                  partitions == current
                      ? "Topic already has " + std::to_string(current) + " partitions."
                      : "Topic currently has " + std::to_string(current) +
                            " partitions, which is higher than the requested " +
                            std::to_string(partitions) + ".");
  }
  STRATA_RETURN_IF_ERROR(check_partition_cap(partitions - current, old->pk_table));
  if (validate_only) return old;
  auto meta = logs_.add_partitions(name, partitions);
  if (!meta.ok()) return meta.status();
  auto e = make_entry(*meta, *broker_defaults());
  for (auto& p : e->partitions) {
    if (!p) return Status(Errc::corruption, "topic " + name + " is missing a new partition log");
  }
  e->counters = old->counters;  // the topic's metrics go on counting
  std::unique_lock lk(mu_);
  by_name_[name] = e;
  return std::shared_ptr<const TopicEntry>(e);
}

void TopicRegistry::set_broker_defaults(std::shared_ptr<const BrokerConfig> defaults) {
  std::lock_guard create_lk(create_mu_);
  std::vector<std::shared_ptr<TopicEntry>> updated;
  for (const auto& old : list()) {
    auto e = std::make_shared<TopicEntry>(*old);
    e->config = resolve_topic_config(e->configs, *defaults);
    for (auto& p : e->partitions) p->set_config(e->config.log);
    updated.push_back(std::move(e));
  }
  std::unique_lock lk(mu_);
  defaults_ = std::move(defaults);
  for (auto& e : updated) by_name_[e->name] = std::move(e);
}

}  // namespace strata::broker
