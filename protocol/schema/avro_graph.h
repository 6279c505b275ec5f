// Internals of protocol/schema: the parsed form of an Avro schema, shared by avro_schema.cc
// (parsing, forms, compatibility) and avro_codec.cc (binary encoding). Not for use elsewhere.
//
// A parsed schema is a graph of nodes owned by one AvroGraph. Named types are nodes referred to
// by pointer from every use, so recursive records are cycles of raw pointers inside one graph
// (shared_ptr cycles would leak); a graph holds the graphs of its references to keep their nodes
// alive.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/schema/avro_schema.h"

namespace strata::protocol::schema {

// Ordered: normalized_json() keeps the input order of properties and default values.
using ojson = nlohmann::ordered_json;

namespace detail {

// clang-format off
enum class Kind : uint8_t { null, boolean, int_, long_, float_, double_, bytes, string,  // primitives
                            record, enum_, array, map, union_, fixed };
// clang-format on

inline constexpr std::array<std::string_view, 14> kKindNames = {
    "null",   "boolean", "int",  "long",  "float", "double", "bytes",
    "string", "record",  "enum", "array", "map",   "union",  "fixed"};

inline std::string_view kind_name(Kind k) { return kKindNames[static_cast<size_t>(k)]; }

inline bool is_named(Kind k) { return k == Kind::record || k == Kind::enum_ || k == Kind::fixed; }

inline std::optional<Kind> primitive_kind(std::string_view s) {
  for (size_t i = 0; i <= static_cast<size_t>(Kind::string); ++i) {
    if (kKindNames[i] == s) return static_cast<Kind>(i);
  }
  return std::nullopt;
}

struct AvroNode;

struct AvroField {
  std::string name;
  const AvroNode* type = nullptr;
  std::optional<ojson> default_value;
  std::string order = "ascending";
  std::vector<std::string> aliases;
  std::optional<std::string> doc;
  ojson props = ojson::object();  // attributes Avro does not interpret, in input order
};

struct AvroNode {
  Kind kind = Kind::null;
  const AvroGraph* owner = nullptr;
  // Named types only ("" namespace = the null namespace).
  std::string name, space, full_name;
  bool is_error = false;  // a record spelled "error" (protocols), kept for normalized_json()
  std::optional<std::string> doc;
  std::vector<std::string> aliases;  // full names
  std::vector<AvroField> fields;     // record
  std::vector<std::string> symbols;  // enum
  std::optional<std::string> enum_default;
  const AvroNode* child = nullptr;        // array items, map values
  std::vector<const AvroNode*> branches;  // union
  int64_t size = 0;                       // fixed
  ojson props = ojson::object();  // logicalType, precision, custom attributes, in input order
};

struct AvroGraph {
  std::vector<std::unique_ptr<AvroNode>> nodes;        // the nodes this schema's text defines
  std::vector<std::shared_ptr<const AvroGraph>> deps;  // references, kept alive
  std::map<std::string, const AvroNode*> names;  // every named type usable by name, by full name
  const AvroNode* root = nullptr;
  // Bound on the nesting of a walk that inlines referenced types (the canonical form does).
  int inline_depth = 0;
};

// The graph of a parsed schema, for the codec.
struct AvroAccess {
  static const AvroGraph& graph(const AvroSchema& s) { return *s.graph_; }
};

}  // namespace detail

}  // namespace strata::protocol::schema
