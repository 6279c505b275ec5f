// LogManager admin operations: durable topic config updates and partition growth
// (see log_manager.h).
#include "storage/file_names.h"
#include "storage/file_util.h"
#include "storage/log_manager.h"

namespace strata::storage {

Result<TopicInfo> LogManager::update_topic_configs(const std::string& name,
                                                   std::map<std::string, std::string> configs) {
  std::lock_guard<std::mutex> admin(admin_mu_);
  if (closed_) return Status(Errc::shutting_down, "log manager closed");
  TopicMeta meta;
  std::vector<std::shared_ptr<PartitionLog>> logs;
  {
    std::shared_lock<std::shared_mutex> lock(topics_mu_);
    auto it = topics_.find(name);
    if (it == topics_.end()) return Status(Errc::not_found, "no topic " + name);
    meta = it->second.meta;
    logs = it->second.partitions;
  }
  meta.configs = std::move(configs);
  STRATA_RETURN_IF_ERROR(store_->put(meta));
  {
    std::unique_lock<std::shared_mutex> lock(topics_mu_);
    topics_.at(name).meta.configs = meta.configs;
  }
  const LogConfig log_config = config_for_(meta);
  for (auto& log : logs) log->set_config(log_config);
  return meta;
}

Result<TopicInfo> LogManager::add_partitions(const std::string& name, int32_t partitions) {
  std::lock_guard<std::mutex> admin(admin_mu_);
  if (closed_) return Status(Errc::shutting_down, "log manager closed");
  TopicMeta old_meta;
  {
    std::shared_lock<std::shared_mutex> lock(topics_mu_);
    auto it = topics_.find(name);
    if (it == topics_.end()) return Status(Errc::not_found, "no topic " + name);
    old_meta = it->second.meta;
  }
  if (partitions <= old_meta.partitions) {
    return Status(Errc::invalid_argument,
                  "topic " + name + " has " + std::to_string(old_meta.partitions) +
                      " partitions; cannot change to " + std::to_string(partitions));
  }
  TopicMeta meta = old_meta;
  meta.partitions = partitions;
  STRATA_RETURN_IF_ERROR(store_->put(meta));

  std::vector<std::shared_ptr<PartitionLog>> logs;
  std::vector<std::string> dirs;
  std::vector<size_t> placed;
  Status failure;
  for (int32_t p = old_meta.partitions; p < partitions; ++p) {
    size_t d = least_loaded_dir();
    std::string dir = join_path(log_dirs_[d], partition_dir_name(name, p));
    if (env_->file_exists(dir)) {  // a stale directory of an earlier incarnation
      failure = env_->remove_dir_recursive(dir);
      if (!failure.ok()) break;
    }
    auto log = open_partition(meta, dir, /*create=*/true, config_for_(meta));
    if (!log.ok()) {
      failure = log.status();
      break;
    }
    ++dir_load_[d];
    placed.push_back(d);
    logs.push_back(std::move(*log));
    dirs.push_back(dir);
  }
  if (!failure.ok()) {
    // Roll back: the old metadata first (a restart then ignores the new directories), then them.
    (void)store_->put(old_meta);
    for (size_t i = 0; i < dirs.size(); ++i) {
      (void)env_->remove_dir_recursive(dirs[i]);
      --dir_load_[placed[i]];
    }
    return failure;
  }
  std::unique_lock<std::shared_mutex> lock(topics_mu_);
  auto& state = topics_.at(name);
  state.partitions.insert(state.partitions.end(), logs.begin(), logs.end());
  state.dirs.insert(state.dirs.end(), dirs.begin(), dirs.end());
  state.meta.partitions = partitions;
  return state.meta;
}

}  // namespace strata::storage
