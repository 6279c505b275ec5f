// The topic config table and its resolution (see topic_config.h).
#include "broker/config/topic_config.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <regex>
#include <sstream>

#include "pkindex/table_config.h"

namespace strata::broker {
namespace {

ConfigValidator validate_table_key(const char* name) {
  return [name](const std::string& v) -> std::optional<std::string> {
    std::string why = pkindex::check_table_key(name, v);
    if (why.empty()) return std::nullopt;
    return why;
  };
}

bool parse_i64(const std::string& v, int64_t& out) {
  int64_t x = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || p != v.data() + v.size() || v.empty()) return false;
  out = x;
  return true;
}

std::vector<std::string> split_list(const std::string& v) {
  std::vector<std::string> out;
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t b = item.find_first_not_of(' ');
    size_t e = item.find_last_not_of(' ');
    out.push_back(b == std::string::npos ? "" : item.substr(b, e - b + 1));
  }
  return out;
}

StoredCompression parse_compression(const std::string& v) {
  if (v == "uncompressed" || v == "none") return StoredCompression::none;
  if (v == "gzip") return StoredCompression::gzip;
  if (v == "snappy") return StoredCompression::snappy;
  if (v == "lz4") return StoredCompression::lz4;
  if (v == "zstd") return StoredCompression::zstd;
  return StoredCompression::producer;
}

// Kafka's BOOLEAN parsing: true/false in any case.
std::optional<std::string> check_bool(const std::string& v) {
  std::string lower(v);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "true" || lower == "false") return std::nullopt;
  return "Expected value to be either true or false";
}

// What Kafka 3.x's MetadataVersionValidator accepted, loosely: a release ("0.10.2", "2.8",
// "3.0") optionally with an "-IV<n>" suffix ("3.0-IV1"). The value is never interpreted.
std::optional<std::string> check_message_format_version(const std::string& v) {
  static const std::regex version(R"([0-9]+(\.[0-9]+){1,3}(-IV[0-9]+)?)");
  if (std::regex_match(v, version)) return std::nullopt;
  return "Version `" + v + "` is not a valid version";
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

ConfigValidator validate_long(int64_t lo, int64_t hi) {
  return [lo, hi](const std::string& v) -> std::optional<std::string> {
    int64_t x = 0;
    if (!parse_i64(v, x)) return "Not a number of type LONG";
    if (x < lo) return "Value must be at least " + std::to_string(lo);
    if (x > hi) return "Value must be no more than " + std::to_string(hi);
    return std::nullopt;
  };
}

ConfigValidator validate_double(double lo, double hi) {
  return [lo, hi](const std::string& v) -> std::optional<std::string> {
    char* end = nullptr;
    double x = std::strtod(v.c_str(), &end);
    if (v.empty() || end != v.c_str() + v.size()) return "Not a number of type DOUBLE";
    if (x < lo || x > hi) {
      return "Value must be between " + std::to_string(lo) + " and " + std::to_string(hi);
    }
    return std::nullopt;
  };
}

ConfigValidator validate_one_of(std::vector<std::string> allowed) {
  return [allowed](const std::string& v) -> std::optional<std::string> {
    for (const auto& a : allowed) {
      if (a == v) return std::nullopt;
    }
    return "String must be one of: " + join(allowed);
  };
}

ConfigValidator validate_list_of(std::vector<std::string> allowed) {
  return [allowed](const std::string& v) -> std::optional<std::string> {
    auto items = split_list(v);
    if (items.empty()) return "List must not be empty";
    for (const auto& item : items) {
      bool ok = false;
      for (const auto& a : allowed) ok |= a == item;
      if (!ok) return "List items must be among: " + join(allowed);
    }
    return std::nullopt;
  };
}

const std::vector<TopicKeyDef>& topic_key_table() {
  using T = ConfigType;
  constexpr int64_t kI32 = INT32_MAX;
  constexpr int64_t kI64 = INT64_MAX;
  static const std::vector<TopicKeyDef> table = {
      {"cleanup.policy", T::list, "log.cleanup.policy", "delete",
       validate_list_of({"delete", "compact"}),
       "delete: remove old segments by retention.ms/retention.bytes; compact: keep the latest "
       "record per key; both may be given.",
       kConfigNoFlags},
      {"delete.retention.ms", T::long_, "log.cleaner.delete.retention.ms", "86400000",
       validate_long(0, kI64),
       "How long a tombstone stays readable after the cleaner first saw it (compacted topics).",
       kConfigNoFlags},
      {"min.cleanable.dirty.ratio", T::double_, "log.cleaner.min.cleanable.ratio", "0.5",
       validate_double(0, 1), "Share of uncleaned bytes that triggers compaction.", kConfigNoFlags},
      {"min.compaction.lag.ms", T::long_, "log.cleaner.min.compaction.lag.ms", "0",
       validate_long(0, kI64), "Records younger than this are never compacted.", kConfigNoFlags},
      {"compression.type", T::string, "compression.type", "producer",
       validate_one_of({"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer", "none"}),
       "Codec batches are stored with; producer keeps the producer's codec.", kConfigNoFlags},
      {"flush.messages", T::long_, "log.flush.interval.messages", "9223372036854775807",
       validate_long(1, kI64), "fsync the log after this many messages.", kConfigNoFlags},
      {"flush.ms", T::long_, "log.flush.interval.ms", "9223372036854775807", validate_long(0, kI64),
       "fsync the log when unflushed data is this old.", kConfigNoFlags},
      {"index.interval.bytes", T::int_, "log.index.interval.bytes", "4096", validate_long(0, kI32),
       "Bytes appended between two offset-index entries.", kConfigNoFlags},
      {"max.message.bytes", T::int_, "message.max.bytes", "1048588", validate_long(0, kI32),
       "Largest record batch accepted (after recompression).", kConfigNoFlags},
      // Deprecated in Kafka 3.x and removed in 4.0; accepted and stored so 3.x-era topic
      // definitions still apply, without effect: Strata writes and serves only message format v2
      // (Fetch 4+) and so never down-converts. Defaults are Kafka 3.x's. No broker synonym: the
      // log.* keys are not broker configs here.
      {"message.downconversion.enable", T::boolean, "", "true", check_bool,
       "Deprecated (Kafka 3.x; removed in 4.0), accepted and ignored: Strata never down-converts "
       "message formats.",
       kConfigDeprecated},
      {"message.format.version", T::string, "", "3.0-IV1", check_message_format_version,
       "Deprecated (Kafka 3.x; removed in 4.0), accepted and ignored: Strata always writes "
       "message format v2.",
       kConfigDeprecated},
      {"message.timestamp.type", T::string, "log.message.timestamp.type", "CreateTime",
       validate_one_of({"CreateTime", "LogAppendTime"}),
       "CreateTime keeps the producer's timestamps; LogAppendTime stamps the broker's.",
       kConfigNoFlags},
      {"retention.bytes", T::long_, "log.retention.bytes", "-1", validate_long(-1, kI64),
       "Largest size of a partition before old segments are deleted; -1 = no limit.",
       kConfigNoFlags},
      {"retention.ms", T::long_, "log.retention.ms", "604800000", validate_long(-1, kI64),
       "Age after which whole segments are deleted; -1 = no limit.", kConfigNoFlags},
      {"segment.bytes", T::int_, "log.segment.bytes", "1073741824", validate_long(14, kI32),
       "Segment size at which a new segment is rolled.", kConfigNoFlags},
      {"segment.index.bytes", T::int_, "log.index.size.max.bytes", "10485760",
       validate_long(4, kI32), "Largest offset index; a full index rolls the segment.",
       kConfigNoFlags},
      {"segment.ms", T::long_, "log.roll.ms", "604800000", validate_long(1, kI64),
       "Segment age at which a new segment is rolled.", kConfigNoFlags},
      // Primary-key tables (docs/pk-tables.md): fixed at creation (read-only).
      {"table.type", T::string, "", "log", validate_table_key("table.type"),
       "log: a plain topic; primary-key: a primary-key table (state per partition in RocksDB).",
       kConfigReadOnly},
      {"table.merge-engine", T::string, "", "last_row", validate_table_key("table.merge-engine"),
       "last_row | first_row | versioned: how a write merges with the key's current row.",
       kConfigReadOnly},
      {"table.merge-engine.versioned.header", T::string, "", "",
       validate_table_key("table.merge-engine.versioned.header"),
       "versioned engine: record header holding the version (signed 64-bit big-endian).",
       kConfigReadOnly},
      {"table.changelog.image", T::string, "", "full", validate_table_key("table.changelog.image"),
       "full: changelog records carry before-images; wal: after-images only.", kConfigReadOnly},
      {"table.delete.behavior", T::string, "", "", validate_table_key("table.delete.behavior"),
       "allow | ignore | disable for null-value records; empty = allow for last_row, else ignore.",
       kConfigReadOnly},
      {"table.kv.ttl.ms", T::long_, "", "-1", validate_table_key("table.kv.ttl.ms"),
       "Row time-to-live from its last write (broker append time); -1 = none.", kConfigReadOnly},
      {"table.kv.snapshot.interval.ms", T::long_, "", "600000",
       validate_table_key("table.kv.snapshot.interval.ms"),
       "How often each partition's state is checkpointed (alterable; applies without restart).",
       kConfigNoFlags},
      {"table.partitioner", T::string, "", "murmur2", validate_table_key("table.partitioner"),
       "murmur2 (Java, kafka-python, KafkaJS) | crc32 (librdkafka consistent_random).",
       kConfigReadOnly},
  };
  return table;
}

const TopicKeyDef* find_topic_key(std::string_view name) {
  for (const auto& k : topic_key_table()) {
    if (name == k.name) return &k;
  }
  return nullptr;
}

Status validate_topic_config(const std::string& name, const std::string& value) {
  const TopicKeyDef* key = find_topic_key(name);
  if (!key) return Status(Errc::invalid_argument, "Unknown topic config name: " + name);
  if (key->validate) {
    if (auto why = key->validate(value)) {
      return Status(Errc::invalid_argument,
                    "Invalid value " + value + " for configuration " + name + ": " + *why);
    }
  }
  return Status::Ok();
}

Status validate_topic_configs(const std::map<std::string, std::string>& configs) {
  bool table_keys = false;
  for (const auto& [name, value] : configs) {
    STRATA_RETURN_IF_ERROR(validate_topic_config(name, value));
    table_keys |= name.rfind("table.", 0) == 0 && !(name == "table.type" && value == "log");
  }
  // Primary-key tables: the table.* keys must also make sense together.
  if (table_keys) STRATA_RETURN_IF_ERROR(pkindex::parse_table_config(configs).status());
  // One line for all of them, so a request carrying several does not flood the log.
  std::string deprecated;
  for (const auto& [name, value] : configs) {
    if (find_topic_key(name)->flags & kConfigDeprecated) {
      deprecated += (deprecated.empty() ? "" : ", ") + name + "=" + value;
    }
  }
  if (!deprecated.empty()) {
    spdlog::warn(
        "deprecated topic config(s) {}: accepted as Kafka 3.x did, but ignored (removed "
        "in Kafka 4.0)",
        deprecated);
  }
  return Status::Ok();
}

std::string topic_key_default(const TopicKeyDef& key, const BrokerConfig& broker) {
  if (key.broker_synonym[0] != '\0') {
    auto b = broker.values.find(key.broker_synonym);
    if (b != broker.values.end()) return b->second;
  }
  return key.default_value;
}

std::map<std::string, std::string> effective_topic_values(
    const std::map<std::string, std::string>& configs, const BrokerConfig& broker) {
  std::map<std::string, std::string> out;
  for (const auto& key : topic_key_table()) {
    auto it = configs.find(key.name);
    out[key.name] = it != configs.end() ? it->second : topic_key_default(key, broker);
  }
  return out;
}

TopicConfig resolve_topic_config(const std::map<std::string, std::string>& configs,
                                 const BrokerConfig& broker) {
  auto v = effective_topic_values(configs, broker);
  auto num = [&v](const char* key, int64_t fallback) {
    int64_t x = fallback;
    parse_i64(v[key], x);
    return x;
  };
  TopicConfig t;
  t.log.segment_bytes = num("segment.bytes", broker.log_segment_bytes);
  t.log.segment_ms = num("segment.ms", broker.log_roll_ms);
  t.log.flush_interval_messages = num("flush.messages", broker.log_flush_interval_messages);
  t.log.flush_interval_ms = num("flush.ms", broker.log_flush_interval_ms);
  t.log.index_interval_bytes =
      static_cast<int32_t>(num("index.interval.bytes", broker.log_index_interval_bytes));
  t.log.max_index_bytes =
      static_cast<int32_t>(num("segment.index.bytes", broker.log_index_size_max_bytes));
  t.max_message_bytes = static_cast<int32_t>(num("max.message.bytes", broker.message_max_bytes));
  t.compression = parse_compression(v["compression.type"]);
  t.log_append_time = v["message.timestamp.type"] == "LogAppendTime";
  t.retention_ms = num("retention.ms", broker.log_retention_ms);
  t.retention_bytes = num("retention.bytes", broker.log_retention_bytes);
  t.cleanup_policy = v["cleanup.policy"];
  t.compact = t.cleanup_policy.find("compact") != std::string::npos;  // cleaner keys
  t.delete_enabled = t.cleanup_policy.find("delete") != std::string::npos;
  t.delete_retention_ms = num("delete.retention.ms", broker.log_cleaner_delete_retention_ms);
  t.min_compaction_lag_ms = num("min.compaction.lag.ms", broker.log_cleaner_min_compaction_lag_ms);
  t.min_cleanable_dirty_ratio = std::strtod(v["min.cleanable.dirty.ratio"].c_str(), nullptr);
  return t;
}

}  // namespace strata::broker
