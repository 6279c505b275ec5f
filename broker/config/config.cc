#include "broker/config/config.h"

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "broker/cluster/etcd_client.h"  // coordination.etcd.endpoints syntax
#include "broker/config/security_config.h"
#include "broker/metrics/exporter.h"      // metrics.listener syntax
#include "broker/schema/registry_http.h"  // schema.registry.listener syntax
#include "broker/security/scram_admin.h"  // sasl.scram.bootstrap.users syntax

namespace strata::broker {
namespace {

using C = BrokerConfig;

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

template <typename T>
Status parse_int(const std::string& key, const std::string& v, T min, T max, T& out) {
  T x{};
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || p != v.data() + v.size()) {
    return Status(Errc::invalid_argument, "config " + key + ": '" + v + "' is not an integer");
  }
  if (x < min || x > max) {
    return Status(Errc::invalid_argument, "config " + key + ": " + v + " is out of range [" +
                                              std::to_string(min) + ", " + std::to_string(max) +
                                              "]");
  }
  out = x;
  return Status::Ok();
}

Status set_listeners(const char* key, bool may_be_empty, const std::string& v,
                     std::vector<Listener>* out) {
  if (v.empty() && may_be_empty) {
    if (out) out->clear();
    return Status::Ok();
  }
  auto r = parse_listeners(v);
  if (!r.ok())
    return Status(Errc::invalid_argument,
                  std::string("config ") + key + ": " + r.status().message());
  if (r->empty() && !may_be_empty)
    return Status(Errc::invalid_argument, std::string("config ") + key + ": empty");
  if (out) *out = *r;
  return Status::Ok();
}

// Comma-separated etcd client URLs; "" = none (a single node). Each must be what the etcd client
// accepts, so a typo stops start-up rather than the first call to etcd.
Status set_etcd_endpoints(const std::string& v, C* c) {
  std::vector<std::string> endpoints;
  if (!trim(v).empty()) {
    std::stringstream ss(v);
    std::string item;
    while (std::getline(ss, item, ',')) {
      item = trim(item);
      if (item.empty()) {
        return Status(Errc::invalid_argument,
                      "config coordination.etcd.endpoints: empty item in '" + v + "'");
      }
      auto ep = cluster::parse_etcd_endpoint(item);
      if (!ep.ok()) {
        return Status(Errc::invalid_argument,
                      "config coordination.etcd.endpoints: " + ep.status().message());
      }
      endpoints.push_back(item);
    }
    if (trim(v).back() == ',') {
      return Status(Errc::invalid_argument,
                    "config coordination.etcd.endpoints: empty item in '" + v + "'");
    }
  }
  if (c) c->coordination_etcd_endpoints = std::move(endpoints);
  return Status::Ok();
}

std::string check_etcd_prefix(const std::string& v) {
  if (v.empty() || v[0] != '/') return "must start with '/'";
  for (char ch : v) {
    if (std::isspace(static_cast<unsigned char>(ch)) ||
        std::iscntrl(static_cast<unsigned char>(ch)))
      return "must not contain spaces or control characters";
  }
  return "";
}

// authorizer.class.name: Strata has one authorizer; Kafka's class names name it too, so a Kafka
// server.properties works unchanged. Anything else would silently not be the plug-in asked for.
std::string check_authorizer_class(const std::string& v) {
  if (v.empty() || v == "strata" || v == "kafka.security.authorizer.AclAuthorizer" ||
      v == "org.apache.kafka.metadata.authorizer.StandardAuthorizer" ||
      v == "kafka.security.auth.SimpleAclAuthorizer") {
    return "";
  }
  return "'" + v +
         "' is not an authorizer Strata has: use strata, "
         "kafka.security.authorizer.AclAuthorizer or "
         "org.apache.kafka.metadata.authorizer.StandardAuthorizer (all the same ACL authorizer), "
         "or leave it empty for none";
}

// super.users: Kafka's syntax, principals separated by ';' (a principal may hold ',').
Status set_super_users(const std::string& v, C* c) {
  std::set<std::string> users;
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, ';')) {
    item = trim(item);
    if (item.empty()) continue;
    const size_t colon = item.find(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == item.size()) {
      return Status(
          Errc::invalid_argument,
          "config super.users: '" + item + "' is not a principal (Type:name, e.g. User:admin)");
    }
    users.insert(item);
  }
  if (c) c->super_users = std::move(users);
  return Status::Ok();
}

// Checks across keys, after each key parsed on its own (Kafka's KafkaConfig requires the same).
Status check_key_combinations(const BrokerConfig& c) {
  if (c.log_segment_bytes < c.log_segment_bytes_min) {
    std::string m("config log.segment.bytes: ");
    m.append(std::to_string(c.log_segment_bytes))
        .append(" is below log.segment.bytes.min (")
        .append(std::to_string(c.log_segment_bytes_min))
        .append("): segments that small roll a file per batch");
    return Status(Errc::invalid_argument, m);
  }
  if (c.replica_fetch_wait_max_ms > c.replica_lag_time_max_ms) {
    std::string m("config replica.fetch.wait.max.ms: ");
    m.append(std::to_string(c.replica_fetch_wait_max_ms))
        .append(" exceeds replica.lag.time.max.ms (")
        .append(std::to_string(c.replica_lag_time_max_ms))
        .append("): followers waiting that long would drop out of the ISR");
    return Status(Errc::invalid_argument, m);
  }
  if (c.pk_write_buffer_bytes * 2 > c.pk_block_cache_bytes) {
    std::string m("config pk.write.buffer.bytes: ");
    m.append(std::to_string(c.pk_write_buffer_bytes))
        .append(" is more than half of pk.block.cache.bytes (")
        .append(std::to_string(c.pk_block_cache_bytes))
        .append("): memtables are charged to the cache and would leave no room for blocks");
    return Status(Errc::invalid_argument, m);
  }
  return Status::Ok();
}

KeyTable<BrokerConfig> build_table() {
  constexpr int32_t kI32Max = INT32_MAX;
  constexpr int64_t kI64Max = INT64_MAX;
  // Alterable by AlterConfigs on BROKER resources: the broker synonyms of topic keys (a unit test
  // keeps the two in step) and the cleaner's rate, re-read by LogTasks every cleaner round.
  constexpr uint8_t kDyn = kConfigDynamic;
  constexpr uint8_t kNone = kConfigNoFlags;
  KeyTable<C> t(ConfigMessages::properties, /*dynamic_by_default=*/false);
  t.integer("node.id", &C::node_id, "1", 0, kI32Max,
            "Id of this broker, unique among the members of a cluster; reported in Metadata and "
            "stored in meta.properties.");
  t.custom("listeners", ConfigType::list, "PLAINTEXT://127.0.0.1:9092",
           "Comma-separated NAME://host:port to listen on; port 0 binds a free port.", kNone,
           [](const std::string& v, C* c) {
             return set_listeners("listeners", false, v, c ? &c->listeners : nullptr);
           });
  t.custom("advertised.listeners", ConfigType::list, "",
           "Addresses given to clients in Metadata; empty = the bound listeners.", kNone,
           [](const std::string& v, C* c) {
             return set_listeners("advertised.listeners", true, v,
                                  c ? &c->advertised_listeners : nullptr);
           });
  t.custom("log.dirs", ConfigType::list, "./data",
           "Comma-separated directories holding partition logs.", kNone,
           [](const std::string& v, C* c) -> Status {
             std::vector<std::string> dirs;
             std::stringstream ss(v);
             std::string item;
             while (std::getline(ss, item, ',')) {
               item = trim(item);
               if (!item.empty()) dirs.push_back(item);
             }
             if (dirs.empty()) return Status(Errc::invalid_argument, "config log.dirs: empty");
             if (c) c->log_dirs = std::move(dirs);
             return Status::Ok();
           });
  t.integer("num.io.threads", &C::num_io_threads, "0", 0, 1024,
            "Connection threads, each serving the I/O and requests of the connections given to "
            "it (plus one for timers and accepts, 4 for admin requests that may block); 0 = "
            "number of cores.");
  t.integer("num.recovery.threads.per.data.dir", &C::num_recovery_threads_per_data_dir, "4", 1, 64,
            "Threads per log dir opening partitions at start and closing them at stop (each "
            "syncs its checkpoint files; Kafka's default is 1).");
  t.integer("num.partitions", &C::num_partitions, "1", 1, 100000,
            "Partition count of auto-created topics and of CreateTopics with -1.");
  t.integer("default.replication.factor", &C::default_replication_factor, "1", int16_t{1},
            int16_t{INT16_MAX},
            "Replication factor of auto-created topics and of CreateTopics with -1; above 1 needs "
            "cluster mode.");
  t.boolean("auto.create.topics.enable", &C::auto_create_topics_enable, "true",
            "Create unknown topics named in Metadata requests (if the client allows it).");
  t.integer("log.segment.bytes", &C::log_segment_bytes, "1073741824", int64_t{14}, int64_t{kI32Max},
            "Roll a new segment when the active one reaches this size.", kDyn);
  t.integer("log.segment.bytes.min", &C::log_segment_bytes_min, "1048576", int64_t{14},
            int64_t{kI32Max},
            "Smallest segment.bytes / log.segment.bytes accepted (Kafka 4.0's floor): tiny "
            "segments roll a file per batch and use up descriptors; lower it only for tests.");
  t.integer("log.roll.ms", &C::log_roll_ms, "604800000", int64_t{1}, kI64Max,
            "Roll a new segment when the active one is older than this.", kDyn);
  t.integer("log.flush.interval.messages", &C::log_flush_interval_messages, "9223372036854775807",
            int64_t{1}, kI64Max,
            "fsync a partition after this many messages; the default leaves flushing to the OS.",
            kDyn);
  t.integer("log.flush.interval.ms", &C::log_flush_interval_ms, "9223372036854775807", int64_t{0},
            kI64Max,
            "fsync a partition when its oldest unflushed message is this old; default: never.",
            kDyn);
  t.integer("log.flush.scheduler.interval.ms", &C::log_flush_scheduler_interval_ms, "1000",
            int64_t{1}, kI64Max, "How often the time-based flush policy is checked.");
  t.integer("log.segment.write.back.bytes", &C::log_segment_write_back_bytes, "67108864",
            int64_t{0}, kI64Max,
            "Write an active segment's pages to disk in the background each time this many more "
            "bytes were appended to it, so the fsync of a segment roll (on the appending thread) "
            "has little left to write; 0 = off (the OS writes back on its own).");
  t.integer("log.index.interval.bytes", &C::log_index_interval_bytes, "4096", 0, kI32Max,
            "Bytes between two entries of the sparse offset index.", kDyn);
  t.integer("log.index.size.max.bytes", &C::log_index_size_max_bytes, "10485760", 4, kI32Max,
            "Largest .index file; a full index rolls the segment.", kDyn);
  t.integer("message.max.bytes", &C::message_max_bytes, "1048588", 0, kI32Max,
            "Largest record batch a producer may send (after the broker's recompression, if any); "
            "a primary-key table's changelog batch derived from it may be up to 4x that.",
            kDyn);
  t.integer("socket.request.max.bytes", &C::socket_request_max_bytes, "104857600", 1, kI32Max,
            "Largest request frame; a larger size prefix closes the connection.");
  t.integer("max.connections", &C::max_connections, "2147483647", 0, kI32Max,
            "Connections the broker keeps open at once; a new one past it is closed at accept.");
  t.integer(
      "max.connections.per.ip", &C::max_connections_per_ip, "2147483647", 0, kI32Max,
      "Connections one client IP address may keep open; a new one past it is closed at accept.");
  t.integer("connections.max.idle.ms", &C::connections_max_idle_ms, "600000", int64_t{-1}, kI64Max,
            "Close a connection with nothing in flight and no traffic for this long; -1 = never.");
  t.integer("queued.max.request.bytes", &C::queued_max_request_bytes, "536870912", int64_t{-1},
            kI64Max,
            "Request-body bytes all connections may hold at once; past it reading pauses (-1 = no "
            "bound; Kafka's default is -1).");
  t.integer("socket.request.read.timeout.ms", &C::socket_request_read_timeout_ms, "30000",
            int64_t{0}, kI64Max,
            "Once a request's size has arrived, its whole frame must arrive within this time, else "
            "the connection is closed (slow senders); 0 = no deadline.");
  t.integer("connection.max.queued.response.bytes", &C::connection_max_queued_response_bytes,
            "16777216", int64_t{-1}, kI64Max,
            "Response bytes one connection may have ready but unwritten (a client not reading); "
            "past it nothing more is read from that connection until they drain (-1 = no bound).");
  t.integer("queued.max.response.bytes", &C::queued_max_response_bytes, "268435456", int64_t{-1},
            kI64Max,
            "Response bytes all connections may hold in memory ready but unwritten; past it "
            "Lookup, PrefixLookup, Scan and ReadChangelog answers shrink to one row or record "
            "(the rest comes back as their continuation) (-1 = no bound).");
  t.integer("max.broker.partitions", &C::max_broker_partitions, "10000", 1, kI32Max,
            "Partitions this broker holds at most; CreateTopics/CreatePartitions past it get "
            "POLICY_VIOLATION.");
  t.integer("open.files.reserved", &C::open_files_reserved, "1024", 0, kI32Max,
            "Descriptors of the open files limit kept for connections and the broker's own files "
            "(at most half the limit); CreateTopics/CreatePartitions whose partitions' estimated "
            "descriptors would pass the rest get POLICY_VIOLATION.");
  // Cluster mode (docs/cluster.md): brokers coordinated by etcd v3. No endpoints = a single node.
  t.custom("coordination.etcd.endpoints", ConfigType::list, "",
           "Comma-separated etcd v3 client addresses (host:port or http://host:port); empty = a "
           "single node, no cluster.",
           kNone, set_etcd_endpoints);
  t.string("coordination.etcd.prefix", &C::coordination_etcd_prefix, "/strata",
           "etcd key prefix holding this cluster's state; clusters sharing an etcd need distinct "
           "prefixes.",
           kNone, check_etcd_prefix);
  t.integer("coordination.lease.ttl.seconds", &C::coordination_lease_ttl_seconds, "4", 2, kI32Max,
            "TTL of the etcd lease holding this broker's registration: a broker silent this long "
            "is out of the cluster (failover takes about this long).");
  // SCRAM credentials (docs/security.md)
  t.string(
      "sasl.scram.bootstrap.users", &C::sasl_scram_bootstrap_users, "",
      "SCRAM users created at start when they have no credential of that mechanism yet, ';'-"
      "separated, as kafka-storage --add-scram: SCRAM-SHA-512=[name=admin,password=secret]; "
      "empty = none.",
      kConfigSensitive,
      [](const std::string& v) -> std::string {
        auto users = security::parse_bootstrap_users(v);
        return users.ok() ? "" : users.status().message();
      },
      ConfigType::password);
  t.string("broker.rack", &C::broker_rack, "",
           "Rack of this broker; replica placement spreads each partition over racks; empty = "
           "none.");
  t.integer("min.insync.replicas", &C::min_insync_replicas, "1", 1, kI32Max,
            "Default min.insync.replicas of topics: acks=all produce needs this many in-sync "
            "replicas (else NOT_ENOUGH_REPLICAS).",
            kDyn);
  t.boolean("unclean.leader.election.enable", &C::unclean_leader_election_enable, "false",
            "Default unclean.leader.election.enable of topics: let an out-of-sync replica lead "
            "when no in-sync one is alive (may lose records).",
            kDyn);
  t.integer("replica.lag.time.max.ms", &C::replica_lag_time_max_ms, "30000", int64_t{1}, kI64Max,
            "A follower that has not caught up with the leader for this long leaves the ISR.");
  t.integer("replica.fetch.max.bytes", &C::replica_fetch_max_bytes, "1048576", 0, kI32Max,
            "Bytes a follower asks for per partition in one fetch (a larger first batch still "
            "comes whole).");
  t.integer("replica.fetch.wait.max.ms", &C::replica_fetch_wait_max_ms, "500", 0, kI32Max,
            "Longest wait of a follower's fetch for new data; at most replica.lag.time.max.ms.");
  t.integer("replica.fetch.backoff.ms", &C::replica_fetch_backoff_ms, "1000", 0, kI32Max,
            "Pause of a follower's fetcher after a failed fetch.");
  // Replication throttle of catching-up (reassigned) replicas; -1 = unlimited (Kafka's default
  // is Long.MAX_VALUE, the same in effect). Strata applies the follower side only.
  t.integer("leader.replication.throttled.rate", &C::leader_replication_throttled_rate, "-1",
            int64_t{-1}, kI64Max,
            "Bytes/s a leader sends to replicas a reassignment is adding (-1 = unlimited); "
            "accepted for Kafka's tools, the follower side enforces the throttle.",
            kDyn);
  t.integer("follower.replication.throttled.rate", &C::follower_replication_throttled_rate, "-1",
            int64_t{-1}, kI64Max,
            "Bytes/s this broker fetches for its replicas that a reassignment is adding, over all "
            "its fetchers (-1 = unlimited); in-sync replicas are never throttled.",
            kDyn);
  // Client quotas
  t.integer("quota.window.num", &C::quota_window_num, "11", 1, kI32Max,
            "Windows a client quota's rate is measured over (KIP-13; docs/operations.md, Quotas).");
  t.integer("quota.window.size.seconds", &C::quota_window_size_seconds, "1", 1, kI32Max,
            "Length of one client quota rate window.");
  t.one_of("compression.type", &C::compression_type, "producer",
           {"producer", "uncompressed", "none", "gzip", "snappy", "lz4", "zstd"},
           "Codec batches are stored with: producer (keep the producer's) or "
           "uncompressed/gzip/snappy/lz4/zstd (recompress).",
           kDyn);
  t.one_of("log.message.timestamp.type", &C::log_message_timestamp_type, "CreateTime",
           {"CreateTime", "LogAppendTime"},
           "CreateTime keeps the producer's timestamps; LogAppendTime stamps the broker's.", kDyn);
  t.integer("log.retention.ms", &C::log_retention_ms, "604800000", int64_t{-1}, kI64Max,
            "Default retention.ms of topics: segments older than this are deleted.", kDyn);
  t.integer("log.retention.bytes", &C::log_retention_bytes, "-1", int64_t{-1}, kI64Max,
            "Default retention.bytes of topics: old segments are deleted above this size.", kDyn);
  // A LIST in DescribeConfigs (as cleanup.policy), spelled as one of its four combinations.
  t.one_of("log.cleanup.policy", &C::log_cleanup_policy, "delete",
           {"delete", "compact", "compact,delete", "delete,compact"},
           "Default cleanup.policy of topics: delete or compact.", kDyn, ConfigType::list);
  // Retention task and log cleaner (broker/topics/log_tasks.h)
  t.integer(
      "log.retention.check.interval.ms", &C::log_retention_check_interval_ms, "300000", int64_t{1},
      kI64Max,
      "How often segments are checked for deletion by retention.ms/retention.bytes/log start.");
  t.boolean("log.cleaner.enable", &C::log_cleaner_enable, "true",
            "Run the log cleaner (compaction of cleanup.policy=compact topics).");
  t.integer("log.cleaner.threads", &C::log_cleaner_threads, "1", 1, 64,
            "Background threads compacting logs.");
  t.decimal("log.cleaner.io.max.bytes.per.second", &C::log_cleaner_io_max_bytes_per_second,
            "1.7976931348623157E308", 1, 1.7976931348623157e308,
            "Cap on the cleaner's read+write rate, so produce latency stays flat.", kDyn);
  t.decimal("log.cleaner.min.cleanable.ratio", &C::log_cleaner_min_cleanable_ratio, "0.5", 0, 1,
            "Default min.cleanable.dirty.ratio: dirty share of a log that triggers cleaning.",
            kDyn);
  t.integer("log.cleaner.delete.retention.ms", &C::log_cleaner_delete_retention_ms, "86400000",
            int64_t{0}, kI64Max,
            "Default delete.retention.ms: how long tombstones survive after their first cleaning.",
            kDyn);
  t.integer("log.cleaner.min.compaction.lag.ms", &C::log_cleaner_min_compaction_lag_ms, "0",
            int64_t{0}, kI64Max,
            "Default min.compaction.lag.ms: records younger than this are never compacted.", kDyn);
  t.integer("log.cleaner.backoff.ms", &C::log_cleaner_backoff_ms, "15000", int64_t{0}, kI64Max,
            "Sleep of a cleaner thread when no log needs cleaning.");
  t.one_of("log.level", &C::log_level, "info",
           {"trace", "debug", "info", "warn", "error", "critical", "off"},
           "Broker log level: trace, debug, info, warn, error.");
  // Consumer groups
  t.integer("group.initial.rebalance.delay.ms", &C::group_initial_rebalance_delay_ms, "3000", 0,
            kI32Max,
            "How long the first rebalance of an empty group waits for more members to join.");
  t.integer("group.min.session.timeout.ms", &C::group_min_session_timeout_ms, "6000", 0, kI32Max,
            "Smallest session.timeout.ms a group member may ask for (else "
            "INVALID_SESSION_TIMEOUT).");
  t.integer(
      "group.max.session.timeout.ms", &C::group_max_session_timeout_ms, "1800000", 0, kI32Max,
      "Largest session.timeout.ms a group member may ask for (else INVALID_SESSION_TIMEOUT).");
  t.integer("offset.metadata.max.bytes", &C::offset_metadata_max_bytes, "4096", 0, kI32Max,
            "Largest metadata string of a committed offset (else OFFSET_METADATA_TOO_LARGE).");
  t.integer("offsets.retention.minutes", &C::offsets_retention_minutes, "10080", 1, kI32Max,
            "Committed offsets of a group that has been empty this long are deleted.");
  t.integer("offsets.retention.check.interval.ms", &C::offsets_retention_check_interval_ms,
            "600000", int64_t{1}, kI64Max, "How often expired committed offsets are looked for.");
  t.integer("offsets.topic.num.partitions", &C::offsets_topic_num_partitions, "50", 1, 1000,
            "Partitions of __consumer_offsets, where groups live (do not change once it exists).");
  t.integer(
      "offsets.topic.replication.factor", &C::offsets_topic_replication_factor, "3", 1, 32767,
      "Replicas of __consumer_offsets in cluster mode (created once this many brokers live).");
  t.integer("offsets.topic.segment.bytes", &C::offsets_topic_segment_bytes, "104857600", 1, kI32Max,
            "segment.bytes of __consumer_offsets.");
  t.integer("offsets.commit.timeout.ms", &C::offsets_commit_timeout_ms, "5000", 1, kI32Max,
            "How long an offset commit waits for the in-sync replicas before it fails.");
  // Idempotent producer
  t.integer("producer.id.expiration.ms", &C::producer_id_expiration_ms, "86400000", int64_t{1},
            kI64Max,
            "Idempotent-producer state of a partition is dropped after this long without a write.");
  t.integer("producer.id.expiration.check.interval.ms",
            &C::producer_id_expiration_check_interval_ms, "600000", int64_t{1}, kI64Max,
            "How often expired idempotent-producer state is looked for.");
  // Transactions
  t.integer("transaction.max.timeout.ms", &C::transaction_max_timeout_ms, "900000", 1, kI32Max,
            "The longest transaction timeout a producer may ask for (InitProducerId asking for "
            "more gets INVALID_TRANSACTION_TIMEOUT).");
  t.integer("transaction.abort.timed.out.transaction.cleanup.interval.ms",
            &C::transaction_abort_timed_out_transaction_cleanup_interval_ms, "10000", 1, kI32Max,
            "How often transactions open longer than their timeout are looked for and aborted.");
  t.integer("transaction.state.log.num.partitions", &C::transaction_state_log_num_partitions, "50",
            1, 1000,
            "Partitions of __transaction_state, where transactional ids live (do not change once "
            "it exists).");
  t.integer("transaction.state.log.replication.factor",
            &C::transaction_state_log_replication_factor, "3", 1, 32767,
            "Replicas of __transaction_state in cluster mode.");
  t.integer("transaction.state.log.min.isr", &C::transaction_state_log_min_isr, "2", 1, 32767,
            "min.insync.replicas of __transaction_state in cluster mode.");
  t.integer("transaction.state.log.segment.bytes", &C::transaction_state_log_segment_bytes,
            "104857600", 1, kI32Max, "segment.bytes of __transaction_state.");
  t.integer("transactional.id.expiration.ms", &C::transactional_id_expiration_ms, "604800000",
            int64_t{1}, kI64Max,
            "A transactional id without an open transaction is forgotten after this long without "
            "a request from its producer.");
  // Scan sessions
  t.integer("pk.scan.session.timeout.ms", &C::pk_scan_session_timeout_ms, "30000", int64_t{1},
            kI64Max,
            "A primary-key Scan whose next page is not requested within this long is dropped and "
            "its snapshot released.");
  t.integer("pk.scan.max.sessions", &C::pk_scan_max_sessions, "1000", 1, kI32Max,
            "Open primary-key Scans kept at most; beyond it the least recently used one is "
            "dropped.");
  // Prometheus metrics; docs/operations.md
  t.custom("metrics.listener", ConfigType::string, "127.0.0.1:9644",
           "host:port serving Prometheus metrics at /metrics; port 0 = a free port; empty = off.",
           kNone, [](const std::string& v, C* c) -> Status {
             if (!v.empty()) {
               auto a = metrics::parse_metrics_listener(v);
               if (!a.ok()) return Status(Errc::invalid_argument, "config " + a.status().message());
             }
             if (c) c->metrics_listener = v;
             return Status::Ok();
           });
  add_metrics_security_keys(t);
  // The embedded Schema Registry; docs/schema-registry.md
  t.custom("schema.registry.listener", ConfigType::string, "http://127.0.0.1:8081",
           "http://host:port (or https://, with the schema.registry.ssl.* keys) serving the "
           "embedded Schema Registry (Confluent's REST API); port 0 = a free port; empty = off. "
           "In a cluster every broker serves it; the leader of "
           "_schemas is its one writer, the others answer reads from their replica's copy and "
           "forward writes to it.",
           kNone, [](const std::string& v, C* c) -> Status {
             if (!v.empty()) {
               auto a = schema::parse_registry_listener(v);
               if (!a.ok()) return Status(Errc::invalid_argument, "config " + a.status().message());
             }
             if (c) c->schema_registry_listener = v;
             return Status::Ok();
           });
  t.integer("schema.registry.topic.replication.factor",
            &C::schema_registry_topic_replication_factor, "3", 1, 32767,
            "Replicas of _schemas in cluster mode (created once this many brokers live).");
  add_registry_security_keys(t);
  // Checkpoints of primary-key state; docs/pk-tables.md
  t.integer("pk.checkpoint.retained", &C::pk_checkpoint_retained, "2", 1, 100,
            "RocksDB checkpoints kept per primary-key partition (the newest bounds log "
            "retention).");
  // Memory of primary-key state; docs/pk-tables.md, docs/operations.md
  t.integer("pk.block.cache.bytes", &C::pk_block_cache_bytes, "268435456", int64_t{8} << 20,
            int64_t{1} << 40,
            "RocksDB block cache shared by every primary-key partition, memtables included "
            "(size it to the hot rows: lookups that miss it read the disk).");
  t.integer("pk.write.buffer.bytes", &C::pk_write_buffer_bytes, "67108864", int64_t{1} << 20,
            int64_t{1} << 40,
            "Memtables of all primary-key partitions together (charged to pk.block.cache.bytes); "
            "beyond it a partition being written flushes its memtable, and while memtables "
            "taking writes hold half of it, a partition not written for 1 s flushes a memtable "
            "of 1/64 of it or more.");
  t.integer("pk.memtable.idle.flush.ms", &C::pk_memtable_idle_flush_ms, "60000", int64_t{1},
            int64_t{1} << 40,
            "A primary-key partition not written for this long flushes its memtable and gives "
            "back its memtable bloom filter (held while it writes >= 1 MiB per this period), so "
            "idle partitions hold no write buffer.");
  t.integer("pk.row.cache.bytes", &C::pk_row_cache_bytes, "134217728", int64_t{0}, int64_t{1} << 40,
            "Rows kept in memory for lookups, all primary-key partitions together (filled by "
            "lookups, never by writes; rows not read lately evicted); 0 = off.");
  // Authorization; docs/security.md
  t.string("authorizer.class.name", &C::authorizer_class_name, "",
           "Empty = no authorization (every request allowed, the ACL APIs answer "
           "SECURITY_DISABLED); any other value enables Strata's ACL authorizer (Kafka's "
           "AclAuthorizer / StandardAuthorizer class names are accepted).",
           kNone, check_authorizer_class);
  t.custom(
      "super.users", ConfigType::list, "",
      "Principals allowed everything whatever the ACLs say, ';'-separated (User:admin;User:b).",
      kNone, set_super_users);
  t.boolean("allow.everyone.if.no.acl.found", &C::allow_everyone_if_no_acl_found, "false",
            "With an authorizer: allow a request on a resource no ACL matches at all (default: "
            "deny).");
  t.integer("test.fault.pk.compact.before.checkpoint", &C::test_fault_pk_compact_before_checkpoint,
            "0", int64_t{0}, int64_t{1},
            "TEST ONLY (needs --enable-test-faults): 1 = fully compact a primary-key partition's "
            "RocksDB (running the TTL filter) before each checkpoint; 0 = off.");
  t.integer("test.fault.drop.produce.response.every.n",
            &C::test_fault_drop_produce_response_every_n, "0", int64_t{0}, kI64Max,
            "TEST ONLY (needs --enable-test-faults): append every Nth produce but close the "
            "connection instead of answering; 0 = off.");
  add_security_keys(t);
  return t;
}

}  // namespace

const KeyTable<BrokerConfig>& broker_key_table() {
  static const KeyTable<BrokerConfig> table = build_table();
  return table;
}

const std::vector<BrokerKeyDef>& config_keys() { return broker_key_table().keys(); }

const BrokerKeyDef* find_broker_key(std::string_view name) { return broker_key_table().find(name); }

std::string default_config_text() {
  std::string out;
  for (const auto& k : config_keys()) {
    out.append("# ").append(k.doc).append("\n");
    if (k.name.starts_with("test.")) out.append("#");
    out.append(k.name).append("=").append(k.default_value).append("\n\n");
  }
  return out;
}

BrokerConfig::BrokerConfig() {
  // Parsed once; every default-constructed config is a copy.
  static const BrokerConfig defaults = [] {
    auto c = parse_config("", {});
    if (!c.ok()) std::abort();  // a default fails its own key's check: a table bug
    return std::move(*c);
  }();
  *this = defaults;
}

Result<std::vector<Listener>> parse_listeners(const std::string& value) {
  std::vector<Listener> out;
  std::stringstream ss(value);
  std::string item;
  while (std::getline(ss, item, ',')) {
    item = trim(item);
    if (item.empty()) continue;
    auto sep = item.find("://");
    if (sep == std::string::npos)
      return Result<std::vector<Listener>>(Errc::invalid_argument,
                                           "'" + item + "' is not NAME://host:port");
    Listener l;
    l.name = item.substr(0, sep);
    std::string hp = item.substr(sep + 3);
    auto colon = hp.rfind(':');
    if (colon == std::string::npos)
      return Result<std::vector<Listener>>(Errc::invalid_argument, "'" + item + "' has no port");
    l.host = hp.substr(0, colon);
    if (l.host.size() >= 2 && l.host.front() == '[' && l.host.back() == ']') {
      l.host = l.host.substr(1, l.host.size() - 2);
    }
    int32_t port = 0;
    Status st = parse_int<int32_t>("port", hp.substr(colon + 1), 0, 65535, port);
    if (!st.ok()) return st;
    l.port = static_cast<uint16_t>(port);
    out.push_back(l);
  }
  return out;
}

Result<BrokerConfig> parse_config(const std::string& text,
                                  const std::vector<std::string>& overrides) {
  std::map<std::string, std::string> kv;
  for (const auto& d : config_keys()) kv[d.name] = d.default_value;
  std::set<std::string> explicit_keys;

  auto apply = [&kv, &explicit_keys](const std::string& line, const std::string& where) -> Status {
    std::string l = trim(line);
    if (l.empty() || l[0] == '#' || l[0] == '!') return Status::Ok();
    auto eq = l.find_first_of("=:");
    if (eq == std::string::npos)
      return Status(Errc::invalid_argument, where + ": expected key=value: " + l);
    std::string key = trim(l.substr(0, eq));
    std::string value = trim(l.substr(eq + 1));
    if (is_listener_override(key)) {
      Status st = check_listener_override(key, value);
      if (!st.ok()) return Status(Errc::invalid_argument, where + ": " + st.message());
    } else if (!kv.count(key)) {
      return Status(Errc::invalid_argument, where + ": unknown config key '" + key + "'");
    }
    kv[key] = value;
    explicit_keys.insert(key);
    return Status::Ok();
  };

  std::stringstream ss(text);
  std::string line;
  int n = 0;
  while (std::getline(ss, line)) {
    ++n;
    STRATA_RETURN_IF_ERROR(apply(line, "line " + std::to_string(n)));
  }
  for (const auto& o : overrides) STRATA_RETURN_IF_ERROR(apply(o, "--override"));

  BrokerConfig c{BrokerConfig::Unset{}};
  for (const auto& d : config_keys()) STRATA_RETURN_IF_ERROR(d.apply(kv[d.name], &c));
  STRATA_RETURN_IF_ERROR(resolve_listener_protocols(c));
  STRATA_RETURN_IF_ERROR(check_key_combinations(c));
  STRATA_RETURN_IF_ERROR(check_metrics_security(c));
  c.values = std::move(kv);
  c.explicit_keys = std::move(explicit_keys);
  return c;
}

Result<BrokerConfig> load_config(const std::string& path,
                                 const std::vector<std::string>& overrides) {
  std::string text;
  if (!path.empty()) {
    std::ifstream in(path);
    if (!in) return Result<BrokerConfig>(Errc::not_found, "cannot read config file " + path);
    std::stringstream buf;
    buf << in.rdbuf();
    text = buf.str();
  }
  return parse_config(text, overrides);
}

}  // namespace strata::broker
