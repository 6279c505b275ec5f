// DynamicConfig: the broker's configuration layers and their durable dynamic part.
//
//   DYNAMIC_BROKER_CONFIG          AlterConfigs on BROKER "<node.id>"   (per broker)
//   DYNAMIC_DEFAULT_BROKER_CONFIG  AlterConfigs on BROKER ""            (cluster-wide default)
//   STATIC_BROKER_CONFIG           server.properties / --override (BrokerConfig::explicit_keys)
//   DEFAULT_CONFIG                 the key table's default
//
// Dynamic broker overrides live in `<first log dir>/dynamic-broker-configs` (written atomically);
// topic overrides live in the topic metadata (storage::TopicStore). effective() is the BrokerConfig
// with all broker layers applied: topics resolve their defaults against it, so changing a broker
// default (log.retention.ms, ...) reaches every topic that does not override it. Only broker keys
// marked kConfigDynamic in the key table (config.cc) are dynamic; the rest are read-only. Also:
// DescribeConfigs entry building and IncrementalAlterConfigs operations.
//
// Owned by Broker (one per process). Thread-safe: readers take a shared lock; set_* serialise.
#pragma once

#include <functional>
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
#include "protocol/base/result.h"
#include "storage/env.h"

namespace strata::broker {

using ConfigMap = std::map<std::string, std::string>;

// Kafka's DescribeConfigs config_source numbering.
enum class ConfigSource : int8_t {
  unknown = 0,
  dynamic_topic = 1,
  dynamic_broker = 2,
  dynamic_default_broker = 3,
  static_broker = 4,
  default_config = 5
};

struct ConfigSynonymInfo {
  std::string name;
  std::optional<std::string> value;
  ConfigSource source;
};

struct ConfigEntryInfo {
  std::string name;
  std::optional<std::string> value;  // nullopt for sensitive keys
  ConfigSource source = ConfigSource::default_config;
  bool read_only = false;
  bool sensitive = false;
  ConfigType type = ConfigType::unknown;
  std::string doc;
  std::vector<ConfigSynonymInfo> synonyms;  // highest precedence first, the entry's own included
};

// IncrementalAlterConfigs operations (Kafka's AlterConfigOp.OpType ids).
enum class AlterOp : int8_t { set = 0, remove = 1, append = 2, subtract = 3 };
struct AlterItem {
  std::string name;
  AlterOp op;
  std::optional<std::string> value;
};

// Applies `items` to `overrides`. APPEND/SUBTRACT work on LIST keys only, starting from
// `effective(name)` when the key has no override. Unknown names and non-list APPEND/SUBTRACT →
// Errc::invalid_argument (INVALID_CONFIG); the resulting map still needs validation.
Result<ConfigMap> apply_alter_items(
    ConfigMap overrides, const std::vector<AlterItem>& items,
    ConfigType (*type_of)(std::string_view name),
    const std::function<std::string(const std::string&)>& effective);
// ConfigType of a topic / broker key from its table (unknown for an unknown name).
ConfigType topic_key_type(std::string_view name);
ConfigType broker_key_type(std::string_view name);
// One DescribeConfigs entry of `key` whose value layers are `layers` (highest precedence first):
// value and source of the first layer, the key's type, doc and flags; a sensitive key's value is
// null, in every synonym too, as Kafka does.
ConfigEntryInfo describe_entry(const ConfigKeyInfo& key, std::vector<ConfigSynonymInfo> layers);

class DynamicConfig {
 public:
  // Reads the dynamic overrides file (absent = none) and builds the effective config. A file that
  // no longer parses (e.g. a key removed from the broker) is reported, not silently dropped.
  static Result<std::unique_ptr<DynamicConfig>> load(storage::Env* env,
                                                     const BrokerConfig& static_config);

  // The broker config with dynamic overrides applied (a snapshot; never null).
  std::shared_ptr<const BrokerConfig> effective() const;
  // One effective broker value; nullopt for an unknown key.
  std::optional<std::string> value(const std::string& key) const;
  // The dynamic overrides of one layer (cluster_default: resource name "").
  ConfigMap overrides(bool cluster_default) const;

  static bool is_dynamic_key(std::string_view key);
  // Checks a complete replacement override map for one layer (names, dynamic-ness, values).
  Status validate(bool cluster_default, const ConfigMap& overrides) const;
  // The effective config the layer's new overrides would give (validated, nothing stored).
  Result<std::shared_ptr<const BrokerConfig>> preview(bool cluster_default,
                                                      const ConfigMap& overrides) const;
  // Validates, persists and installs the layer's new overrides; returns the new effective config.
  Result<std::shared_ptr<const BrokerConfig>> replace(bool cluster_default, ConfigMap overrides);

  // DescribeConfigs entries. `keys` empty = all keys.
  std::vector<ConfigEntryInfo> describe_broker(bool cluster_default,
                                               const std::vector<std::string>& keys) const;
  std::vector<ConfigEntryInfo> describe_topic(const ConfigMap& topic_overrides,
                                              const std::vector<std::string>& keys) const;

  const std::string& path() const { return path_; }

 private:
  DynamicConfig(storage::Env* env, BrokerConfig static_config, std::string path);
  Result<std::shared_ptr<const BrokerConfig>> build(const ConfigMap& cluster,
                                                    const ConfigMap& broker) const;
  std::vector<ConfigSynonymInfo> broker_layers(const std::string& key) const;  // mu_ held

  storage::Env* env_;
  const BrokerConfig static_;
  const std::string path_;
  std::mutex write_mu_;  // serialises replace()
  mutable std::shared_mutex mu_;
  ConfigMap cluster_;  // DYNAMIC_DEFAULT_BROKER_CONFIG
  ConfigMap broker_;   // DYNAMIC_BROKER_CONFIG
  std::shared_ptr<const BrokerConfig> effective_;
};

}  // namespace strata::broker
