// Per-topic configuration: the table of topic-level keys (segment.bytes, retention.ms, ...), a
// KeyTable (protocol/base/key_table.h) with each key's type, broker synonym (the `log.*` key that
// supplies the default, and its default), range, doc, flags and the TopicConfig field it sets;
// the table.* keys come from pkindex's table (pkindex/table_config.h). Validation of override
// maps, and resolution of overrides on top of the (effective, dynamic) broker config into the
// TopicConfig the produce path and storage use. Adding a key is one entry in the table
// (topic_config.cc), with a field if the broker must act on it (see docs/retention.md).
// Owned by the topic-administration code. Pure functions over value types and a static table (but
// for the deprecation warning of validate_topic_configs); any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "broker/config/config.h"
#include "protocol/base/result.h"
#include "storage/log_config.h"

namespace strata::broker {

enum class StoredCompression { producer, none, gzip, snappy, lz4, zstd };

// Field defaults come from the topic key table: TopicConfig() is the configuration of a topic
// without overrides under the default broker config (nothing else writes a default value).
struct TopicConfig {
  TopicConfig();
  struct Unset {};
  explicit TopicConfig(Unset) {}

  storage::LogConfig log;
  int32_t max_message_bytes{};
  StoredCompression compression = StoredCompression::producer;
  bool log_append_time{};  // message.timestamp.type=LogAppendTime
  int64_t retention_ms{};
  int64_t retention_bytes{};
  std::string cleanup_policy;
  // Retention / cleaner: derived from cleanup.policy and the cleaner keys.
  bool compact{};         // cleanup.policy contains compact: keyless records are refused
  bool delete_enabled{};  // cleanup.policy contains delete
  double min_cleanable_dirty_ratio{};
  int64_t delete_retention_ms{};
  int64_t min_compaction_lag_ms{};
  // Replication (cluster mode, docs/cluster.md): acks=all needs this many in-sync replicas;
  // an out-of-sync replica may lead when none in sync is alive.
  int32_t min_insync_replicas{};
  bool unclean_leader_election_enable{};
};

// One topic key (protocol/base/key_table.h): synonym is the broker key that supplies its default;
// kConfigDeprecated marks a key Kafka 3.x accepted that Strata stores and ignores
// (validate_topic_configs warns about it).
using TopicKeyDef = ConfigKey<TopicConfig>;

// Every topic key, in documentation order.
const std::vector<TopicKeyDef>& topic_key_table();  // Kafka wording; alterable unless read-only
const TopicKeyDef* find_topic_key(std::string_view name);

// Checks names and values; the error message names the offending key (→ INVALID_CONFIG). When
// `configs` is valid and holds kConfigDeprecated keys, logs one spdlog warning naming them all
// (the only side effect here). Callers validate a topic's whole new override map once per
// CreateTopics / AlterConfigs / IncrementalAlterConfigs resource, so that is one warning per topic
// of a request — also when a request alters another key of a topic that carries one.
Status validate_topic_configs(const std::map<std::string, std::string>& configs);
// The floors the broker puts on topic values: segment.bytes at least log.segment.bytes.min (a
// segment per batch would use up descriptors and inodes). Checked where a topic is created or its
// overrides replaced, after validate_topic_configs. A value equal to the one in `current` (the
// topic's overrides so far) passes, so a topic keeps what it was given under a lower floor.
// Errc::invalid_argument naming the key and the floor (→ INVALID_CONFIG).
Status check_topic_config_floors(const std::map<std::string, std::string>& configs,
                                 const BrokerConfig& broker,
                                 const std::map<std::string, std::string>& current = {});
// Checks one key (name and value); same messages.
Status validate_topic_config(const std::string& name, const std::string& value);

// The default of a topic key under `broker`: the broker synonym's value if the broker knows the
// key, else the table default.
std::string topic_key_default(const TopicKeyDef& key, const BrokerConfig& broker);

// Effective configuration: topic overrides on top of the broker defaults. Configs must be valid.
TopicConfig resolve_topic_config(const std::map<std::string, std::string>& configs,
                                 const BrokerConfig& broker);

// The effective value of every topic key as text (for CreateTopics v5+ responses).
std::map<std::string, std::string> effective_topic_values(
    const std::map<std::string, std::string>& configs, const BrokerConfig& broker);

}  // namespace strata::broker
