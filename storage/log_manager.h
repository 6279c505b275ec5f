// LogManager: every partition log of this broker across its log dirs, plus the durable topic
// metadata (TopicStore in the first log dir) and the log dirs' meta.properties. open() loads all
// topics and opens (recovering) their partitions; create/delete topics; lookups by name and id.
// New partitions go to the log dir holding the fewest partitions. Each partition directory carries
// Kafka's `partition.metadata` ("version: 0\ntopic_id: <base64url>\n").
//
// Owned by the broker app (one per process). Thread-safe: lookups take a shared lock briefly;
// create/delete are serialised among themselves and do their file I/O outside the lookup lock.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "protocol/base/result.h"
#include "storage/env.h"
#include "storage/log_config.h"
#include "storage/partition_log.h"
#include "storage/topic_store.h"

namespace strata::storage {

using TopicInfo = TopicMeta;

class LogManager {
 public:
  using ConfigFn = std::function<LogConfig(const TopicMeta&)>;

  // `listeners` (may be null) is given to every partition log it opens or creates. Partitions are
  // opened (here) and closed (close_all) by `recovery_threads_per_dir` threads per log dir
  // (Kafka's num.recovery.threads.per.data.dir): each open and close syncs a partition's
  // checkpoint files, so a broker of thousands of partitions waits on the disk, not the CPU.
  static Result<std::unique_ptr<LogManager>> open(
      Env* env, std::vector<std::string> log_dirs, int32_t node_id, ConfigFn config_for,
      std::shared_ptr<const PartitionLog::Listeners> listeners = nullptr,
      int recovery_threads_per_dir = 1);
  ~LogManager();

  // Persists the metadata, then creates and opens the partitions. Errc::already_exists for a
  // taken name or id; Errc::invalid_argument for a bad name (outside [a-zA-Z0-9._-]{1,249}, "." or
  // ".."), partitions < 1 or the zero id.
  Result<TopicInfo> create_topic(const std::string& name, int32_t partitions,
                                 std::map<std::string, std::string> configs,
                                 const TopicId& topic_id);
  // Removes the metadata (durably) first, then the partition directories. Errc::not_found if
  // unknown. Handles to its partitions stay valid; their appends then fail.
  Status delete_topic(const std::string& name);

  // --- Admin ---
  // Replaces the topic's config overrides durably (metadata file rewritten atomically) and pushes
  // the re-resolved LogConfig into its open partitions. Errc::not_found if unknown.
  Result<TopicInfo> update_topic_configs(const std::string& name,
                                         std::map<std::string, std::string> configs);
  // Grows the topic to `partitions` (CreatePartitions): metadata first, then the new partition
  // directories (a crash in between is repaired by open(), which creates missing partitions).
  // Errc::not_found if unknown, Errc::invalid_argument unless partitions > current count.
  Result<TopicInfo> add_partitions(const std::string& name, int32_t partitions);

  std::optional<TopicInfo> find_topic(const std::string& name) const;
  std::optional<TopicInfo> find_topic_by_id(const TopicId& id) const;
  std::vector<TopicInfo> list_topics() const;  // sorted by name
  // nullptr when the topic or partition does not exist.
  std::shared_ptr<PartitionLog> partition(const std::string& topic, int32_t index) const;

  const std::string& cluster_id() const { return cluster_id_; }
  const std::vector<std::string>& log_dirs() const { return log_dirs_; }

  Status flush_all();
  Status flush_if_due_all(int64_t now_ms);  // for the broker's log.flush.interval.ms timer
  // Starts a thread that calls every partition's write_back_ahead(bytes) every 100 ms (0: none;
  // once). Stopped by close_all() and the destructor.
  void start_write_back(uint64_t bytes);
  Status close_all();

  static bool valid_topic_name(const std::string& name);

 private:
  struct TopicState {
    TopicMeta meta;
    std::vector<std::shared_ptr<PartitionLog>> partitions;
    std::vector<std::string> dirs;  // partition directory paths
  };

  LogManager(Env* env, std::vector<std::string> log_dirs, ConfigFn config_for,
             std::shared_ptr<const PartitionLog::Listeners> listeners)
      : env_(env),
        log_dirs_(std::move(log_dirs)),
        config_for_(std::move(config_for)),
        listeners_(std::move(listeners)) {}

  Status load(int32_t node_id);
  // Creates (if needed) and opens one partition in `partition_dir` with `config`.
  Result<std::shared_ptr<PartitionLog>> open_partition(const TopicMeta& meta,
                                                       const std::string& partition_dir,
                                                       bool create, const LogConfig& config);
  size_t least_loaded_dir() const;  // admin_mu_ held
  std::vector<std::shared_ptr<PartitionLog>> all_partitions() const;
  // fn(0..n-1) on recovery_threads_ threads (this one included); the first failure stops the
  // rest from starting and is returned.
  Status for_each_parallel(size_t n, const std::function<Status(size_t)>& fn) const;

  Env* const env_;
  const std::vector<std::string> log_dirs_;
  const ConfigFn config_for_;
  const std::shared_ptr<const PartitionLog::Listeners> listeners_;
  std::string cluster_id_;
  std::unique_ptr<TopicStore> store_;
  size_t recovery_threads_ = 1;

  std::mutex admin_mu_;                  // create/delete/close, and dir_load_
  std::vector<size_t> dir_load_;         // partitions per log dir
  mutable std::shared_mutex topics_mu_;  // the maps below
  std::map<std::string, TopicState> topics_;
  std::map<TopicId, std::string> names_by_id_;
  bool closed_ = false;

  void stop_write_back();
  std::thread write_back_thread_;
  std::mutex write_back_mu_;
  std::condition_variable write_back_cv_;
  bool write_back_stop_ = false;  // guarded by write_back_mu_
};

}  // namespace strata::storage
