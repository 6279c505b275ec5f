// Per-topic configuration: the table of topic-level keys (segment.bytes, retention.ms, ...) with
// their type, broker synonym (the `log.*` key that supplies the default), default, validator, doc
// string and read-only/sensitive flags; validation of override maps; and resolution of overrides on
// top of the (effective, dynamic) broker config into the TopicConfig the produce path and storage
// use. Adding a key is one entry in topic_key_table() (topic_config.cc), plus one line in
// resolve_topic_config if the broker must act on it (see docs/retention.md).
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

struct TopicConfig {
  storage::LogConfig log;
  int32_t max_message_bytes = 1048588;
  StoredCompression compression = StoredCompression::producer;
  bool log_append_time = false;  // message.timestamp.type=LogAppendTime
  int64_t retention_ms = 604800000;
  int64_t retention_bytes = -1;
  std::string cleanup_policy = "delete";
  // Retention / cleaner: derived from cleanup.policy and the cleaner keys.
  bool compact = false;        // cleanup.policy contains compact: keyless records are refused
  bool delete_enabled = true;  // cleanup.policy contains delete
  double min_cleanable_dirty_ratio = 0.5;
  int64_t delete_retention_ms = 86400000;
  int64_t min_compaction_lag_ms = 0;
};

// Kafka's ConfigEntry.ConfigType numbering (DescribeConfigs v3+ config_type).
enum class ConfigType : int8_t {
  unknown = 0,
  boolean = 1,
  string = 2,
  int_ = 3,
  short_ = 4,
  long_ = 5,
  double_ = 6,
  list = 7,
  class_ = 8,
  password = 9
};

inline constexpr uint8_t kConfigNoFlags = 0;
inline constexpr uint8_t kConfigReadOnly = 1;   // fixed at creation; AlterConfigs refuses it
inline constexpr uint8_t kConfigSensitive = 2;  // value never returned by DescribeConfigs
// A key Kafka 3.x still accepted as deprecated (removed in 4.0) that Strata has no use for:
// validated, stored and described like any override so 3.x-era tools and scripts keep working,
// never acted on (resolve_topic_config ignores it); validate_topic_configs warns about it.
inline constexpr uint8_t kConfigDeprecated = 4;

// Returns nullopt when `value` is acceptable, else the reason (e.g. "Not a number of type LONG").
using ConfigValidator = std::function<std::optional<std::string>(const std::string& value)>;
ConfigValidator validate_long(int64_t lo, int64_t hi);  // also used for INT keys
ConfigValidator validate_double(double lo, double hi);
ConfigValidator validate_one_of(std::vector<std::string> allowed);
ConfigValidator validate_list_of(std::vector<std::string> allowed);  // comma-separated, non-empty

struct TopicKeyDef {
  const char* name;
  ConfigType type;
  const char* broker_synonym;  // "" = none; a key the broker lacks falls back to default_value
  const char* default_value;
  ConfigValidator validate;
  const char* doc;
  uint8_t flags;
};

// Every topic key, in documentation order.
const std::vector<TopicKeyDef>& topic_key_table();
const TopicKeyDef* find_topic_key(std::string_view name);

// Checks names and values; the error message names the offending key (→ INVALID_CONFIG). When
// `configs` is valid and holds kConfigDeprecated keys, logs one spdlog warning naming them all
// (the only side effect here). Callers validate a topic's whole new override map once per
// CreateTopics / AlterConfigs / IncrementalAlterConfigs resource, so that is one warning per topic
// of a request — also when a request alters another key of a topic that carries one.
Status validate_topic_configs(const std::map<std::string, std::string>& configs);
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
