// Value types of the Strata C++ client library (tools/client/): what Client's typed helpers take
// and return. All fields own their bytes (std::string holds binary keys/values as-is).
// Owned by the client library. Value types; thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "protocol/pk/table_keys.h"

namespace strata::client {

// ---- cluster / topics
struct BrokerInfo {
  int32_t node_id = -1;
  std::string host;
  int32_t port = 0;
  std::optional<std::string> rack;
};

struct PartitionInfo {
  int32_t partition = 0;
  int16_t error_code = 0;
  int32_t leader = -1;
  int32_t leader_epoch = -1;
  std::vector<int32_t> replicas;
  std::vector<int32_t> isr;
  std::vector<int32_t> offline_replicas;  // Metadata v5+; empty from older brokers
};

struct TopicInfo {
  std::string name;
  std::string topic_id;  // canonical UUID text; "" when the broker did not send one
  int16_t error_code = 0;
  bool internal = false;
  std::vector<PartitionInfo> partitions;  // sorted by partition
};

struct ClusterMetadata {
  std::string cluster_id;
  int32_t controller_id = -1;
  std::vector<BrokerInfo> brokers;
  std::vector<TopicInfo> topics;  // sorted by name

  const TopicInfo* find_topic(const std::string& name) const;
  const BrokerInfo* find_broker(int32_t node_id) const;
};

struct TopicSpec {
  std::string name;
  int32_t partitions = 1;
  int16_t replication_factor = 1;
  std::map<std::string, std::string> configs;
};

struct TopicCreated {
  std::string name;
  std::string topic_id;
  int32_t partitions = -1;
};

// ---- configs
enum class ResourceType : int8_t { topic = 2, broker = 4 };

struct ConfigEntry {
  std::string name;
  std::optional<std::string> value;
  bool read_only = false;
  bool sensitive = false;
  int8_t source = -1;  // Kafka ConfigSource: 1 topic, 2/3 dynamic broker, 4 static, 5 default...
};
// "TOPIC_CONFIG", "DYNAMIC_BROKER_CONFIG", "STATIC_BROKER_CONFIG", "DEFAULT_CONFIG", ...
const char* config_source_name(int8_t source);

enum class ConfigOp : int8_t { set = 0, remove = 1, append = 2, subtract = 3 };
struct ConfigChange {
  std::string name;
  ConfigOp op = ConfigOp::set;
  std::optional<std::string> value;
};

// ---- partition reassignment and leader elections
struct PartitionOutcome {  // one partition's answer; error empty = ok
  std::string topic;
  int32_t partition = 0;
  std::string error;  // Kafka error name
  std::string message;
};
struct OngoingReassignment {
  std::string topic;
  int32_t partition = 0;
  std::vector<int32_t> replicas;  // target + (original - target) while moving
  std::vector<int32_t> adding;
  std::vector<int32_t> removing;
};

// ---- client quotas (DescribeClientQuotas / AlterClientQuotas)
struct QuotaEntityPart {
  std::string type;                 // "user" or "client-id" (Kafka's "ip": refused by Strata)
  std::optional<std::string> name;  // nullopt = the type's default entity
};
enum class QuotaMatch : int8_t { exact = 0, default_entity = 1, any = 2 };
struct QuotaFilter {
  std::string type;
  QuotaMatch match = QuotaMatch::exact;
  std::optional<std::string> name;  // for exact
};
struct QuotaEntry {
  std::vector<QuotaEntityPart> entity;
  std::map<std::string, double> values;  // producer_byte_rate, consumer_byte_rate, ...
};
struct QuotaOp {
  std::string key;
  std::optional<double> value;  // nullopt = remove
};

// ---- SCRAM credentials (DescribeUserScramCredentials / AlterUserScramCredentials)
enum class ScramMechanismType : int8_t { sha256 = 1, sha512 = 2 };  // Kafka's type bytes
struct ScramCredentialInfo {
  int8_t mechanism = 0;  // 1 = SCRAM-SHA-256, 2 = SCRAM-SHA-512 (others as the broker said)
  int32_t iterations = 0;
};
struct ScramUser {
  std::string user;
  std::vector<ScramCredentialInfo> credentials;
};
// One user's change: an upsertion carries the salt and PBKDF2 output (never the password).
struct ScramUpsert {
  std::string user;
  int8_t mechanism = 2;
  int32_t iterations = 8192;
  std::string salt;
  std::string salted_password;
};
struct ScramDelete {
  std::string user;
  int8_t mechanism = 2;
};
// A user's answer to an alteration (error 0 = done).
struct ScramAlterResult {
  std::string user;
  int16_t error = 0;  // Kafka's error code
  std::string message;
};

// ---- ACLs (DescribeAcls / CreateAcls / DeleteAcls); fields hold Kafka's wire codes
// (resource type TOPIC 2, GROUP 3, CLUSTER 4, TRANSACTIONAL_ID 5; pattern ANY 1, MATCH 2,
// LITERAL 3, PREFIXED 4; operation ANY 1, ALL 2, READ 3 ... IDEMPOTENT_WRITE 12; permission ANY 1,
// DENY 2, ALLOW 3).
struct AclBinding {
  int8_t resource_type = 2;
  std::string resource_name;
  int8_t pattern_type = 3;
  std::string principal;
  std::string host = "*";
  int8_t operation = 2;
  int8_t permission = 3;
};
// 1 (ANY) / nullopt fields match everything.
struct AclBindingFilter {
  int8_t resource_type = 1;
  std::optional<std::string> resource_name;
  int8_t pattern_type = 1;
  std::optional<std::string> principal;
  std::optional<std::string> host;
  int8_t operation = 1;
  int8_t permission = 1;
};

// ---- records
struct RecordHeader {
  std::string key;
  std::optional<std::string> value;
};

struct ProduceRecord {
  int32_t partition = -1;  // -1: by key (murmur2, or the given partitioner), round robin if keyless
  std::optional<std::string> key;
  std::optional<std::string> value;  // nullopt = tombstone / PK delete
  std::vector<RecordHeader> headers;
  int64_t timestamp = -1;  // -1 = now
};

struct ProduceResult {
  // Per input record: its partition and offset (in input order).
  std::vector<std::pair<int32_t, int64_t>> placements;
};

struct FetchedRecord {
  int32_t partition = 0;
  int64_t offset = 0;
  int64_t timestamp = -1;
  std::optional<std::string> key;
  std::optional<std::string> value;
  std::vector<RecordHeader> headers;
};

struct FetchResult {
  int64_t high_watermark = -1;
  int64_t log_start_offset = -1;
  int64_t next_offset = 0;  // offset after the last returned record (or the fetch offset)
  std::vector<FetchedRecord> records;
};

// ListOffsets special timestamps.
inline constexpr int64_t kLatest = -1;
inline constexpr int64_t kEarliest = -2;

struct PartitionOffset {
  int32_t partition = 0;
  int64_t offset = -1;  // -1 when no record has a timestamp >= the one asked for
  int64_t timestamp = -1;
};

// ---- groups
struct GroupListing {
  std::string group_id;
  std::string protocol_type;
  std::string state;  // "" when the broker's ListGroups is older than v4
};

struct TopicPartitions {
  std::string topic;
  std::vector<int32_t> partitions;
};

struct GroupMember {
  std::string member_id;
  std::optional<std::string> group_instance_id;
  std::string client_id;
  std::string client_host;
  std::vector<TopicPartitions> assignment;  // decoded consumer-protocol assignment
};

struct GroupDescription {
  std::string group_id;
  int16_t error_code = 0;
  std::string state;
  std::string protocol_type;
  std::string protocol;
  std::vector<GroupMember> members;
};

// (topic, partition) -> committed offset (-1 = none).
using CommittedOffsets = std::map<std::pair<std::string, int32_t>, int64_t>;

// ---- primary-key tables (extension APIs)
struct TablePartition {
  int32_t partition = 0;
  int16_t error_code = 0;
  int64_t applied_offset = -1;
  int64_t row_count_estimate = 0;
  int64_t checkpoint_offset = -1;
  int64_t changelog_gap_below = 0;
  int64_t high_watermark = 0;
};

struct TableInfo {
  std::string topic;
  std::string table_type;
  std::string merge_engine;
  std::string version_header;
  std::string changelog_image;
  std::string delete_behavior;
  int64_t ttl_ms = -1;
  std::string partitioner_name;
  protocol::pk::Partitioner partitioner = protocol::pk::Partitioner::murmur2;
  int32_t partition_count = 0;
  std::vector<TablePartition> partitions;
  std::string value_format;  // "raw" | "json" | "confluent" ("" from brokers before typed tables)
  std::map<std::string, std::string> column_aggregations;  // aggregation tables
  // confluent tables: the table schema's subject, id, type (AVRO | JSON) and columns
  std::string value_schema_subject;
  int32_t value_schema_id = -1;
  std::string value_schema_type;
  std::vector<std::string> columns;
};

struct LookupRow {
  bool found = false;
  std::string value;
  int64_t offset = -1;
  int64_t timestamp = -1;
  // The answering replica's state covers its partition's log below this offset: a token for a
  // later read's min_offset.
  int64_t applied_offset = 0;
};

struct LookupOptions {
  // Ask the broker this client is connected to (any replica, its committed rows) instead of
  // each partition's leader.
  bool follower_read = false;
  // Read-your-writes: answered only by a replica whose state covers the log below this offset
  // (OFFSET_NOT_AVAILABLE otherwise: retry). 0 = none.
  int64_t min_offset = 0;
  // Typed tables: only these columns of each row (JSON; a column the row lacks is null); empty =
  // whole rows. Lookup, prefix_lookup and scan take it.
  std::vector<std::string> columns;
};

struct AsOfRow {
  bool found = false;
  std::string value;
  int64_t offset = -1;     // the change that made the row
  int64_t timestamp = -1;  // its timestamp
  // The partition's history no longer covers the point; `earliest` is the earliest it covers.
  bool out_of_retention = false;
  int64_t earliest = -1;
};

struct AsOfOptions {
  bool by_offset = false;  // points are log offsets, not times (ms)
  bool follower_read = false;
  std::vector<std::string> columns;  // as LookupOptions::columns
};

struct TableRow {
  int32_t partition = 0;
  std::string key;
  std::string value;
  int64_t offset = -1;
  int64_t timestamp = -1;
};

struct ScanResult {
  std::vector<TableRow> rows;
  // Per partition: the snapshot offset X of that partition's scan.
  std::map<int32_t, int64_t> snapshot_offsets;
};

enum class ChangeKind : uint8_t { unspecified = 0, insert = 1, update = 2, remove = 3 };
const char* change_kind_name(ChangeKind k);  // "insert" | "update" | "delete" | "unspecified"

struct Change {
  int32_t partition = 0;
  int64_t offset = 0;
  int64_t timestamp = -1;
  ChangeKind kind = ChangeKind::unspecified;
  std::string key;
  std::optional<std::string> before;
  std::optional<std::string> after;
};

struct ChangelogPage {
  std::vector<Change> changes;
  std::map<int32_t, int64_t> next_offsets;     // per partition: from_offset of the next read
  std::map<int32_t, int64_t> high_watermarks;  // per partition
  // With a filter: batches / bytes skipped by their column statistics, changes not matching.
  int64_t skipped_batches = 0;
  int64_t skipped_bytes = 0;
  int64_t filtered_changes = 0;
};

// ---- transactions (client_txn.cc)
struct TxnListing {
  std::string transactional_id;
  int64_t producer_id = -1;
  std::string state;  // Kafka's names: Empty, Ongoing, PrepareCommit, ...
};

struct TxnDescription {
  std::string transactional_id;
  std::string state;
  int32_t timeout_ms = 0;
  int64_t start_time_ms = -1;  // -1: no transaction open
  int64_t producer_id = -1;
  int32_t producer_epoch = -1;
  std::vector<TopicPartitions> partitions;  // of the open transaction
};

struct ActiveProducer {
  int64_t producer_id = -1;
  int32_t producer_epoch = -1;
  int32_t last_sequence = -1;
  int64_t last_timestamp = -1;
  int32_t coordinator_epoch = -1;
  int64_t current_txn_start_offset = -1;  // -1: no transaction open on the partition
};

struct PartitionProducers {
  int32_t partition = 0;
  std::vector<ActiveProducer> producers;
};

}  // namespace strata::client
