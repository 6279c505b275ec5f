// The embedded Schema Registry's parsing of registered schemas (shared by its operations and
// the value decoding of typed tables): one parsed schema of any accepted type, with its
// references resolved.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "broker/schema/schema_registry.h"
#include "protocol/schema/avro_schema.h"
#include "protocol/schema/json_schema.h"
#include "protocol/schema/protobuf_schema.h"

namespace strata::broker::schema::detail {

struct ParsedSchema {
  std::optional<protocol::schema::AvroSchema> avro;
  std::optional<protocol::schema::JsonSchema> json;
  std::optional<protocol::schema::ProtobufSchema> protobuf;
  std::string normalized() const;
};

// Can data written with `writer` be read with `reader`? (Same type: the caller checks.)
std::vector<std::string> incompatibilities(const ParsedSchema& reader, const ParsedSchema& writer);

// Parses a schema of `type` with its references (their schemas parsed first, recursively; a
// reference must be of the same type), finding them with `find`.
struct SchemaParser {
  const std::function<const SchemaEntry*(const SchemaReference&)>& find;
  Result<ParsedSchema> parse(const std::string& type, const std::string& text,
                             const std::vector<SchemaReference>& refs, int depth) const;
};

}  // namespace strata::broker::schema::detail
