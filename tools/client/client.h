// Client: a small synchronous Kafka/Strata client (tools/client/) used by the
// `strata` CLI and `strata-perf`. It bootstraps from one address, reads Metadata, keeps one
// Connection per broker node (leaders, group coordinator) and offers typed helpers for the admin,
// data, group and primary-key-table (extension API) calls. Every call negotiates the highest
// version both sides speak. Errors: see protocol/client/client_error.h (Kafka error name first,
// CONNECTION for network failures).
//
// Owned by the client library. NOT thread-safe: use one Client per thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "protocol/base/result.h"
#include "protocol/client/client_error.h"
#include "protocol/client/connection.h"
#include "tools/client/client_types.h"

namespace strata::ext {
class Predicate;  // protocol/ext/predicate.proto
}

namespace strata::client {

struct ClientOptions {
  std::string bootstrap = "127.0.0.1:9092";  // HOST:PORT (one address)
  std::string client_id = "strata-client";
  int connect_timeout_ms = 5000;
  int request_timeout_ms = 30000;
  ClientSecurity security;  // every connection's (tools/client/client_config.h)
};

class Client {
 public:
  explicit Client(ClientOptions opts);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Connects to the bootstrap address and negotiates versions (also done lazily by every call).
  Status connect();
  // The bootstrap connection (connecting if needed).
  Result<Connection*> bootstrap_connection();
  // A connection to broker `node_id` (address from the last Metadata).
  Result<Connection*> broker_connection(int32_t node_id);
  // The leader of topic/partition (refreshes Metadata for the topic when unknown).
  Result<Connection*> leader_connection(const std::string& topic, int32_t partition);
  // A keyed read's keys by the connection that serves them (each partition's leader, or the
  // bootstrap broker for follower reads): (partition, key index), partition then input order.
  Result<std::map<Connection*, std::vector<std::pair<int32_t, size_t>>>> route_keys(
      const TableInfo& table, std::span<const std::string> keys, bool follower_read);

  // ---- cluster and topics (client_admin.cc)
  // Metadata for `topics` (nullopt = all topics). Per-topic errors are kept in TopicInfo.
  Result<ClusterMetadata> metadata(const std::optional<std::vector<std::string>>& topics);
  // One topic; its Kafka error (e.g. UNKNOWN_TOPIC_OR_PARTITION) as the Status.
  Result<TopicInfo> topic(const std::string& name);
  Result<TopicCreated> create_topic(const TopicSpec& spec);
  Status delete_topic(const std::string& name);
  Status create_partitions(const std::string& topic, int32_t total_count);
  // Configs of one resource (for a broker, name = node id as text). `keys` empty = all.
  Result<std::vector<ConfigEntry>> describe_configs(ResourceType type, const std::string& name,
                                                    const std::vector<std::string>& keys = {});
  Status alter_configs(ResourceType type, const std::string& name,
                       const std::vector<ConfigChange>& changes);
  // Client quotas matching `filter` (empty + !strict = all), and altering one entity's quotas.
  Result<std::vector<QuotaEntry>> describe_client_quotas(const std::vector<QuotaFilter>& filter,
                                                         bool strict = false);
  Status alter_client_quotas(const std::vector<QuotaEntityPart>& entity,
                             const std::vector<QuotaOp>& ops, bool validate_only = false);
  // SCRAM credentials (client_scram.cc). describe: `users` empty = every user; a user the broker
  // names with an error (RESOURCE_NOT_FOUND...) fails the call with that error.
  Result<std::vector<ScramUser>> describe_scram_users(const std::vector<std::string>& users);
  // One AlterUserScramCredentials request: its per-user answers (a request-level failure, e.g.
  // no connection, as the Status).
  Result<std::vector<ScramAlterResult>> alter_scram_credentials(
      const std::vector<ScramDelete>& deletions, const std::vector<ScramUpsert>& upsertions);
  // ACL administration: the first failing creation's Kafka error as the Status; describe and
  // delete return the bindings matched (delete: removed, over all filters).
  Status create_acls(const std::vector<AclBinding>& bindings);
  Result<std::vector<AclBinding>> describe_acls(const AclBindingFilter& filter);
  Result<std::vector<AclBinding>> delete_acls(const std::vector<AclBindingFilter>& filters);
  // AlterPartitionReassignments for one partition (`replicas` nullopt = cancel); its Kafka error
  // as the Status.
  Status reassign_partition(const std::string& topic, int32_t partition,
                            const std::optional<std::vector<int32_t>>& replicas);
  // ListPartitionReassignments: every reassignment in progress.
  Result<std::vector<OngoingReassignment>> list_reassignments();
  // ElectLeaders (preferred) for `partitions` (topic -> partitions; nullopt = every partition,
  // and then only the partitions that needed an election are answered).
  Result<std::vector<PartitionOutcome>> elect_preferred_leaders(
      const std::optional<std::map<std::string, std::vector<int32_t>>>& partitions);
  // DescribeCluster (falls back to Metadata's broker list when the broker lacks it).
  Result<ClusterMetadata> describe_cluster();

  // ---- records (client_data.cc)
  // Produces `records` to `topic` with acks=-1: one batch per partition, one request per leader.
  // Records with partition -1 are placed by key with `partitioner` (murmur2 = Java's default),
  // keyless ones round robin.
  Result<ProduceResult> produce(
      const std::string& topic, std::span<const ProduceRecord> records,
      protocol::pk::Partitioner partitioner = protocol::pk::Partitioner::murmur2);
  // Fetches from one partition starting at `offset` (waits up to max_wait_ms for data).
  Result<FetchResult> fetch(const std::string& topic, int32_t partition, int64_t offset,
                            int32_t max_wait_ms = 500, int32_t max_bytes = 1 << 20);
  // Fetches several partitions (partition -> offset), one request per leader; the broker answers
  // as soon as any of them has data or max_wait_ms passes. Partitions absent from the answer
  // (none for Strata) are absent from the result.
  Result<std::map<int32_t, FetchResult>> fetch_partitions(const std::string& topic,
                                                          const std::map<int32_t, int64_t>& offsets,
                                                          int32_t max_wait_ms = 500,
                                                          int32_t max_bytes = 1 << 20);
  // ListOffsets for every partition of `topic` (or the given ones): timestamp kEarliest,
  // kLatest or a time in ms.
  Result<std::vector<PartitionOffset>> list_offsets(const std::string& topic, int64_t timestamp,
                                                    const std::vector<int32_t>& partitions = {});

  // ---- groups (client_groups.cc)
  Result<Connection*> coordinator_connection(const std::string& group);
  Result<std::vector<GroupListing>> list_groups();
  Result<GroupDescription> describe_group(const std::string& group);
  // Committed offsets of `group` (all topics when `topic` is empty).
  Result<CommittedOffsets> committed_offsets(const std::string& group,
                                             const std::string& topic = {});
  // Commits offsets as an admin (generation -1, no member): only for an Empty/Dead group.
  Status commit_offsets(const std::string& group, const CommittedOffsets& offsets);
  Status delete_group(const std::string& group);

  // ---- transactions (client_txn.cc)
  // ListTransactions on every broker (filters as Kafka's: empty = all; min_duration_ms < 0 = no
  // bound), by transactional id.
  Result<std::vector<TxnListing>> list_transactions(const std::vector<std::string>& states = {},
                                                    const std::vector<int64_t>& producer_ids = {},
                                                    int64_t min_duration_ms = -1);
  // DescribeTransactions at the id's coordinator; its Kafka error (TRANSACTIONAL_ID_NOT_FOUND...)
  // as the Status.
  Result<TxnDescription> describe_transaction(const std::string& txn_id);
  // DescribeProducers at each partition's leader (`partitions` empty = every partition); the
  // first partition error as the Status.
  Result<std::vector<PartitionProducers>> describe_producers(const std::string& topic,
                                                             std::vector<int32_t> partitions = {});
  // WriteTxnMarkers to the partition's leader: a COMMIT (or ABORT) marker for the producer at
  // `epoch`; the partition's Kafka error as the Status.
  Status write_txn_marker(const std::string& topic, int32_t partition, int64_t producer_id,
                          int16_t epoch, int32_t coordinator_epoch, bool commit);

  // ---- primary-key tables (client_tables.cc)
  Result<TableInfo> describe_table(const std::string& topic);
  // Current rows of `keys` (in input order). Keys are routed with the table's partitioner and
  // grouped per partition, one Lookup request per leader and round: a round takes at most the
  // broker's request bounds (100,000 keys, 30 MiB of keys), and the keys an answer marks
  // truncated (its byte budget was reached) are asked again in the next round.
  Result<std::vector<LookupRow>> lookup(const TableInfo& table, std::span<const std::string> keys,
                                        const LookupOptions& options = {});
  // Rows of `keys` as of `points` (one per key: a time in ms, or an offset with
  // AsOfOptions::by_offset) from tables with table.history.enabled, routed and batched as
  // lookup(). A point the history no longer covers comes back out_of_retention.
  Result<std::vector<AsOfRow>> lookup_as_of(const TableInfo& table,
                                            std::span<const std::string> keys,
                                            std::span<const int64_t> points,
                                            const AsOfOptions& options = {});
  // Rows whose key starts with `prefix` over all partitions (fan out, following cursors), at
  // most `limit` rows in total (0 = no limit). `page` is the per-request limit.
  Result<std::vector<TableRow>> prefix_lookup(const TableInfo& table, const std::string& prefix,
                                              int64_t limit = 0, int32_t page = 1000,
                                              const std::vector<std::string>& columns = {});
  // All rows of all partitions (paged with cursors; one snapshot per partition), at most `limit`
  // (0 = no limit). `columns`: as LookupOptions::columns.
  Result<ScanResult> scan(const TableInfo& table, int64_t limit = 0, int32_t page = 1000,
                          const std::vector<std::string>& columns = {});
  // One ReadChangelog round over the partitions in `from` (partition -> from_offset), grouped per
  // leader; waits up to max_wait_ms when nothing is available.
  Result<ChangelogPage> read_changelog(const TableInfo& table,
                                       const std::map<int32_t, int64_t>& from,
                                       int32_t max_records_per_partition = 1000,
                                       int32_t max_wait_ms = 0,
                                       const ext::Predicate* filter = nullptr);

  const ClientOptions& options() const { return opts_; }

 private:
  Result<Connection*> open_or_reuse(int32_t node_id, const std::string& host, int port);
  Status refresh_topic(const std::string& topic);
  Result<Connection*> txn_coordinator_connection(const std::string& txn_id);
  // FindCoordinator for `key` (key_type 0 = group, 1 = transactional id): a connection to the
  // coordinator (its node id in *node_id when given); its Kafka error named with `context`.
  Result<Connection*> find_coordinator(const std::string& key, int8_t key_type,
                                       const std::string& context, int32_t* node_id);

  ClientOptions opts_;
  std::unique_ptr<Connection> bootstrap_;
  std::map<int32_t, std::unique_ptr<Connection>> brokers_;
  std::map<int32_t, BrokerInfo> broker_addrs_;
  // topic -> partition -> leader
  std::map<std::string, std::map<int32_t, int32_t>> leaders_;
  std::map<std::string, int32_t> coordinators_;
  uint32_t round_robin_ = 0;
};

}  // namespace strata::client
