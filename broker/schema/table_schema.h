// Typed tables bound to a registered schema (table.value.format=confluent, docs/typed-tables.md):
// checking and pinning the table schema when the table is created, and decoding writers'
// Confluent-framed values into the table's rows.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>

#include "pkindex/confluent_values.h"
#include "pkindex/table_config.h"
#include "protocol/base/result.h"

namespace strata::broker::schema {

class SchemaRegistry;

// The broker's registry once it serves (null before, and when it serves none). PK states open
// before the registry loads `_schemas`; their decoders reach it through this.
struct RegistryHandle {
  std::atomic<const SchemaRegistry*> registry{nullptr};
};

// For a confluent table being created: the subject's latest version must be a JSON Schema of an
// object whose properties (the columns) all accept null and none is required (a partial write
// leaves the other columns null); sets table.value.schema.id to that version's id.
// Errc::invalid_argument naming the problem (INVALID_CONFIG). Other tables: unchanged, except
// that table.value.schema.id is the broker's to set.
Status pin_table_schema(const SchemaRegistry* registry,
                        std::map<std::string, std::string>& configs);

// The decoder of a confluent table's values: the writer's schema by id from the registry (Avro
// or JSON Schema), its fields checked against the table schema's columns.
std::shared_ptr<const pkindex::ConfluentDecoder> make_table_decoder(
    std::shared_ptr<const RegistryHandle> registry, const pkindex::TableConfig& table);

}  // namespace strata::broker::schema
