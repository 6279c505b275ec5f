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

using T = TopicConfig;

// What Kafka 3.x's MetadataVersionValidator accepted, loosely: a release ("0.10.2", "2.8",
// "3.0") optionally with an "-IV<n>" suffix ("3.0-IV1"). The value is never interpreted.
std::string check_message_format_version(const std::string& v) {
  static const std::regex version(R"([0-9]+(\.[0-9]+){1,3}(-IV[0-9]+)?)");
  if (std::regex_match(v, version)) return "";
  return "Version `" + v + "` is not a valid version";
}

const ConfigKeyInfo& broker_key(const char* name) {
  const BrokerKeyDef* k = find_broker_key(name);
  if (!k) std::abort();  // a synonym the broker table lacks: a table bug
  return *k;
}

KeyTable<TopicConfig> build_table() {
  constexpr int64_t kI32 = INT32_MAX;
  constexpr int64_t kI64 = INT64_MAX;
  constexpr int64_t kZero = 0;
  KeyTable<T> t(ConfigMessages::kafka, /*dynamic_by_default=*/true);
  // Keys with a broker synonym take its default (an empty default here): one definition.
  const std::string inherited;
  t.list("cleanup.policy", &T::cleanup_policy, inherited, {"delete", "compact"},
         "delete: remove old segments by retention.ms/retention.bytes; compact: keep the latest "
         "record per key; both may be given.")
      .inherits(broker_key("log.cleanup.policy"));
  t.integer("delete.retention.ms", &T::delete_retention_ms, inherited, kZero, kI64,
            "How long a tombstone stays readable after the cleaner first saw it (compacted "
            "topics).")
      .inherits(broker_key("log.cleaner.delete.retention.ms"));
  t.decimal("min.cleanable.dirty.ratio", &T::min_cleanable_dirty_ratio, inherited, 0, 1,
            "Share of uncleaned bytes that triggers compaction.")
      .inherits(broker_key("log.cleaner.min.cleanable.ratio"));
  t.integer("min.compaction.lag.ms", &T::min_compaction_lag_ms, inherited, kZero, kI64,
            "Records younger than this are never compacted.")
      .inherits(broker_key("log.cleaner.min.compaction.lag.ms"));
  t.integer("min.insync.replicas", &T::min_insync_replicas, inherited, int64_t{1}, kI32,
            "In-sync replicas an acks=all produce needs; fewer gets NOT_ENOUGH_REPLICAS.")
      .inherits(broker_key("min.insync.replicas"));
  using SC = StoredCompression;
  t.enumeration<SC>("compression.type", &T::compression, inherited,
                    {{"uncompressed", SC::none},
                     {"zstd", SC::zstd},
                     {"lz4", SC::lz4},
                     {"snappy", SC::snappy},
                     {"gzip", SC::gzip},
                     {"producer", SC::producer},
                     {"none", SC::none}},
                    "Codec batches are stored with; producer keeps the producer's codec.")
      .inherits(broker_key("compression.type"));
  t.integer(
       "flush.messages", [](T & c) -> auto& { return c.log.flush_interval_messages; }, inherited,
       int64_t{1}, kI64, "fsync the log after this many messages.")
      .inherits(broker_key("log.flush.interval.messages"));
  t.integer(
       "flush.ms", [](T & c) -> auto& { return c.log.flush_interval_ms; }, inherited, kZero, kI64,
       "fsync the log when unflushed data is this old.")
      .inherits(broker_key("log.flush.interval.ms"));
  t.integer(
       "index.interval.bytes", [](T & c) -> auto& { return c.log.index_interval_bytes; }, inherited,
       kZero, kI32, "Bytes appended between two offset-index entries.")
      .inherits(broker_key("log.index.interval.bytes"));
  t.integer("max.message.bytes", &T::max_message_bytes, inherited, kZero, kI32,
            "Largest record batch accepted (after recompression).")
      .inherits(broker_key("message.max.bytes"));
  // Deprecated in Kafka 3.x and removed in 4.0; accepted and stored so 3.x-era topic
  // definitions still apply, without effect: Strata writes and serves only message format v2
  // (Fetch 4+) and so never down-converts. Defaults are Kafka 3.x's. No broker synonym: the
  // log.* keys are not broker configs here.
  t.boolean("message.downconversion.enable", t.kNoField, "true",
            "Deprecated (Kafka 3.x; removed in 4.0), accepted and ignored: Strata never "
            "down-converts message formats.",
            kConfigDeprecated);
  t.string("message.format.version", t.kNoField, "3.0-IV1",
           "Deprecated (Kafka 3.x; removed in 4.0), accepted and ignored: Strata always writes "
           "message format v2.",
           kConfigDeprecated, check_message_format_version);
  t.enumeration<bool>("message.timestamp.type", &T::log_append_time, inherited,
                      {{"CreateTime", false}, {"LogAppendTime", true}},
                      "CreateTime keeps the producer's timestamps; LogAppendTime stamps the "
                      "broker's.")
      .inherits(broker_key("log.message.timestamp.type"));
  t.integer("retention.bytes", &T::retention_bytes, inherited, int64_t{-1}, kI64,
            "Largest size of a partition before old segments are deleted; -1 = no limit.")
      .inherits(broker_key("log.retention.bytes"));
  t.integer("retention.ms", &T::retention_ms, inherited, int64_t{-1}, kI64,
            "Age after which whole segments are deleted; -1 = no limit.")
      .inherits(broker_key("log.retention.ms"));
  t.integer(
       "segment.bytes", [](T & c) -> auto& { return c.log.segment_bytes; }, inherited, int64_t{14},
       kI32, "Segment size at which a new segment is rolled.")
      .inherits(broker_key("log.segment.bytes"));
  t.integer(
       "segment.index.bytes", [](T & c) -> auto& { return c.log.max_index_bytes; }, inherited,
       int64_t{4}, kI32, "Largest offset index; a full index rolls the segment.")
      .inherits(broker_key("log.index.size.max.bytes"));
  t.integer(
       "segment.ms", [](T & c) -> auto& { return c.log.segment_ms; }, inherited, int64_t{1}, kI64,
       "Segment age at which a new segment is rolled.")
      .inherits(broker_key("log.roll.ms"));
  t.boolean("unclean.leader.election.enable", &T::unclean_leader_election_enable, inherited,
            "Let an out-of-sync replica lead when no in-sync replica is alive (may lose "
            "records).")
      .inherits(broker_key("unclean.leader.election.enable"));
  // Primary-key tables (docs/pk-tables.md): defined by pkindex, validated by it here one key at a
  // time (validate_topic_configs cross-checks them with parse_table_config).
  for (const auto& k : pkindex::table_key_table().keys()) t.import(k);
  return t;
}

}  // namespace

const std::vector<TopicKeyDef>& topic_key_table() {
  static const KeyTable<TopicConfig> table = build_table();
  return table.keys();
}

const TopicKeyDef* find_topic_key(std::string_view name) {
  for (const auto& k : topic_key_table()) {
    if (name == k.name) return &k;
  }
  // The per-column keys of typed tables (table.fields.<column>.*) have one definition for all
  // columns; pkindex checks their values.
  static const TopicKeyDef column_key = [] {
    TopicKeyDef k;
    k.name = "table.fields.<column>.*";
    k.type = ConfigType::string;
    k.doc =
        "aggregation tables: table.fields.<column>.agg (function) and "
        "table.fields.<column>.listagg.delimiter.";
    k.flags = kConfigReadOnly;
    k.apply = [](const std::string&, TopicConfig*) { return Status::Ok(); };
    return k;
  }();
  return pkindex::is_column_key(name) ? &column_key : nullptr;
}

Status validate_topic_config(const std::string& name, const std::string& value) {
  if (pkindex::is_column_key(name)) {
    const std::string error = pkindex::check_table_key(name, value);
    return error.empty() ? Status::Ok() : Status(Errc::invalid_argument, error);
  }
  const TopicKeyDef* key = find_topic_key(name);
  if (!key) return Status(Errc::invalid_argument, "Unknown topic config name: " + name);
  return key->check(value);
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
    if (find_topic_key(name)->deprecated()) {
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

Status check_topic_config_floors(const std::map<std::string, std::string>& configs,
                                 const BrokerConfig& broker,
                                 const std::map<std::string, std::string>& current) {
  auto it = configs.find("segment.bytes");
  if (it == configs.end()) return Status::Ok();
  if (auto old = current.find(it->first); old != current.end() && old->second == it->second) {
    return Status::Ok();
  }
  int64_t v = 0;
  auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  if (ec != std::errc() || v >= broker.log_segment_bytes_min) return Status::Ok();
  std::string m("Invalid value ");
  m.append(it->second)
      .append(" for configuration segment.bytes: Value must be at least ")
      .append(std::to_string(broker.log_segment_bytes_min))
      .append(" (the broker's log.segment.bytes.min)");
  return Status(Errc::invalid_argument, m);
}

std::string topic_key_default(const TopicKeyDef& key, const BrokerConfig& broker) {
  if (!key.synonym.empty()) {
    auto b = broker.values.find(key.synonym);
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
  TopicConfig t{TopicConfig::Unset{}};
  for (const auto& key : topic_key_table()) {
    auto it = configs.find(key.name);
    const std::string def = topic_key_default(key, broker);
    // Configs are valid; an override that no longer parses falls back to the default.
    if (it == configs.end() || !key.apply(it->second, &t).ok()) key.apply(def, &t);
  }
  t.compact = t.cleanup_policy.find("compact") != std::string::npos;  // cleaner keys
  t.delete_enabled = t.cleanup_policy.find("delete") != std::string::npos;
  return t;
}

TopicConfig::TopicConfig() {
  static const TopicConfig defaults = resolve_topic_config({}, BrokerConfig());
  *this = defaults;
}

}  // namespace strata::broker
