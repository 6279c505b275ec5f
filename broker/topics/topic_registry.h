// TopicRegistry: the broker's view of its topics — name, id, resolved TopicConfig and the
// partition logs — over storage::LogManager, which owns the files and the durable metadata.
// Lookups are lock-free for readers in practice (a shared_mutex around a map of shared_ptrs);
// handlers keep the shared_ptr<const TopicEntry> for the length of a request, and deletion waits
// for those references to drop before the logs are closed. Each entry carries its topic's metrics
// counters, shared by the entries that replace it. Thread-safe.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "broker/config/config.h"
#include "broker/config/topic_config.h"
#include "broker/metrics/topic_counters.h"
#include "protocol/base/result.h"
#include "protocol/wire/uuid.h"
#include "storage/log_manager.h"

namespace strata::pkindex {
struct TableConfig;
class ConfluentDecoder;
}  // namespace strata::pkindex

namespace strata::broker::schema {
struct RegistryHandle;
}  // namespace strata::broker::schema

namespace strata::broker {

// The internal topics of the group and transaction coordinators (broker/group/log_group_journal.h).
// Clients may read them (Metadata marks them internal) but not write or delete them, as with Kafka.
inline constexpr const char* kConsumerOffsetsTopic = "__consumer_offsets";
inline constexpr const char* kTransactionStateTopic = "__transaction_state";
inline bool is_internal_topic(std::string_view name) {
  return name == kConsumerOffsetsTopic || name == kTransactionStateTopic;
}

struct TopicEntry {
  std::string name;
  protocol::Uuid id;
  std::map<std::string, std::string> configs;  // the topic's own overrides
  TopicConfig config;                          // resolved against the broker defaults
  std::vector<std::shared_ptr<storage::PartitionLog>> partitions;
  bool pk_table = false;  // table.type=primary-key (fixed at creation)
  // A typed log topic (table.value.format=json): Produce refuses values that are not JSON objects
  // (or null). Fixed at creation.
  bool json_log = false;
  // A confluent log topic's decoder of its writers' values (by their schema ids, through the
  // registry), whose fields must be columns of the table schema: Produce refuses a value it
  // cannot decode, and filters and statistics read rows through it. Null otherwise.
  std::shared_ptr<const pkindex::ConfluentDecoder> writers;
  // Its table.* keys parsed once per config change (a Protobuf table schema's parse builds a
  // descriptor pool): what reads, projections and filters use. Null when they do not parse (the
  // topic then serves no typed read). Set with parse_table().
  std::shared_ptr<const pkindex::TableConfig> table;
  // Sets pk_table and table from configs.
  void parse_table();
  // request counters of this topic; never null. Copies of the entry (copy-on-write
  // replacement) share them; a re-created topic gets new ones. Bumped through a const entry.
  std::shared_ptr<metrics::TopicCounters> counters = std::make_shared<metrics::TopicCounters>();

  storage::PartitionLog* partition(int32_t index) const {
    return index >= 0 && index < static_cast<int32_t>(partitions.size()) ? partitions[index].get()
                                                                         : nullptr;
  }
};

// Kafka's rule for topic names: [a-zA-Z0-9._-]{1,249}.
bool valid_topic_name(std::string_view name);

class TopicRegistry {
 public:
  TopicRegistry(storage::LogManager& logs, const BrokerConfig& config);
  // Builds entries for every topic the LogManager loaded.
  Status load();

  std::shared_ptr<const TopicEntry> find(std::string_view name) const;
  std::shared_ptr<const TopicEntry> find(const protocol::Uuid& id) const;
  std::vector<std::shared_ptr<const TopicEntry>> list() const;

  // Creates (or, with validate_only, only checks) a topic. Errc::already_exists,
  // Errc::invalid_argument (bad name / partitions / config; message says which), Errc::too_large
  // (past max.broker.partitions or the descriptor budget). `id`: the
  // topic id to use (cluster mode: the id the cluster gave the topic); unset = a random one.
  Result<std::shared_ptr<const TopicEntry>> create(
      const std::string& name, int32_t partitions,
      const std::map<std::string, std::string>& configs, bool validate_only,
      std::optional<protocol::Uuid> id = std::nullopt);
  Status remove(const std::string& name);

  // --- Admin: copy-on-write replacement of entries, so a change is effective at once ---
  // Replaces the topic's whole override map (AlterConfigs / IncrementalAlterConfigs), durably.
  // Errc::not_found (unknown topic), Errc::invalid_argument (bad name/value, read-only key;
  // message names the key). validate_only: checks only.
  Result<std::shared_ptr<const TopicEntry>> alter_configs(
      const std::string& name, const std::map<std::string, std::string>& configs,
      bool validate_only);
  // The checks alter_configs makes of a change from `current` to `next` (values, floors against
  // the broker defaults, read-only keys), without needing the topic here: in a cluster, a
  // broker without a replica of the topic checks a change it stores in etcd. invalid_argument.
  Status check_config_change(const std::map<std::string, std::string>& current,
                             const std::map<std::string, std::string>& next) const;
  // Grows the topic to `partitions`. Errc::not_found, Errc::invalid_argument (not larger),
  // Errc::too_large (as create).
  Result<std::shared_ptr<const TopicEntry>> add_partitions(const std::string& name,
                                                           int32_t partitions, bool validate_only);
  // New broker defaults (dynamic broker configs): re-resolves every topic and pushes the new
  // LogConfig into its partitions.
  void set_broker_defaults(std::shared_ptr<const BrokerConfig> defaults);
  std::shared_ptr<const BrokerConfig> broker_defaults() const;

  // Descriptors the partitions are estimated to hold (broker/topics/fd_budget.h): per partition
  // its segments plus the active segment's writer and indexes, plus a PK partition's RocksDB.
  int64_t fd_estimate() const;
  // RocksDB's max_open_files of each PK partition (PkEnvironment's), for the estimate.
  void set_pk_open_files_per_partition(int64_t n) { pk_open_files_.store(n); }

  // Where confluent topics (log topics and PK tables) read registered schemas; its source is set
  // once the broker's registry serves.
  const std::shared_ptr<schema::RegistryHandle>& registry_handle() const { return registry_; }

 private:
  std::shared_ptr<TopicEntry> make_entry(const storage::TopicMeta& meta,
                                         const BrokerConfig& defaults) const;
  // Errc::too_large when `adding` partitions (of a PK table when `pk`) would pass
  // max.broker.partitions or the descriptor budget (soft RLIMIT_NOFILE less open.files.reserved).
  Status check_partition_cap(int64_t adding, bool pk) const;

  storage::LogManager& logs_;
  std::shared_ptr<schema::RegistryHandle> registry_;
  std::shared_ptr<const BrokerConfig> defaults_;  // guarded by mu_; effective broker config
  mutable std::shared_mutex mu_;
  std::mutex create_mu_;  // serializes create/remove
  std::atomic<int64_t> pk_open_files_;
  std::map<std::string, std::shared_ptr<const TopicEntry>, std::less<>> by_name_;
};

}  // namespace strata::broker
