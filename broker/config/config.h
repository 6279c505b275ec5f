// Broker configuration: the typed view of server.properties (Kafka key names where Kafka has the
// concept). Built once at start-up by load_config(); immutable afterwards, so any thread may read
// it. Every key the broker knows is defined once in config.cc's KeyTable
// (protocol/base/key_table.h): type, default, range, dynamic or read-only, doc;
// config/server.properties lists the same keys with their defaults (a unit test keeps them in
// step).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/base/key_table.h"
#include "protocol/base/result.h"

namespace strata::broker {

// Kafka's security protocols; a listener's comes from listener.security.protocol.map.
enum class SecurityProtocol : uint8_t { plaintext, ssl, sasl_plaintext, sasl_ssl };
inline bool uses_tls(SecurityProtocol p) {
  return p == SecurityProtocol::ssl || p == SecurityProtocol::sasl_ssl;
}
inline bool uses_sasl(SecurityProtocol p) {
  return p == SecurityProtocol::sasl_plaintext || p == SecurityProtocol::sasl_ssl;
}

struct Listener {
  std::string name;  // e.g. PLAINTEXT, or a named listener such as CLIENT
  std::string host;
  uint16_t port = 0;
  SecurityProtocol protocol = SecurityProtocol::plaintext;
};

// Field defaults come from the key table (config.cc): BrokerConfig() holds every key at its
// default, so nothing else writes a default value.
struct BrokerConfig {
  BrokerConfig();
  struct Unset {};
  explicit BrokerConfig(Unset) {}  // all zero; parse_config fills every key

  int32_t node_id{};
  std::vector<Listener> listeners;
  std::vector<Listener> advertised_listeners;  // empty -> same as listeners (bound port)
  std::vector<std::string> log_dirs;
  int32_t num_io_threads{};  // 0 = number of cores
  int32_t num_recovery_threads_per_data_dir{};
  int32_t num_partitions{};
  int16_t default_replication_factor{};
  bool auto_create_topics_enable{};
  int64_t log_segment_bytes{};
  int64_t log_segment_bytes_min{};  // floor of segment.bytes / log.segment.bytes
  int64_t log_roll_ms{};
  int64_t log_flush_interval_messages{};
  int64_t log_flush_interval_ms{};
  int64_t log_flush_scheduler_interval_ms{};
  int64_t log_segment_write_back_bytes{};  // 0 = off (LogManager::start_write_back)
  int32_t log_index_interval_bytes{};
  int32_t log_index_size_max_bytes{};
  int32_t message_max_bytes{};
  int32_t socket_request_max_bytes{};
  // Connection limits (broker/net/limits.h, docs/operations.md)
  int32_t max_connections{};
  int32_t max_connections_per_ip{};
  int64_t connections_max_idle_ms{};
  int64_t queued_max_request_bytes{};
  int64_t socket_request_read_timeout_ms{};
  int64_t connection_max_queued_response_bytes{};
  int64_t queued_max_response_bytes{};
  int32_t max_broker_partitions{};
  int32_t open_files_reserved{};  // descriptors kept out of the partitions' budget
  // Cluster mode (docs/cluster.md); no endpoints = a single node. Kafka's names and defaults.
  std::vector<std::string> coordination_etcd_endpoints;  // "host:port" or "http://host:port"
  std::string coordination_etcd_prefix;
  std::string sasl_scram_bootstrap_users;  // security/scram_admin.h: parse_bootstrap_users
  int64_t coordination_lease_ttl_seconds{};
  std::string broker_rack;  // "" = none
  int32_t min_insync_replicas{};
  bool unclean_leader_election_enable{};
  int64_t replica_lag_time_max_ms{};
  int32_t replica_fetch_max_bytes{};
  int32_t replica_fetch_wait_max_ms{};
  int32_t replica_fetch_backoff_ms{};
  std::string compression_type;
  std::string log_message_timestamp_type;
  int64_t log_retention_ms{};
  int64_t log_retention_bytes{};
  std::string log_cleanup_policy;
  std::string log_level;
  // Consumer groups
  int32_t group_initial_rebalance_delay_ms{};
  int32_t group_min_session_timeout_ms{};
  int32_t group_max_session_timeout_ms{};
  int32_t offset_metadata_max_bytes{};
  int32_t offsets_retention_minutes{};
  int64_t offsets_retention_check_interval_ms{};
  int32_t offsets_topic_num_partitions{};
  int32_t offsets_topic_replication_factor{};
  int32_t offsets_topic_segment_bytes{};
  int32_t offsets_commit_timeout_ms{};
  int64_t leader_replication_throttled_rate{};    // bytes/s, -1 = unlimited (not enforced)
  int64_t follower_replication_throttled_rate{};  // bytes/s, -1 = unlimited
  // Client quotas (Kafka's names and defaults)
  int32_t quota_window_num{};
  int32_t quota_window_size_seconds{};
  // Idempotent producer
  int64_t producer_id_expiration_ms{};
  int64_t producer_id_expiration_check_interval_ms{};
  // Transactions (Kafka's names and defaults)
  int32_t transaction_max_timeout_ms{};
  int32_t transaction_abort_timed_out_transaction_cleanup_interval_ms{};
  int64_t transactional_id_expiration_ms{};
  int32_t transaction_state_log_num_partitions{};
  int32_t transaction_state_log_replication_factor{};
  int32_t transaction_state_log_min_isr{};
  int32_t transaction_state_log_segment_bytes{};
  // Retention and log cleaner; Kafka's names and defaults
  int64_t log_retention_check_interval_ms{};
  bool log_cleaner_enable{};
  int32_t log_cleaner_threads{};
  double log_cleaner_io_max_bytes_per_second{};
  double log_cleaner_min_cleanable_ratio{};
  int64_t log_cleaner_delete_retention_ms{};
  int64_t log_cleaner_min_compaction_lag_ms{};
  int64_t log_cleaner_backoff_ms{};
  // Scan sessions
  int64_t pk_scan_session_timeout_ms{};
  int32_t pk_scan_max_sessions{};
  // Security (broker/config/security_config.h). TLS keys are read per listener with
  // listener_value(); these are the broker-wide ones parsed into fields.
  std::map<std::string, SecurityProtocol> listener_protocol_map;  // listener name -> protocol
  std::string sasl_enabled_mechanisms;                            // comma-separated
  int64_t connections_max_reauth_ms{};
  int32_t connection_failed_authentication_delay_ms{};
  int32_t sasl_server_max_receive_size{};
  std::string inter_broker_listener_name;  // "" = from security.inter.broker.protocol
  std::string security_inter_broker_protocol;
  std::string sasl_mechanism_inter_broker_protocol;
  // host:port of the /metrics endpoint; empty = disabled.
  std::string metrics_listener;
  std::string schema_registry_listener;  // "" = off
  int32_t schema_registry_topic_replication_factor{};
  std::string schema_registry_authentication_method;  // "none" | "basic"
  bool metrics_ssl_enabled{};               // the TLS keys are read with make_prefixed_tls_context
  std::string metrics_basic_auth_user;      // "" = no basic auth
  std::string metrics_basic_auth_password;  // sensitive
  // Checkpoints of primary-key state
  int32_t pk_checkpoint_retained{};
  // Memory of primary-key state (pkindex::PkEnvironment), shared by every partition
  int64_t pk_block_cache_bytes{};
  int64_t pk_write_buffer_bytes{};
  int64_t pk_memtable_idle_flush_ms{};
  int64_t pk_row_cache_bytes{};
  // Authorization (docs/security.md): "" = no authorizer (everything allowed); otherwise Strata's
  // ACL authorizer (Kafka's class names accepted as synonyms).
  std::string authorizer_class_name;
  std::set<std::string> super_users;  // principals, "User:name"
  bool allow_everyone_if_no_acl_found{};
  // Test-only fault injection (keys under "test."; refused unless --enable-test-faults).
  int64_t test_fault_drop_produce_response_every_n{};
  int64_t test_fault_pk_compact_before_checkpoint{};

  // Every key with its effective value (as text), for logging and DescribeConfigs.
  std::map<std::string, std::string> values;
  // Keys set explicitly in server.properties or by --override (DescribeConfigs'
  // STATIC_BROKER_CONFIG); every other key has its default.
  std::set<std::string> explicit_keys;
};

using BrokerKeyDef = ConfigKey<BrokerConfig>;
// The broker's key table (properties wording; keys read-only unless kConfigDynamic).
const KeyTable<BrokerConfig>& broker_key_table();
// All keys the broker accepts, in documentation order.
const std::vector<BrokerKeyDef>& config_keys();
const BrokerKeyDef* find_broker_key(std::string_view name);
// `strata-broker --print-default-config`: every key as "# doc" then "key=default" and a blank
// line, in table order; test.* keys commented out (they need --enable-test-faults).
// config/server.properties is a comment header followed by exactly this text (a unit test).
std::string default_config_text();

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
