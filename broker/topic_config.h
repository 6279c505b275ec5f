// Per-topic configuration: the topic-level keys Kafka clients send in CreateTopics (segment.bytes,
// compression.type, ...), validated, and resolved against the broker defaults into the values the
// produce path and the storage layer use. Pure functions over value types; any thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "broker/config.h"
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
};

// Topic-level keys known to the broker and the broker key each inherits its default from.
struct TopicKeyDoc {
  const char* name;
  const char* broker_synonym;
  const char* doc;
};
const std::map<std::string, TopicKeyDoc>& topic_keys();

// Checks names and values; the error message names the offending key (→ INVALID_CONFIG).
Status validate_topic_configs(const std::map<std::string, std::string>& configs);

// Effective configuration: topic overrides on top of the broker defaults. Configs must be valid.
TopicConfig resolve_topic_config(const std::map<std::string, std::string>& configs,
                                 const BrokerConfig& broker);

// The effective value of every topic key as text (for CreateTopics v5+ responses).
std::map<std::string, std::string> effective_topic_values(
    const std::map<std::string, std::string>& configs, const BrokerConfig& broker);

}  // namespace strata::broker
