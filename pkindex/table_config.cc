#include "pkindex/table_config.h"

#include <charconv>

namespace strata::pkindex {

namespace {

const std::string* get(const std::map<std::string, std::string>& c, std::string_view key) {
  auto it = c.find(std::string(key));
  return it == c.end() ? nullptr : &it->second;
}

Status bad(std::string_view key, const std::string& value, const std::string& why) {
  return Status(Errc::invalid_argument,
                "Invalid value " + value + " for configuration " + std::string(key) + ": " + why);
}

}  // namespace

std::string check_table_key(std::string_view name, const std::string& v) {
  auto one_of = [&](std::initializer_list<const char*> allowed) -> std::string {
    std::string list;
    for (const char* a : allowed) {
      if (v == a) return "";
      list += list.empty() ? a : std::string(", ") + a;
    }
    return "String must be one of: " + list;
  };
  if (name == kTableType) return one_of({"log", "primary-key"});
  if (name == kMergeEngine) return one_of({"last_row", "first_row", "versioned"});
  if (name == kChangelogImage) return one_of({"full", "wal"});
  if (name == kDeleteBehavior) {
    if (v.empty()) return "";  // engine default
    return one_of({"allow", "ignore", "disable"});
  }
  if (name == kPartitioner) return one_of({"murmur2", "crc32"});
  if (name == kVersionHeader) {
    if (v.rfind("strata.", 0) == 0) return "header names under strata. are reserved";
    return "";
  }
  if (name == kTtlMs) {
    int64_t x = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
    if (ec != std::errc() || p != v.data() + v.size()) return "Not a number of type LONG";
    if (x < -1 || x == 0) return "Value must be -1 (no TTL) or positive";
    return "";
  }
  if (name == kSnapshotIntervalMs) {
    int64_t x = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
    if (ec != std::errc() || p != v.data() + v.size()) return "Not a number of type LONG";
    if (x < 100) return "Value must be at least 100";
    return "";
  }
  return "Unknown table configuration";
}

bool is_pk_table(const std::map<std::string, std::string>& configs) {
  const std::string* t = get(configs, kTableType);
  return t && *t == protocol::pk::kTableTypePrimaryKey;
}

Result<TableConfig> parse_table_config(const std::map<std::string, std::string>& configs) {
  for (const auto& [k, v] : configs) {
    if (k.rfind("table.", 0) != 0) continue;
    std::string why = check_table_key(k, v);
    if (!why.empty()) return bad(k, v, why);
  }
  if (!is_pk_table(configs)) {
    for (const auto& [k, v] : configs) {
      if (k.rfind("table.", 0) == 0 && k != kTableType) {
        return Status(Errc::invalid_argument,
                      "Configuration " + k + " requires table.type=primary-key");
      }
    }
    return Status(Errc::invalid_argument, "table.type is not primary-key");
  }
  TableConfig t;
  if (const auto* v = get(configs, kMergeEngine)) {
    t.merge_engine = *v == "first_row"   ? MergeEngine::first_row
                     : *v == "versioned" ? MergeEngine::versioned
                                         : MergeEngine::last_row;
  }
  if (const auto* v = get(configs, kVersionHeader)) t.version_header = *v;
  if (t.merge_engine == MergeEngine::versioned && t.version_header.empty()) {
    return Status(Errc::invalid_argument, std::string("Configuration ") +
                                              std::string(kVersionHeader) +
                                              " is required by table.merge-engine=versioned");
  }
  if (t.merge_engine != MergeEngine::versioned && !t.version_header.empty()) {
    return Status(Errc::invalid_argument, std::string("Configuration ") +
                                              std::string(kVersionHeader) +
                                              " requires table.merge-engine=versioned");
  }
  if (const auto* v = get(configs, kChangelogImage)) {
    t.image = *v == "wal" ? ChangelogImage::wal : ChangelogImage::full;
  }
  t.delete_behavior =
      t.merge_engine == MergeEngine::last_row ? DeleteBehavior::allow : DeleteBehavior::ignore;
  if (const auto* v = get(configs, kDeleteBehavior); v && !v->empty()) {
    t.delete_behavior = *v == "allow"    ? DeleteBehavior::allow
                        : *v == "ignore" ? DeleteBehavior::ignore
                                         : DeleteBehavior::disable;
  }
  if (const auto* v = get(configs, kTtlMs)) {
    std::from_chars(v->data(), v->data() + v->size(), t.ttl_ms);
  }
  if (const auto* v = get(configs, kSnapshotIntervalMs)) {
    std::from_chars(v->data(), v->data() + v->size(), t.snapshot_interval_ms);
  }
  if (const auto* v = get(configs, kPartitioner)) {
    t.partitioner = *v == "crc32" ? Partitioner::crc32 : Partitioner::murmur2;
  }
  return t;
}

}  // namespace strata::pkindex
