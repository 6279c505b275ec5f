#include "broker/topic_config.h"

#include <charconv>

namespace strata::broker {
namespace {

bool parse_i64(const std::string& v, int64_t lo, int64_t hi, int64_t& out) {
  int64_t x = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || p != v.data() + v.size() || x < lo || x > hi) return false;
  out = x;
  return true;
}

struct Range {
  int64_t lo, hi;
};

const std::map<std::string, Range>& numeric_ranges() {
  static const std::map<std::string, Range> r = {
      {"segment.bytes", {14, INT32_MAX}},
      {"segment.ms", {1, INT64_MAX}},
      {"flush.messages", {1, INT64_MAX}},
      {"flush.ms", {0, INT64_MAX}},
      {"index.interval.bytes", {0, INT32_MAX}},
      {"segment.index.bytes", {4, INT32_MAX}},
      {"max.message.bytes", {0, INT32_MAX}},
      {"retention.ms", {-1, INT64_MAX}},
      {"retention.bytes", {-1, INT64_MAX}},
  };
  return r;
}

StoredCompression parse_compression(const std::string& v) {
  if (v == "uncompressed" || v == "none") return StoredCompression::none;
  if (v == "gzip") return StoredCompression::gzip;
  if (v == "snappy") return StoredCompression::snappy;
  if (v == "lz4") return StoredCompression::lz4;
  if (v == "zstd") return StoredCompression::zstd;
  return StoredCompression::producer;
}

}  // namespace

const std::map<std::string, TopicKeyDoc>& topic_keys() {
  static const std::map<std::string, TopicKeyDoc> k = {
      {"segment.bytes", {"segment.bytes", "log.segment.bytes", "Segment size before a roll."}},
      {"segment.ms", {"segment.ms", "log.roll.ms", "Segment age before a roll."}},
      {"flush.messages", {"flush.messages", "log.flush.interval.messages", "Messages between fsyncs."}},
      {"flush.ms", {"flush.ms", "log.flush.interval.ms", "Time between fsyncs."}},
      {"index.interval.bytes", {"index.interval.bytes", "log.index.interval.bytes", "Offset index density."}},
      {"segment.index.bytes", {"segment.index.bytes", "log.index.size.max.bytes", "Largest offset index."}},
      {"max.message.bytes", {"max.message.bytes", "message.max.bytes", "Largest record batch."}},
      {"compression.type", {"compression.type", "compression.type", "Stored codec or producer."}},
      {"message.timestamp.type", {"message.timestamp.type", "log.message.timestamp.type", "CreateTime or LogAppendTime."}},
      {"retention.ms", {"retention.ms", "log.retention.ms", "Age after which segments are deleted."}},
      {"retention.bytes", {"retention.bytes", "log.retention.bytes", "Size above which old segments are deleted."}},
      {"cleanup.policy", {"cleanup.policy", "log.cleanup.policy", "delete and/or compact."}},
  };
  return k;
}

Status validate_topic_configs(const std::map<std::string, std::string>& configs) {
  for (const auto& [key, value] : configs) {
    if (!topic_keys().count(key)) {
      return Status(Errc::invalid_argument, "Unknown topic config name: " + key);
    }
    auto it = numeric_ranges().find(key);
    if (it != numeric_ranges().end()) {
      int64_t x;
      if (!parse_i64(value, it->second.lo, it->second.hi, x)) {
        return Status(Errc::invalid_argument,
                      "Invalid value " + value + " for configuration " + key);
      }
    } else if (key == "compression.type") {
      static const char* ok[] = {"producer", "uncompressed", "none", "gzip", "snappy", "lz4", "zstd"};
      bool found = false;
      for (auto* o : ok) found |= value == o;
      if (!found) return Status(Errc::invalid_argument, "Invalid value " + value + " for configuration " + key);
    } else if (key == "message.timestamp.type") {
      if (value != "CreateTime" && value != "LogAppendTime") {
        return Status(Errc::invalid_argument, "Invalid value " + value + " for configuration " + key);
      }
    } else if (key == "cleanup.policy") {
      if (value != "delete" && value != "compact" && value != "compact,delete" &&
          value != "delete,compact") {
        return Status(Errc::invalid_argument, "Invalid value " + value + " for configuration " + key);
      }
    }
  }
  return Status::Ok();
}

std::map<std::string, std::string> effective_topic_values(
    const std::map<std::string, std::string>& configs, const BrokerConfig& broker) {
  std::map<std::string, std::string> out;
  for (const auto& [key, doc] : topic_keys()) {
    auto it = configs.find(key);
    if (it != configs.end()) {
      out[key] = it->second;
    } else {
      auto b = broker.values.find(doc.broker_synonym);
      out[key] = b != broker.values.end() ? b->second : "";
    }
  }
  return out;
}

TopicConfig resolve_topic_config(const std::map<std::string, std::string>& configs,
                                 const BrokerConfig& broker) {
  auto v = effective_topic_values(configs, broker);
  auto num = [&v](const char* key, int64_t fallback) {
    int64_t x = fallback;
    parse_i64(v[key], INT64_MIN, INT64_MAX, x);
    return x;
  };
  TopicConfig t;
  t.log.segment_bytes = num("segment.bytes", broker.log_segment_bytes);
  t.log.segment_ms = num("segment.ms", broker.log_roll_ms);
  t.log.flush_interval_messages = num("flush.messages", broker.log_flush_interval_messages);
  t.log.flush_interval_ms = num("flush.ms", broker.log_flush_interval_ms);
  t.log.index_interval_bytes = static_cast<int32_t>(num("index.interval.bytes", broker.log_index_interval_bytes));
  t.log.max_index_bytes = static_cast<int32_t>(num("segment.index.bytes", broker.log_index_size_max_bytes));
  t.max_message_bytes = static_cast<int32_t>(num("max.message.bytes", broker.message_max_bytes));
  t.compression = parse_compression(v["compression.type"]);
  t.log_append_time = v["message.timestamp.type"] == "LogAppendTime";
  t.retention_ms = num("retention.ms", broker.log_retention_ms);
  t.retention_bytes = num("retention.bytes", broker.log_retention_bytes);
  t.cleanup_policy = v["cleanup.policy"];
  return t;
}

}  // namespace strata::broker
