// TableConfig: the primary-key table settings of one topic, parsed from its `table.*` topic configs
// (docs/pk-tables.md). The keys are defined once in table_key_table(); all but
// table.kv.snapshot.interval.ms are fixed at creation. The broker imports them (read-only) into its
// topic-key table and calls parse_table_config() to check the combination (messages name the key).
// Owned by pkindex. Value type and pure functions; any thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/base/key_table.h"
#include "protocol/base/result.h"
#include "protocol/pk/table_keys.h"
#include "protocol/schema/avro_schema.h"
#include "protocol/schema/protobuf_schema.h"

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
using protocol::pk::kHistoryEnabled;
using protocol::pk::kMergeEngine;
using protocol::pk::kPartitioner;
using protocol::pk::kSnapshotIntervalMs;
using protocol::pk::kStatisticsColumns;
using protocol::pk::kTableType;
using protocol::pk::kTtlMs;
using protocol::pk::kValueFormat;
using protocol::pk::kValueSchemaAvro;
using protocol::pk::kValueSchemaId;
using protocol::pk::kValueSchemaProtobuf;
using protocol::pk::kValueSchemaSubject;
using protocol::pk::kVersionHeader;
using protocol::pk::merge_engine_name;
using protocol::pk::MergeEngine;
using protocol::pk::Partitioner;
using protocol::pk::partitioner_name;
using protocol::pk::value_format_name;
using protocol::pk::ValueFormat;

// Aggregation functions of `aggregation` tables (Fluss's names and semantics;
// docs/typed-tables.md).
enum class AggFn : uint8_t {
  sum,
  product,
  max,
  min,
  last_value,
  last_value_ignore_nulls,
  first_value,
  first_value_ignore_nulls,
  listagg,
  bool_and,
  bool_or,
};
std::string_view agg_fn_name(AggFn f);
std::optional<AggFn> parse_agg_fn(std::string_view name);  // string_agg = listagg

struct ColumnAgg {
  AggFn fn = AggFn::last_value_ignore_nulls;
  std::string delimiter = ",";  // listagg
};

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
  ValueFormat value_format{};
  std::string value_schema_subject;  // confluent: the table schema's subject
  int32_t value_schema_id = -1;      // confluent: the table schema's id (framing of the log)
  // confluent tables with an Avro or a Protobuf table schema: its text (set by the broker at
  // creation), and parsed (null otherwise): rows are typed by it and logged in its binary
  // encoding (confluent_values.h).
  std::string value_schema_avro;
  std::shared_ptr<const protocol::schema::AvroSchema> value_avro;
  std::string value_schema_protobuf;
  std::shared_ptr<const protocol::schema::ProtobufSchema> value_protobuf;
  bool history = false;            // a history index for LookupAsOf (table.history.enabled)
  std::string statistics_columns;  // "*" or a column list (column_stats.h); empty = none
  // aggregation: the columns with a table.fields.<column>.* key; any other column aggregates
  // with last_value_ignore_nulls.
  std::map<std::string, ColumnAgg> fields;

  bool typed() const { return value_format != ValueFormat::raw; }
  // Rows typed by a binary table schema (Avro, Protobuf): each merged row is encoded in it and
  // kept as decoding gives it back.
  bool schema_typed_rows() const { return value_avro || value_protobuf; }
  ColumnAgg column_agg(const std::string& column) const {
    auto it = fields.find(column);
    return it == fields.end() ? ColumnAgg{} : it->second;
  }
};

// True for a per-column key name (table.fields.<column>.agg / .listagg.delimiter /
// .string_agg.delimiter); sets `column` to the column's name.
bool is_column_key(std::string_view name, std::string* column = nullptr);

// The table.* keys (protocol/base/key_table.h; Kafka wording): type, default, allowed values, doc;
// all read-only but table.kv.snapshot.interval.ms. The broker's topic-key table imports them.
const KeyTable<TableConfig>& table_key_table();

// True when the configs declare table.type=primary-key.
bool is_pk_table(const std::map<std::string, std::string>& configs);

// Parses and cross-checks the table.* keys of a topic. Errc::invalid_argument with a message
// naming the key for a bad value, a versioned engine without a header name, or a table.* key
// other than table.type=log, table.value.format=json and table.statistics.columns on a topic that
// is not a primary-key table (a typed log topic: only value_format and statistics_columns of the
// result mean anything).
Result<TableConfig> parse_table_config(const std::map<std::string, std::string>& configs);

// An Avro table schema (table.value.schema.avro, a confluent table's schema when the registry
// holds it as AVRO): a record whose every field — a column — is a union with "null" first and
// "default": null, as a partial write leaves the other columns null. `columns` are the field
// names in order. Errc::invalid_argument naming what is wrong.
struct AvroTableSchema {
  protocol::schema::AvroSchema schema;
  std::vector<std::string> columns;
};
Result<AvroTableSchema> parse_avro_table_schema(std::string_view text);

// A Protobuf table schema (table.value.schema.protobuf): .proto text, or the self-contained JSON
// carrying the files it imports (ProtobufSchema::parse_self_contained), whose first message is
// the row; its fields — the columns — must have presence (proto3 `optional`, messages and
// wrappers, proto2 `optional`), so that a column a write leaves out reads as null, not as a
// default; no repeated, map or required fields, no oneof members (setting one clears the
// others).
struct ProtobufTableSchema {
  protocol::schema::ProtobufSchema schema;
  std::vector<std::string> columns;
};
Result<ProtobufTableSchema> parse_protobuf_table_schema(std::string_view text);

// Checks one table.* key in isolation: empty string when fine, else the message (naming the key).
std::string check_table_key(std::string_view name, const std::string& value);

}  // namespace strata::pkindex
