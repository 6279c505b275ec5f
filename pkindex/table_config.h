// TableConfig: the primary-key table settings of one topic, parsed from its `table.*` topic configs
// (docs/pk-tables.md). The keys are defined once in table_key_table(); all but
// table.kv.snapshot.interval.ms are fixed at creation. The broker imports them (read-only) into its
// topic-key table and calls parse_table_config() to check the combination (messages name the key).
// Owned by pkindex. Value type and pure functions; any thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "protocol/base/key_table.h"
#include "protocol/base/result.h"
#include "protocol/pk/table_keys.h"

namespace strata::pkindex {

// The keys and value enums are wire facts (protocol/pk/table_keys.h); pkindex uses them
// unqualified.
using protocol::pk::ChangelogImage;
using protocol::pk::delete_behavior_name;
using protocol::pk::DeleteBehavior;
using protocol::pk::image_name;
using protocol::pk::kChangelogImage;
using protocol::pk::kDefaultSnapshotIntervalMs;
using protocol::pk::kDeleteBehavior;
using protocol::pk::kMergeEngine;
using protocol::pk::kPartitioner;
using protocol::pk::kSnapshotIntervalMs;
using protocol::pk::kTableType;
using protocol::pk::kTtlMs;
using protocol::pk::kVersionHeader;
using protocol::pk::merge_engine_name;
using protocol::pk::MergeEngine;
using protocol::pk::Partitioner;
using protocol::pk::partitioner_name;

// Field defaults come from table_key_table(): TableConfig() is a primary-key table with no
// table.* key set (nothing else writes a default value).
struct TableConfig {
  TableConfig();
  struct Unset {};
  explicit TableConfig(Unset) {}

  MergeEngine merge_engine{};
  std::string version_header;  // versioned only
  ChangelogImage image{};
  DeleteBehavior delete_behavior{};  // derived from the engine unless table.delete.behavior is set
  int64_t ttl_ms{};  // -1 = rows never expire; else a row expires ttl_ms after its append time
  Partitioner partitioner{};
  int64_t snapshot_interval_ms{};  // alterable (read it per round)
};

// The table.* keys (protocol/base/key_table.h; Kafka wording): type, default, allowed values, doc;
// all read-only but table.kv.snapshot.interval.ms. The broker's topic-key table imports them.
const KeyTable<TableConfig>& table_key_table();

// True when the configs declare table.type=primary-key.
bool is_pk_table(const std::map<std::string, std::string>& configs);

// Parses and cross-checks the table.* keys of a primary-key topic. Errc::invalid_argument with a
// message naming the key for a bad value, a versioned engine without a header name, or a table.*
// key (other than table.type=log) on a topic that is not a primary-key table.
Result<TableConfig> parse_table_config(const std::map<std::string, std::string>& configs);

// Checks one table.* key in isolation: empty string when fine, else the message (naming the key).
std::string check_table_key(std::string_view name, const std::string& value);

}  // namespace strata::pkindex
