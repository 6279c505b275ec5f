// LogManager (see log_manager.h).
#include "storage/log_manager.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <set>
#include <system_error>
#include <thread>

#include "protocol/wire/uuid.h"
#include "storage/file_names.h"
#include "storage/file_util.h"
#include "storage/meta_properties.h"

namespace strata::storage {
namespace {

int64_t wall_clock_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string partition_metadata_text(const TopicId& id) {
  protocol::Uuid uuid{id};
  return "version: 0\ntopic_id: " + uuid.to_string() + "\n";
}

// The topic id recorded in a partition directory; nullopt if the file is missing or malformed.
std::optional<TopicId> read_partition_topic_id(Env* env, const std::string& dir) {
  auto text = read_file_to_string(env, join_path(dir, kPartitionMetadata));
  if (!text.ok()) return std::nullopt;
  const std::string key = "topic_id: ";
  size_t at = text->find(key);
  if (at == std::string::npos) return std::nullopt;
  size_t end = text->find('\n', at);
  auto uuid = protocol::Uuid::parse(std::string_view(*text).substr(
      at + key.size(), end == std::string::npos ? std::string::npos : end - at - key.size()));
  if (!uuid) return std::nullopt;
  return uuid->bytes;
}

}  // namespace

bool LogManager::valid_topic_name(const std::string& name) {
  if (name.empty() || name.size() > 249 || name == "." || name == "..") return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

LogManager::~LogManager() { stop_write_back(); }

void LogManager::start_write_back(uint64_t bytes) {
  if (bytes == 0 || write_back_thread_.joinable()) return;
  write_back_thread_ = std::thread([this, bytes] {
    std::unique_lock lk(write_back_mu_);
    while (!write_back_cv_.wait_for(lk, std::chrono::milliseconds(100),
                                    [this] { return write_back_stop_; })) {
      lk.unlock();
      for (auto& log : all_partitions()) {
        {
          std::lock_guard stop(write_back_mu_);  // a closing broker does not wait for the pass
          if (write_back_stop_) return;
        }
        // Not the partition's failure: the writer's own fsync hears of a failed write.
        if (Status st = log->write_back_ahead(bytes); !st.ok()) {
          spdlog::warn("{}: background write-back: {}", log->dir(), st.to_string());
        }
      }
      lk.lock();
    }
  });
}

void LogManager::stop_write_back() {
  {
    std::lock_guard lk(write_back_mu_);
    write_back_stop_ = true;
  }
  write_back_cv_.notify_all();
  if (write_back_thread_.joinable()) write_back_thread_.join();
}

Result<std::unique_ptr<LogManager>> LogManager::open(
    Env* env, std::vector<std::string> log_dirs, int32_t node_id, ConfigFn config_for,
    std::shared_ptr<const PartitionLog::Listeners> listeners, int recovery_threads_per_dir) {
  if (log_dirs.empty()) return Status(Errc::invalid_argument, "no log dirs");
  if (!config_for) config_for = [](const TopicMeta&) { return LogConfig{}; };
  const size_t dirs = log_dirs.size();
  std::unique_ptr<LogManager> mgr(
      new LogManager(env, std::move(log_dirs), std::move(config_for), std::move(listeners)));
  mgr->recovery_threads_ = static_cast<size_t>(std::max(1, recovery_threads_per_dir)) * dirs;
  STRATA_RETURN_IF_ERROR(mgr->load(node_id));
  return mgr;
}

Status LogManager::load(int32_t node_id) {
  for (const auto& dir : log_dirs_) {
    STRATA_RETURN_IF_ERROR(env_->create_dir(dir));
  }
  auto cluster = ensure_meta_properties(env_, log_dirs_, node_id);
  if (!cluster.ok()) return cluster.status();
  cluster_id_ = *cluster;
  store_ = std::make_unique<TopicStore>(env_, log_dirs_.front());
  auto metas = store_->load_all();
  if (!metas.ok()) return metas.status();
  for (auto& meta : *metas) {
    TopicState state;
    state.partitions.resize(static_cast<size_t>(meta.partitions));
    state.dirs.resize(static_cast<size_t>(meta.partitions));
    state.meta = std::move(meta);
    names_by_id_[state.meta.topic_id] = state.meta.name;
    std::string name = state.meta.name;
    topics_.emplace(std::move(name), std::move(state));
  }

  // Find every partition directory; remove ones we created for topics that no longer exist
  // (a crash during delete_topic, or a topic re-created under the same name).
  dir_load_.assign(log_dirs_.size(), 0);
  for (size_t d = 0; d < log_dirs_.size(); ++d) {
    auto names = env_->list_dir(log_dirs_[d]);
    if (!names.ok()) return names.status();
    for (const auto& n : *names) {
      auto tp = parse_partition_dir_name(n);
      const std::string path = join_path(log_dirs_[d], n);
      if (!tp || !env_->is_directory(path)) continue;
      auto id = read_partition_topic_id(env_, path);
      auto it = topics_.find(tp->topic);
      bool ours = it != topics_.end() && tp->partition < it->second.meta.partitions &&
                  (!id || *id == it->second.meta.topic_id);
      if (!ours) {
        if (id) STRATA_RETURN_IF_ERROR(env_->remove_dir_recursive(path));
        continue;
      }
      auto& slot = it->second.dirs[static_cast<size_t>(tp->partition)];
      if (!slot.empty()) {
        return Status(Errc::corruption,
                      "partition " + n + " found in two log dirs: " + slot + " and " + path);
      }
      slot = path;
      ++dir_load_[d];
    }
  }

  // Open every partition (creating any whose directory a crash prevented): directories chosen
  // here, the opens themselves in parallel (each writes only its own slot).
  struct Open {
    TopicState* state;
    int32_t partition;
    bool create;
    size_t config;  // into configs
  };
  std::vector<Open> opens;
  // Resolved here, once per topic: config_for_ (the broker's config resolution, or a test's
  // callback) need not be thread-safe.
  std::vector<LogConfig> configs;
  for (auto& [name, state] : topics_) {
    configs.push_back(config_for_(state.meta));
    for (int32_t p = 0; p < state.meta.partitions; ++p) {
      auto& dir = state.dirs[static_cast<size_t>(p)];
      bool create = dir.empty();
      if (create) {
        size_t d = least_loaded_dir();
        dir = join_path(log_dirs_[d], partition_dir_name(name, p));
        ++dir_load_[d];
      }
      opens.push_back({&state, p, create, configs.size() - 1});
    }
  }
  return for_each_parallel(opens.size(), [&](size_t i) -> Status {
    const Open& o = opens[i];
    const auto p = static_cast<size_t>(o.partition);
    auto log = open_partition(o.state->meta, o.state->dirs[p], o.create, configs[o.config]);
    if (!log.ok()) return log.status();
    o.state->partitions[p] = std::move(*log);
    return Status::Ok();
  });
}

Status LogManager::for_each_parallel(size_t n, const std::function<Status(size_t)>& fn) const {
  std::atomic<size_t> next{0};
  std::mutex mu;
  Status first;  // guarded by mu
  std::atomic<bool> failed{false};
  auto work = [&] {
    for (size_t i; !failed.load(std::memory_order_relaxed) && (i = next++) < n;) {
      Status st;
      try {  // a throw on a helper thread would end the process: it is this item's failure
        st = fn(i);
      } catch (const std::exception& e) {
        st = Status(Errc::io_error, std::string("opening or closing a partition: ") + e.what());
      }
      if (!st.ok()) {
        std::lock_guard lk(mu);
        if (first.ok()) first = std::move(st);
        failed.store(true, std::memory_order_relaxed);
      }
    }
  };
  std::vector<std::thread> helpers;
  const size_t threads = std::min(recovery_threads_, n);
  for (size_t t = 1; t < threads; ++t) {
    try {
      helpers.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // no more threads to be had: the ones running (and this one) do the rest
    }
  }
  work();
  for (auto& t : helpers) t.join();
  return first;
}

size_t LogManager::least_loaded_dir() const {
  return static_cast<size_t>(std::min_element(dir_load_.begin(), dir_load_.end()) -
                             dir_load_.begin());
}

Result<std::shared_ptr<PartitionLog>> LogManager::open_partition(const TopicMeta& meta,
                                                                 const std::string& dir,
                                                                 bool create,
                                                                 const LogConfig& config) {
  if (create || !env_->file_exists(join_path(dir, kPartitionMetadata))) {
    STRATA_RETURN_IF_ERROR(env_->create_dir(dir));
    STRATA_RETURN_IF_ERROR(env_->sync_dir(parent_dir(dir)));
    STRATA_RETURN_IF_ERROR(write_file_atomically(env_, join_path(dir, kPartitionMetadata),
                                                 partition_metadata_text(meta.topic_id)));
  }
  auto log = PartitionLog::open(env_, dir, config, wall_clock_ms());
  if (!log.ok()) return log.status();
  (*log)->set_listeners(listeners_);
  return std::shared_ptr<PartitionLog>(std::move(*log));
}

Result<TopicInfo> LogManager::create_topic(const std::string& name, int32_t partitions,
                                           std::map<std::string, std::string> configs,
                                           const TopicId& topic_id) {
  std::lock_guard<std::mutex> admin(admin_mu_);
  if (closed_) return Status(Errc::shutting_down, "log manager closed");
  if (!valid_topic_name(name)) return Status(Errc::invalid_argument, "invalid topic name " + name);
  if (partitions < 1) return Status(Errc::invalid_argument, "partitions must be >= 1");
  if (topic_id == TopicId{}) return Status(Errc::invalid_argument, "zero topic id");
  {
    std::shared_lock<std::shared_mutex> lock(topics_mu_);
    if (topics_.contains(name)) return Status(Errc::already_exists, "topic " + name + " exists");
    if (names_by_id_.contains(topic_id)) {
      return Status(Errc::already_exists, "topic id already used by " + names_by_id_.at(topic_id));
    }
  }
  TopicState state;
  state.meta = TopicMeta{name, topic_id, partitions, std::move(configs), wall_clock_ms()};
  STRATA_RETURN_IF_ERROR(store_->put(state.meta));

  std::vector<size_t> placed;
  Status failure;
  for (int32_t p = 0; p < partitions; ++p) {
    size_t d = least_loaded_dir();
    std::string dir = join_path(log_dirs_[d], partition_dir_name(name, p));
    // A stale directory of an earlier incarnation must not be reused.
    if (env_->file_exists(dir)) {
      failure = env_->remove_dir_recursive(dir);
      if (!failure.ok()) break;
    }
    auto log = open_partition(state.meta, dir, /*create=*/true, config_for_(state.meta));
    if (!log.ok()) {
      failure = log.status();
      break;
    }
    ++dir_load_[d];
    placed.push_back(d);
    state.partitions.push_back(std::move(*log));
    state.dirs.push_back(dir);
  }
  if (!failure.ok()) {
    // Roll back: metadata first (so a restart ignores the topic), then the directories.
    (void)store_->remove(topic_id);
    for (size_t i = 0; i < state.dirs.size(); ++i) {
      (void)env_->remove_dir_recursive(state.dirs[i]);
      --dir_load_[placed[i]];
    }
    return failure;
  }
  TopicInfo info = state.meta;
  std::unique_lock<std::shared_mutex> lock(topics_mu_);
  names_by_id_[topic_id] = name;
  topics_.emplace(name, std::move(state));
  return info;
}

Status LogManager::delete_topic(const std::string& name) {
  std::lock_guard<std::mutex> admin(admin_mu_);
  TopicState state;
  {
    std::unique_lock<std::shared_mutex> lock(topics_mu_);
    auto it = topics_.find(name);
    if (it == topics_.end()) return Status(Errc::not_found, "no topic " + name);
    state = std::move(it->second);
    topics_.erase(it);
    names_by_id_.erase(state.meta.topic_id);
  }
  for (auto& log : state.partitions) log->mark_deleted();
  STRATA_RETURN_IF_ERROR(store_->remove(state.meta.topic_id));
  for (const auto& dir : state.dirs) {
    STRATA_RETURN_IF_ERROR(env_->remove_dir_recursive(dir));
    for (size_t d = 0; d < log_dirs_.size(); ++d) {
      if (parent_dir(dir) == log_dirs_[d] || parent_dir(dir) + "/" == log_dirs_[d]) {
        if (dir_load_[d] > 0) --dir_load_[d];
        STRATA_RETURN_IF_ERROR(env_->sync_dir(log_dirs_[d]));
      }
    }
  }
  return Status::Ok();
}

std::optional<TopicInfo> LogManager::find_topic(const std::string& name) const {
  std::shared_lock<std::shared_mutex> lock(topics_mu_);
  auto it = topics_.find(name);
  if (it == topics_.end()) return std::nullopt;
  return it->second.meta;
}

std::optional<TopicInfo> LogManager::find_topic_by_id(const TopicId& id) const {
  std::shared_lock<std::shared_mutex> lock(topics_mu_);
  auto it = names_by_id_.find(id);
  if (it == names_by_id_.end()) return std::nullopt;
  return topics_.at(it->second).meta;
}

std::vector<TopicInfo> LogManager::list_topics() const {
  std::shared_lock<std::shared_mutex> lock(topics_mu_);
  std::vector<TopicInfo> out;
  out.reserve(topics_.size());
  for (const auto& [name, state] : topics_) out.push_back(state.meta);
  return out;
}

std::shared_ptr<PartitionLog> LogManager::partition(const std::string& topic, int32_t index) const {
  std::shared_lock<std::shared_mutex> lock(topics_mu_);
  auto it = topics_.find(topic);
  if (it == topics_.end() || index < 0 || index >= it->second.meta.partitions) return nullptr;
  return it->second.partitions[static_cast<size_t>(index)];
}

std::vector<std::shared_ptr<PartitionLog>> LogManager::all_partitions() const {
  std::shared_lock<std::shared_mutex> lock(topics_mu_);
  std::vector<std::shared_ptr<PartitionLog>> out;
  for (const auto& [name, state] : topics_) {
    out.insert(out.end(), state.partitions.begin(), state.partitions.end());
  }
  return out;
}

Status LogManager::flush_all() {
  Status first;
  for (auto& log : all_partitions()) {
    Status st = log->flush();
    if (!st.ok() && first.ok()) first = st;
  }
  return first;
}

Status LogManager::flush_if_due_all(int64_t now_ms) {
  Status first;
  for (auto& log : all_partitions()) {
    Status st = log->flush_if_due(now_ms);
    if (!st.ok() && first.ok()) first = st;
  }
  return first;
}

Status LogManager::close_all() {
  stop_write_back();
  std::lock_guard<std::mutex> admin(admin_mu_);
  closed_ = true;
  // Every partition is closed, whatever fails: the first failure is reported.
  const auto logs = all_partitions();
  std::mutex mu;
  Status first;
  (void)for_each_parallel(logs.size(), [&](size_t i) {
    Status st = logs[i]->close();
    std::lock_guard lk(mu);
    if (!st.ok() && first.ok()) first = st;
    return Status::Ok();
  });
  return first;
}

}  // namespace strata::storage
