#include "broker/topic_registry.h"

#include <cstring>

namespace strata::broker {

bool valid_topic_name(std::string_view name) {
  return storage::LogManager::valid_topic_name(std::string(name));
}


TopicRegistry::TopicRegistry(storage::LogManager& logs, const BrokerConfig& config)
    : logs_(logs), config_(config) {}

std::shared_ptr<TopicEntry> TopicRegistry::make_entry(const storage::TopicMeta& meta) const {
  auto e = std::make_shared<TopicEntry>();
  e->name = meta.name;
  std::memcpy(e->id.bytes.data(), meta.topic_id.data(), meta.topic_id.size());
  e->configs = meta.configs;
  e->config = resolve_topic_config(e->configs, config_);
  for (int32_t i = 0; i < meta.partitions; ++i) e->partitions.push_back(logs_.partition(e->name, i));
  return e;
}

Status TopicRegistry::load() {
  std::unique_lock lk(mu_);
  by_name_.clear();
  for (const auto& meta : logs_.list_topics()) {
    auto e = make_entry(meta);
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

Result<std::shared_ptr<const TopicEntry>> TopicRegistry::create(
    const std::string& name, int32_t partitions, const std::map<std::string, std::string>& configs,
    bool validate_only) {
  if (!valid_topic_name(name)) return Status(Errc::invalid_argument, "invalid topic name " + name);
  if (partitions < 1) return Status(Errc::invalid_argument, "partitions must be at least 1");
  STRATA_RETURN_IF_ERROR(validate_topic_configs(configs));
  std::lock_guard create_lk(create_mu_);
  if (find(name)) return Status(Errc::already_exists, "topic " + name + " already exists");
  protocol::Uuid id = protocol::Uuid::random();
  if (validate_only) {
    auto e = std::make_shared<TopicEntry>();
    e->name = name;
    e->id = id;
    e->configs = configs;
    e->config = resolve_topic_config(configs, config_);
    return std::shared_ptr<const TopicEntry>(e);
  }
  storage::TopicId tid;
  std::memcpy(tid.data(), id.bytes.data(), tid.size());
  auto meta = logs_.create_topic(name, partitions, configs, tid);
  if (!meta.ok()) return meta.status();
  auto e = make_entry(*meta);
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

}  // namespace strata::broker
