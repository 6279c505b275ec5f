// The topic configs that make a topic a primary-key table and fix its behaviour
// (docs/pk-tables.md): key names, their enumerated values and the values' wire spellings. A client
// needs these to create a table and to route keys (table.partitioner); the broker validates and
// parses them in pkindex/table_config.h. Constants and pure functions only; any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace strata::protocol::pk {

enum class MergeEngine : uint8_t { last_row, first_row, versioned, aggregation };
// raw: the row is the record value's bytes; json: a JSON object of columns (stored canonical:
// keys sorted, no spaces), merged per column (partial updates, aggregation); confluent: values
// in Confluent's framing (magic 0, a registered schema id, the body), rows stored as json's and
// logged in the table schema's framing.
enum class ValueFormat : uint8_t { raw, json, confluent };
enum class ChangelogImage : uint8_t { full, wal };
enum class DeleteBehavior : uint8_t { allow, ignore, disable };
enum class Partitioner : uint8_t { murmur2, crc32 };

inline constexpr std::string_view kTableType = "table.type";  // "log" | "primary-key"
inline constexpr std::string_view kTableTypePrimaryKey = "primary-key";
inline constexpr std::string_view kMergeEngine = "table.merge-engine";
inline constexpr std::string_view kVersionHeader = "table.merge-engine.versioned.header";
inline constexpr std::string_view kChangelogImage = "table.changelog.image";
inline constexpr std::string_view kDeleteBehavior = "table.delete.behavior";
inline constexpr std::string_view kTtlMs = "table.kv.ttl.ms";
inline constexpr std::string_view kPartitioner = "table.partitioner";
inline constexpr std::string_view kValueFormat = "table.value.format";
// confluent tables: the subject of the table schema (its fields are the columns) and the id of
// the version the table was created with (set by the broker at creation, not by clients).
inline constexpr std::string_view kValueSchemaSubject = "table.value.schema.subject";
inline constexpr std::string_view kValueSchemaId = "table.value.schema.id";
// confluent tables whose table schema is Avro: that schema's text, also set by the broker at
// creation, so that recovery and followers decode the logged rows without the registry.
inline constexpr std::string_view kValueSchemaAvro = "table.value.schema.avro";
// The same for a Protobuf table schema: its .proto text (the file's first message is the row).
inline constexpr std::string_view kValueSchemaProtobuf = "table.value.schema.protobuf";
// Keep every change of every key (a history index in the state) for point-in-time reads
// (LookupAsOf); false by default: it writes each change a second time.
inline constexpr std::string_view kHistoryEnabled = "table.history.enabled";
// Typed tables: the columns whose per-batch min / max / null count the changelog's side index
// keeps ("*" = all, or a comma-separated list; empty = none), for filtered reads.
inline constexpr std::string_view kStatisticsColumns = "table.statistics.columns";
// Per-column keys of aggregation tables: table.fields.<column>.agg = a function name, and
// table.fields.<column>.listagg.delimiter (or .string_agg.delimiter) = its separator.
inline constexpr std::string_view kFieldsPrefix = "table.fields.";
inline constexpr std::string_view kAggSuffix = ".agg";
inline constexpr std::string_view kListaggDelimiterSuffix = ".listagg.delimiter";
inline constexpr std::string_view kStringaggDelimiterSuffix = ".string_agg.delimiter";
// The one alterable table.* key (AlterConfigs): how often each partition takes a RocksDB
// checkpoint.
inline constexpr std::string_view kSnapshotIntervalMs = "table.kv.snapshot.interval.ms";
inline constexpr int64_t kDefaultSnapshotIntervalMs = 600000;

constexpr std::string_view merge_engine_name(MergeEngine e) {
  switch (e) {
    case MergeEngine::last_row:
      return "last_row";
    case MergeEngine::first_row:
      return "first_row";
    case MergeEngine::versioned:
      return "versioned";
    case MergeEngine::aggregation:
      return "aggregation";
  }
  return "?";
}
constexpr std::string_view value_format_name(ValueFormat f) {
  return f == ValueFormat::json ? "json" : f == ValueFormat::confluent ? "confluent" : "raw";
}
constexpr std::string_view image_name(ChangelogImage i) {
  return i == ChangelogImage::full ? "full" : "wal";
}
constexpr std::string_view delete_behavior_name(DeleteBehavior d) {
  switch (d) {
    case DeleteBehavior::allow:
      return "allow";
    case DeleteBehavior::ignore:
      return "ignore";
    case DeleteBehavior::disable:
      return "disable";
  }
  return "?";
}
constexpr std::string_view partitioner_name(Partitioner p) {
  return p == Partitioner::murmur2 ? "murmur2" : "crc32";
}
// "murmur2" | "crc32" -> the partitioner; nullopt for anything else.
constexpr std::optional<Partitioner> parse_partitioner(std::string_view s) {
  if (s == "murmur2") return Partitioner::murmur2;
  if (s == "crc32") return Partitioner::crc32;
  return std::nullopt;
}

}  // namespace strata::protocol::pk
