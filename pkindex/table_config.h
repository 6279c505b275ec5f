// TableConfig: the primary-key table settings of one topic, parsed from its `table.*` topic configs
// (docs/pk-tables.md). All keys but table.kv.snapshot.interval.ms are fixed at creation; the broker registers them read-only in its
// topic-key table and calls parse_table_config() to check the combination (messages name the key).
// Owned by pkindex (issue 5). Value type and pure functions; any thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "protocol/base/result.h"

namespace strata::pkindex {

enum class MergeEngine : uint8_t { last_row, first_row, versioned };
enum class ChangelogImage : uint8_t { full, wal };
enum class DeleteBehavior : uint8_t { allow, ignore, disable };
enum class Partitioner : uint8_t { murmur2, crc32 };

inline constexpr std::string_view kTableType = "table.type";
inline constexpr std::string_view kMergeEngine = "table.merge-engine";
inline constexpr std::string_view kVersionHeader = "table.merge-engine.versioned.header";
inline constexpr std::string_view kChangelogImage = "table.changelog.image";
inline constexpr std::string_view kDeleteBehavior = "table.delete.behavior";
inline constexpr std::string_view kTtlMs = "table.kv.ttl.ms";
inline constexpr std::string_view kPartitioner = "table.partitioner";
// The one alterable table.* key (AlterConfigs): how often each partition takes a RocksDB checkpoint.
inline constexpr std::string_view kSnapshotIntervalMs = "table.kv.snapshot.interval.ms";
inline constexpr int64_t kDefaultSnapshotIntervalMs = 600000;

struct TableConfig {
  MergeEngine merge_engine = MergeEngine::last_row;
  std::string version_header;  // versioned only
  ChangelogImage image = ChangelogImage::full;
  DeleteBehavior delete_behavior = DeleteBehavior::allow;
  int64_t ttl_ms = -1;  // -1 = rows never expire; else a row expires ttl_ms after its append time
  Partitioner partitioner = Partitioner::murmur2;
  int64_t snapshot_interval_ms = kDefaultSnapshotIntervalMs;  // alterable (read it per round)
};

// True when the configs declare table.type=primary-key.
bool is_pk_table(const std::map<std::string, std::string>& configs);

// Parses and cross-checks the table.* keys of a primary-key topic. Errc::invalid_argument with a
// message naming the key for a bad value, a versioned engine without a header name, or a table.*
// key (other than table.type=log) on a topic that is not a primary-key table.
Result<TableConfig> parse_table_config(const std::map<std::string, std::string>& configs);

// Checks one table.* key in isolation (for the broker's per-key validators); nullopt-like: empty
// string when fine, else the reason.
std::string check_table_key(std::string_view name, const std::string& value);

std::string_view merge_engine_name(MergeEngine e);
std::string_view image_name(ChangelogImage i);
std::string_view delete_behavior_name(DeleteBehavior d);
std::string_view partitioner_name(Partitioner p);

}  // namespace strata::pkindex
