// Typed tables bound to a registered schema (table.value.format=confluent, docs/typed-tables.md):
// checking and pinning the table schema when the table is created, and decoding writers'
// Confluent-framed values into the table's rows.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "pkindex/confluent_values.h"
#include "pkindex/table_config.h"
#include "protocol/base/result.h"

namespace strata::broker::schema {

class SchemaRegistry;
struct SchemaEntry;
namespace detail {
struct ParsedSchema;
}

// Where typed tables read registered schemas: a single node's own registry
// (local_schema_source), or in a cluster the registry's writer through the routing
// (registry_cluster.h: cached by id, as an id's schema never changes). Thread-safe.
class SchemaSource {
 public:
  virtual ~SchemaSource() = default;
  // The schema of `id` parsed, its references resolved. not_found / invalid_argument /
  // unavailable (the writer could not be asked).
  virtual Result<std::shared_ptr<const detail::ParsedSchema>> parsed(int32_t id) const = 0;
  virtual Result<SchemaEntry> entry(int32_t id) const = 0;
  // The subject's latest live version (a table schema being pinned).
  virtual Result<SchemaEntry> latest(const std::string& subject) const = 0;
  // parsed() / entry() without waiting on another broker: what this broker already holds
  // (errc::unavailable when it would have to ask). For work under a partition's locks.
  // By default parsed() / entry() themselves (a single node's registry is in memory).
  virtual Result<std::shared_ptr<const detail::ParsedSchema>> parsed_at_hand(int32_t id) const;
  virtual Result<SchemaEntry> entry_at_hand(int32_t id) const;
};
std::unique_ptr<SchemaSource> local_schema_source(const SchemaRegistry& registry);

// The broker's schema source once its registry serves (null before, and when it serves none).
// PK states open before the registry loads `_schemas`; their decoders reach it through this.
struct RegistryHandle {
  std::atomic<const SchemaSource*> source{nullptr};
  // This broker serves no registry (schema.registry.listener is empty): not a passing state.
  std::atomic<bool> none{false};
};

// For a confluent table being created: the subject's latest version must be a JSON Schema of an
// object whose properties (the columns) all accept null and none is required (a partial write
// leaves the other columns null), an Avro record whose fields are unions with "null" first and
// default null, or a Protobuf file whose first message's fields all have presence (either may
// use schema references); sets table.value.schema.id to that version's id, and for Avro /
// Protobuf table.value.schema.avro / .protobuf to the schema's text, self-contained — Avro's
// with its references' types written inline, Protobuf's with its imported files' texts — (the
// changelog is written in it, and replay reads it without the registry).
// Errc::invalid_argument naming the problem (INVALID_CONFIG). Other tables: unchanged, except
// that table.value.schema.id is the broker's to set.
Status pin_table_schema(const SchemaSource* source, std::map<std::string, std::string>& configs);

// A confluent table's schema as DescribeTable reports it: its type ("AVRO" | "PROTOBUF" | "JSON")
// and columns (an Avro record's or Protobuf message's fields in order, from the table's config;
// a JSON Schema's properties sorted, read through `source`).
struct TableSchemaInfo {
  std::string type;
  std::vector<std::string> columns;
};
Result<TableSchemaInfo> describe_table_schema(const SchemaSource* source,
                                              const pkindex::TableConfig& table);

// The decoder of a confluent table's values: the writer's schema by id from the registry (Avro,
// Protobuf or JSON Schema; a JSON body validated against it), its fields checked against the
// table schema's columns; and of a JSON Schema table's merged rows, validated against it.
std::shared_ptr<const pkindex::ConfluentDecoder> make_table_decoder(
    std::shared_ptr<const RegistryHandle> registry, const pkindex::TableConfig& table);

}  // namespace strata::broker::schema
