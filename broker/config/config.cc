#include "broker/config/config.h"

#include <charconv>
#include <fstream>
#include <functional>
#include <sstream>

#include "broker/metrics/exporter.h"  // metrics.listener syntax

namespace strata::broker {
namespace {

using Setter = std::function<Status(BrokerConfig&, const std::string&)>;

struct KeyDef {
  ConfigKeyDoc doc;
  Setter set;
};

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

Setter bool_key(bool BrokerConfig::*field, const char* name) {
  return [field, name](BrokerConfig& c, const std::string& v) -> Status {
    if (v == "true")
      c.*field = true;
    else if (v == "false")
      c.*field = false;
    else
      return Status(Errc::invalid_argument,
                    std::string("config ") + name + ": '" + v + "' is not true or false");
    return Status::Ok();
  };
}

Setter enum_key(std::string BrokerConfig::*field, const char* name,
                std::vector<std::string> allowed) {
  return [field, name, allowed](BrokerConfig& c, const std::string& v) -> Status {
    for (const auto& a : allowed) {
      if (a == v) {
        c.*field = v;
        return Status::Ok();
      }
    }
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    return Status(Errc::invalid_argument,
                  std::string("config ") + name + ": '" + v + "' is not one of " + list);
  };
}

const std::vector<KeyDef>& key_defs() {
  static const std::vector<KeyDef> defs = [] {
    std::vector<KeyDef> d;
    auto i32 = [&d](const char* n, const char* def, const char* doc, int32_t BrokerConfig::*f,
                    int32_t lo, int32_t hi) {
      d.push_back({{n, def, doc}, [=](BrokerConfig& c, const std::string& v) {
                     return parse_int<int32_t>(n, v, lo, hi, c.*f);
                   }});
    };
    auto i64 = [&d](const char* n, const char* def, const char* doc, int64_t BrokerConfig::*f,
                    int64_t lo, int64_t hi) {
      d.push_back({{n, def, doc}, [=](BrokerConfig& c, const std::string& v) {
                     return parse_int<int64_t>(n, v, lo, hi, c.*f);
                   }});
    };
    constexpr int32_t kI32Max = INT32_MAX;
    constexpr int64_t kI64Max = INT64_MAX;
    i32("node.id", "1", "Id of this broker; reported in Metadata and stored in meta.properties.",
        &BrokerConfig::node_id, 0, kI32Max);
    d.push_back({{"listeners", "PLAINTEXT://127.0.0.1:9092",
                  "Comma-separated NAME://host:port to listen on; port 0 binds a free port."},
                 [](BrokerConfig& c, const std::string& v) -> Status {
                   auto r = parse_listeners(v);
                   if (!r.ok())
                     return Status(Errc::invalid_argument,
                                   "config listeners: " + r.status().message());
                   if (r->empty()) return Status(Errc::invalid_argument, "config listeners: empty");
                   c.listeners = *r;
                   return Status::Ok();
                 }});
    d.push_back({{"advertised.listeners", "",
                  "Addresses given to clients in Metadata; empty = the bound listeners."},
                 [](BrokerConfig& c, const std::string& v) -> Status {
                   if (v.empty()) {
                     c.advertised_listeners.clear();
                     return Status::Ok();
                   }
                   auto r = parse_listeners(v);
                   if (!r.ok())
                     return Status(Errc::invalid_argument,
                                   "config advertised.listeners: " + r.status().message());
                   c.advertised_listeners = *r;
                   return Status::Ok();
                 }});
    d.push_back({{"log.dirs", "./data", "Comma-separated directories holding partition logs."},
                 [](BrokerConfig& c, const std::string& v) -> Status {
                   c.log_dirs.clear();
                   std::stringstream ss(v);
                   std::string item;
                   while (std::getline(ss, item, ',')) {
                     item = trim(item);
                     if (!item.empty()) c.log_dirs.push_back(item);
                   }
                   if (c.log_dirs.empty())
                     return Status(Errc::invalid_argument, "config log.dirs: empty");
                   return Status::Ok();
                 }});
    i32("num.io.threads", "0", "Threads serving network I/O and requests; 0 = number of cores.",
        &BrokerConfig::num_io_threads, 0, 1024);
    i32("num.partitions", "1",
        "Partition count of auto-created topics and of CreateTopics with -1.",
        &BrokerConfig::num_partitions, 1, 100000);
    d.push_back({{"default.replication.factor", "1",
                  "Replication factor used when CreateTopics passes -1; only 1 exists today."},
                 [](BrokerConfig& c, const std::string& v) -> Status {
                   return parse_int<int16_t>("default.replication.factor", v, 1, 1,
                                             c.default_replication_factor);
                 }});
    d.push_back({{"auto.create.topics.enable", "true",
                  "Create unknown topics named in Metadata requests (if the client allows it)."},
                 bool_key(&BrokerConfig::auto_create_topics_enable, "auto.create.topics.enable")});
    i64("log.segment.bytes", "1073741824",
        "Roll a new segment when the active one reaches this size.",
        &BrokerConfig::log_segment_bytes, 14, kI32Max);
    i64("log.roll.ms", "604800000", "Roll a new segment when the active one is older than this.",
        &BrokerConfig::log_roll_ms, 1, kI64Max);
    i64("log.flush.interval.messages", "9223372036854775807",
        "fsync a partition after this many messages; the default leaves flushing to the OS.",
        &BrokerConfig::log_flush_interval_messages, 1, kI64Max);
    i64("log.flush.interval.ms", "9223372036854775807",
        "fsync a partition when its oldest unflushed message is this old; default: never.",
        &BrokerConfig::log_flush_interval_ms, 0, kI64Max);
    i64("log.flush.scheduler.interval.ms", "1000",
        "How often the time-based flush policy is checked.",
        &BrokerConfig::log_flush_scheduler_interval_ms, 1, kI64Max);
    i32("log.index.interval.bytes", "4096", "Bytes between two entries of the sparse offset index.",
        &BrokerConfig::log_index_interval_bytes, 0, kI32Max);
    i32("log.index.size.max.bytes", "10485760",
        "Largest .index file; a full index rolls the segment.",
        &BrokerConfig::log_index_size_max_bytes, 4, kI32Max);
    i32("message.max.bytes", "1048588",
        "Largest record batch a producer may send (after the broker's recompression, if any).",
        &BrokerConfig::message_max_bytes, 0, kI32Max);
    i32("socket.request.max.bytes", "104857600",
        "Largest request frame; a larger size prefix closes the connection.",
        &BrokerConfig::socket_request_max_bytes, 1, kI32Max);
    i32("max.connections", "2147483647",
        "Connections the broker keeps open at once; a new one past it is closed at accept.",
        &BrokerConfig::max_connections, 0, kI32Max);
    i32("max.connections.per.ip", "2147483647",
        "Connections one client IP address may keep open; a new one past it is closed at accept.",
        &BrokerConfig::max_connections_per_ip, 0, kI32Max);
    i64("connections.max.idle.ms", "600000",
        "Close a connection with nothing in flight and no traffic for this long; -1 = never.",
        &BrokerConfig::connections_max_idle_ms, -1, kI64Max);
    i64("queued.max.request.bytes", "536870912",
        "Request-body bytes all connections may hold at once; past it reading pauses (-1 = no "
        "bound; Kafka's default is -1).",
        &BrokerConfig::queued_max_request_bytes, -1, kI64Max);
    i64("socket.request.read.timeout.ms", "30000",
        "Once a request's size has arrived, its whole frame must arrive within this time, else "
        "the connection is closed (slow senders); 0 = no deadline.",
        &BrokerConfig::socket_request_read_timeout_ms, 0, kI64Max);
    i32("max.broker.partitions", "10000",
        "Partitions this broker holds at most; CreateTopics/CreatePartitions past it get "
        "POLICY_VIOLATION.",
        &BrokerConfig::max_broker_partitions, 1, kI32Max);
    i32("quota.window.num", "11",
        "Windows a client quota's rate is measured over (KIP-13; docs/operations.md, Quotas).",
        &BrokerConfig::quota_window_num, 1, kI32Max);
    i32("quota.window.size.seconds", "1", "Length of one client quota rate window.",
        &BrokerConfig::quota_window_size_seconds, 1, kI32Max);
    d.push_back({{"compression.type", "producer",
                  "Codec batches are stored with: producer (keep the producer's) or "
                  "uncompressed/gzip/snappy/lz4/zstd (recompress)."},
                 enum_key(&BrokerConfig::compression_type, "compression.type",
                          {"producer", "uncompressed", "none", "gzip", "snappy", "lz4", "zstd"})});
    d.push_back({{"log.message.timestamp.type", "CreateTime",
                  "CreateTime keeps the producer's timestamps; LogAppendTime stamps the broker's."},
                 enum_key(&BrokerConfig::log_message_timestamp_type, "log.message.timestamp.type",
                          {"CreateTime", "LogAppendTime"})});
    i64("log.retention.ms", "604800000",
        "Default retention.ms of topics: segments older than this are deleted.",
        &BrokerConfig::log_retention_ms, -1, kI64Max);
    i64("log.retention.bytes", "-1",
        "Default retention.bytes of topics: old segments are deleted above this size.",
        &BrokerConfig::log_retention_bytes, -1, kI64Max);
    d.push_back(
        {{"log.cleanup.policy", "delete", "Default cleanup.policy of topics: delete or compact."},
         enum_key(&BrokerConfig::log_cleanup_policy, "log.cleanup.policy",
                  {"delete", "compact", "compact,delete", "delete,compact"})});
    {  // retention task and log cleaner (broker/topics/log_tasks.h)
      auto f64 = [&d](const char* n, const char* def, const char* doc, double BrokerConfig::*f,
                      double lo, double hi) {
        d.push_back({{n, def, doc}, [=](BrokerConfig& c, const std::string& v) -> Status {
                       double x = 0;
                       auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
                       if (ec != std::errc() || p != v.data() + v.size() || !(x >= lo && x <= hi)) {
                         return Status(
                             Errc::invalid_argument,
                             std::string("config ") + n + ": '" + v + "' is not a number in range");
                       }
                       c.*f = x;
                       return Status::Ok();
                     }});
      };
      i64("log.retention.check.interval.ms", "300000",
          "How often segments are checked for deletion by retention.ms/retention.bytes/log start.",
          &BrokerConfig::log_retention_check_interval_ms, 1, kI64Max);
      d.push_back({{"log.cleaner.enable", "true",
                    "Run the log cleaner (compaction of cleanup.policy=compact topics)."},
                   bool_key(&BrokerConfig::log_cleaner_enable, "log.cleaner.enable")});
      i32("log.cleaner.threads", "1", "Background threads compacting logs.",
          &BrokerConfig::log_cleaner_threads, 1, 64);
      f64("log.cleaner.io.max.bytes.per.second", "1.7976931348623157E308",
          "Cap on the cleaner's read+write rate, so produce latency stays flat.",
          &BrokerConfig::log_cleaner_io_max_bytes_per_second, 1, 1.7976931348623157e308);
      f64("log.cleaner.min.cleanable.ratio", "0.5",
          "Default min.cleanable.dirty.ratio: dirty share of a log that triggers cleaning.",
          &BrokerConfig::log_cleaner_min_cleanable_ratio, 0, 1);
      i64("log.cleaner.delete.retention.ms", "86400000",
          "Default delete.retention.ms: how long tombstones survive after their first cleaning.",
          &BrokerConfig::log_cleaner_delete_retention_ms, 0, kI64Max);
      i64("log.cleaner.min.compaction.lag.ms", "0",
          "Default min.compaction.lag.ms: records younger than this are never compacted.",
          &BrokerConfig::log_cleaner_min_compaction_lag_ms, 0, kI64Max);
      i64("log.cleaner.backoff.ms", "15000",
          "Sleep of a cleaner thread when no log needs cleaning.",
          &BrokerConfig::log_cleaner_backoff_ms, 0, kI64Max);
    }
    d.push_back({{"log.level", "info", "Broker log level: trace, debug, info, warn, error."},
                 enum_key(&BrokerConfig::log_level, "log.level",
                          {"trace", "debug", "info", "warn", "error", "critical", "off"})});
    // Consumer groups
    i32("group.initial.rebalance.delay.ms", "3000",
        "How long the first rebalance of an empty group waits for more members to join.",
        &BrokerConfig::group_initial_rebalance_delay_ms, 0, kI32Max);
    i32("group.min.session.timeout.ms", "6000",
        "Smallest session.timeout.ms a group member may ask for (else INVALID_SESSION_TIMEOUT).",
        &BrokerConfig::group_min_session_timeout_ms, 0, kI32Max);
    i32("group.max.session.timeout.ms", "1800000",
        "Largest session.timeout.ms a group member may ask for (else INVALID_SESSION_TIMEOUT).",
        &BrokerConfig::group_max_session_timeout_ms, 0, kI32Max);
    i32("offset.metadata.max.bytes", "4096",
        "Largest metadata string of a committed offset (else OFFSET_METADATA_TOO_LARGE).",
        &BrokerConfig::offset_metadata_max_bytes, 0, kI32Max);
    i32("offsets.retention.minutes", "10080",
        "Committed offsets of a group that has been empty this long are deleted.",
        &BrokerConfig::offsets_retention_minutes, 1, kI32Max);
    i64("offsets.retention.check.interval.ms", "600000",
        "How often expired committed offsets are looked for.",
        &BrokerConfig::offsets_retention_check_interval_ms, 1, kI64Max);
    // Idempotent producer
    i64("producer.id.expiration.ms", "86400000",
        "Idempotent-producer state of a partition is dropped after this long without a write.",
        &BrokerConfig::producer_id_expiration_ms, 1, kI64Max);
    i64("producer.id.expiration.check.interval.ms", "600000",
        "How often expired idempotent-producer state is looked for.",
        &BrokerConfig::producer_id_expiration_check_interval_ms, 1, kI64Max);
    // Scan sessions
    i64("pk.scan.session.timeout.ms", "30000",
        "A primary-key Scan whose next page is not requested within this long is dropped and its "
        "snapshot released.",
        &BrokerConfig::pk_scan_session_timeout_ms, 1, kI64Max);
    i32("pk.scan.max.sessions", "1000",
        "Open primary-key Scans kept at most; beyond it the least recently used one is dropped.",
        &BrokerConfig::pk_scan_max_sessions, 1, kI32Max);
    // Prometheus metrics; docs/operations.md
    d.push_back(
        {{"metrics.listener", "127.0.0.1:9644",
          "host:port serving Prometheus metrics at /metrics; port 0 = a free port; empty = off."},
         [](BrokerConfig& c, const std::string& v) -> Status {
           if (!v.empty()) {
             auto a = metrics::parse_metrics_listener(v);
             if (!a.ok()) return Status(Errc::invalid_argument, "config " + a.status().message());
           }
           c.metrics_listener = v;
           return Status::Ok();
         }});
    // Checkpoints of primary-key state; docs/pk-tables.md
    i32("pk.checkpoint.retained", "2",
        "RocksDB checkpoints kept per primary-key partition (the newest bounds log retention).",
        &BrokerConfig::pk_checkpoint_retained, 1, 100);
    i64("test.fault.pk.compact.before.checkpoint", "0",
        "TEST ONLY (needs --enable-test-faults): 1 = fully compact a primary-key partition's "
        "RocksDB (running the TTL filter) before each checkpoint; 0 = off.",
        &BrokerConfig::test_fault_pk_compact_before_checkpoint, 0, 1);
    i64("test.fault.drop.produce.response.every.n", "0",
        "TEST ONLY (needs --enable-test-faults): append every Nth produce but close the "
        "connection instead of answering; 0 = off.",
        &BrokerConfig::test_fault_drop_produce_response_every_n, 0, kI64Max);
    return d;
  }();
  return defs;
}

}  // namespace

const std::vector<ConfigKeyDoc>& config_keys() {
  static const std::vector<ConfigKeyDoc> docs = [] {
    std::vector<ConfigKeyDoc> v;
    for (const auto& d : key_defs()) v.push_back(d.doc);
    return v;
  }();
  return docs;
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
  for (const auto& d : key_defs()) kv[d.doc.name] = d.doc.default_value;
  std::set<std::string> explicit_keys;

  auto apply = [&kv, &explicit_keys](const std::string& line, const std::string& where) -> Status {
    std::string l = trim(line);
    if (l.empty() || l[0] == '#' || l[0] == '!') return Status::Ok();
    auto eq = l.find_first_of("=:");
    if (eq == std::string::npos)
      return Status(Errc::invalid_argument, where + ": expected key=value: " + l);
    std::string key = trim(l.substr(0, eq));
    std::string value = trim(l.substr(eq + 1));
    if (!kv.count(key))
      return Status(Errc::invalid_argument, where + ": unknown config key '" + key + "'");
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

  BrokerConfig c;
  for (const auto& d : key_defs()) STRATA_RETURN_IF_ERROR(d.set(c, kv[d.doc.name]));
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
