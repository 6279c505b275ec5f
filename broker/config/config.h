// Broker configuration: the typed view of server.properties (Kafka key names where Kafka has the
// concept). Built once at start-up by load_config(); immutable afterwards, so any thread may read
// it. Every key the broker knows is declared in config.cc's table with its default and one line of
// documentation; config/server.properties lists the same keys (a unit test keeps them in step).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "protocol/base/result.h"

namespace strata::broker {

struct Listener {
  std::string name;  // e.g. PLAINTEXT
  std::string host;
  uint16_t port = 0;
};

struct BrokerConfig {
  int32_t node_id = 1;
  std::vector<Listener> listeners;
  std::vector<Listener> advertised_listeners;  // empty -> same as listeners (bound port)
  std::vector<std::string> log_dirs;
  int32_t num_io_threads = 0;  // 0 = number of cores
  int32_t num_partitions = 1;
  int16_t default_replication_factor = 1;
  bool auto_create_topics_enable = true;
  int64_t log_segment_bytes = 1073741824;
  int64_t log_roll_ms = 604800000;
  int64_t log_flush_interval_messages = INT64_MAX;
  int64_t log_flush_interval_ms = INT64_MAX;
  int64_t log_flush_scheduler_interval_ms = 1000;
  int32_t log_index_interval_bytes = 4096;
  int32_t log_index_size_max_bytes = 10485760;
  int32_t message_max_bytes = 1048588;
  int32_t socket_request_max_bytes = 104857600;
  // Connection limits (broker/net/limits.h, docs/operations.md)
  int32_t max_connections = 2147483647;
  int32_t max_connections_per_ip = 2147483647;
  int64_t connections_max_idle_ms = 600000;
  int64_t queued_max_request_bytes = 536870912;
  int64_t socket_request_read_timeout_ms = 30000;
  int32_t max_broker_partitions = 10000;
  std::string compression_type = "producer";
  std::string log_message_timestamp_type = "CreateTime";
  int64_t log_retention_ms = 604800000;
  int64_t log_retention_bytes = -1;
  std::string log_cleanup_policy = "delete";
  std::string log_level = "info";
  // Consumer groups
  int32_t group_initial_rebalance_delay_ms = 3000;
  int32_t group_min_session_timeout_ms = 6000;
  int32_t group_max_session_timeout_ms = 1800000;
  int32_t offset_metadata_max_bytes = 4096;
  int32_t offsets_retention_minutes = 10080;
  int64_t offsets_retention_check_interval_ms = 600000;
  // Client quotas (Kafka's names and defaults)
  int32_t quota_window_num = 11;
  int32_t quota_window_size_seconds = 1;
  // Idempotent producer
  int64_t producer_id_expiration_ms = 86400000;
  int64_t producer_id_expiration_check_interval_ms = 600000;
  // Retention and log cleaner; Kafka's names and defaults
  int64_t log_retention_check_interval_ms = 300000;
  bool log_cleaner_enable = true;
  int32_t log_cleaner_threads = 1;
  double log_cleaner_io_max_bytes_per_second = 1.7976931348623157e308;
  double log_cleaner_min_cleanable_ratio = 0.5;
  int64_t log_cleaner_delete_retention_ms = 86400000;
  int64_t log_cleaner_min_compaction_lag_ms = 0;
  int64_t log_cleaner_backoff_ms = 15000;
  // Scan sessions
  int64_t pk_scan_session_timeout_ms = 30000;
  int32_t pk_scan_max_sessions = 1000;
  // host:port of the /metrics endpoint; empty = disabled.
  std::string metrics_listener = "127.0.0.1:9644";
  // Checkpoints of primary-key state
  int32_t pk_checkpoint_retained = 2;
  // Test-only fault injection (keys under "test."; refused unless --enable-test-faults).
  int64_t test_fault_drop_produce_response_every_n = 0;
  int64_t test_fault_pk_compact_before_checkpoint = 0;

  // Every key with its effective value (as text), for logging and DescribeConfigs later.
  std::map<std::string, std::string> values;
  // Keys set explicitly in server.properties or by --override (DescribeConfigs'
  // STATIC_BROKER_CONFIG); every other key has its default.
  std::set<std::string> explicit_keys;
};

struct ConfigKeyDoc {
  const char* name;
  const char* default_value;
  const char* doc;
};
// All keys the broker accepts, in documentation order.
const std::vector<ConfigKeyDoc>& config_keys();

// Parses a properties file (`key=value`, `#`/`!` comments, blank lines) and applies `overrides`
// ("key=value", later wins). An unknown key or a bad value fails with a message naming the key.
Result<BrokerConfig> load_config(const std::string& path,
                                 const std::vector<std::string>& overrides);
// Same, from text already read (path may be empty).
Result<BrokerConfig> parse_config(const std::string& text,
                                  const std::vector<std::string>& overrides);

// Parses "NAME://host:port[,NAME://host:port]".
Result<std::vector<Listener>> parse_listeners(const std::string& value);

}  // namespace strata::broker
