// Avro schemas for the embedded Schema Registry: parsing with the validation Java's
// Schema.Parser applies (clients register schemas that Java producers and consumers must accept,
// so the registry must reject exactly what Java would reject), the spec's Parsing Canonical Form
// (fingerprints and schema identity across formatting differences), a normalized text (Confluent
// compares registered schemas by it), and reader/writer compatibility as Java's
// SchemaCompatibility decides it (the registry's BACKWARD/FORWARD/FULL checks are built from it).
//
// An AvroSchema is immutable and cheap to copy (its nodes are shared); any thread may use one.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/base/result.h"

namespace strata::protocol::schema {

namespace detail {
struct AvroGraph;
struct AvroAccess;
}  // namespace detail

class AvroSchema {
 public:
  // Parses Avro schema JSON text: an object, an array (a union) or a string (a primitive type or
  // the name of a type defined in `references`). Errors are Errc::invalid_argument with a
  // message naming the offending part.
  //
  // `references` are already-parsed schemas of referenced subjects (Confluent schema
  // references): every named type they define, or they got from their own references, may be
  // used by name. The result keeps them alive, so the caller need not.
  static Result<AvroSchema> parse(std::string_view json_text,
                                  const std::vector<const AvroSchema*>& references = {});

  // The spec's Parsing Canonical Form: primitives as plain strings, full names without
  // namespace attributes, only name/type/fields/symbols/items/values/size in that order, no
  // whitespace. Types from `references` are written inline at their first use, so the form is
  // self-contained (two schemas with the same form read and write the same bytes).
  std::string canonical_form() const;

  // The schema re-serialized compactly with every attribute kept (doc, default, aliases, order,
  // logicalType, custom properties), in the layout Java's Schema.toString() produces: names
  // relative to the enclosing namespace, a "namespace" attribute only where it changes, each
  // named type defined once and referred to by name afterwards. Types from `references` are
  // referred to by name, as in the registered text. Equal for schemas that differ only in
  // whitespace, key order or how namespaces were spelled.
  std::string normalized_json() const;
  // As normalized_json(), but the types of `references` are defined inline at their first use:
  // a text that parses without them (a table schema pinned in a topic's config).
  std::string self_contained_json() const;

  // "record", "enum", "fixed", "array", "map", "union" or the primitive name of the top level.
  std::string_view type_name() const;
  // The full name ("a.b.R") of a named top-level type, empty for other types.
  const std::string& full_name() const;

 private:
  friend std::vector<std::string> avro_incompatibilities(const AvroSchema& reader,
                                                         const AvroSchema& writer);
  friend struct detail::AvroAccess;  // avro_codec.cc walks the graph
  explicit AvroSchema(std::shared_ptr<const detail::AvroGraph> graph) : graph_(std::move(graph)) {}

  std::shared_ptr<const detail::AvroGraph> graph_;
};

// Can data written with `writer` be read with `reader`? Avro's schema resolution rules as Java's
// org.apache.avro.SchemaCompatibility applies them: type promotions (int->long/float/double,
// long->float/double, float->double, string<->bytes), named types matched by unqualified name or
// a reader alias, reader fields missing from the writer need a default, writer enum symbols must
// be known to the reader unless it has an enum default, every branch of a writer union must be
// readable. Empty when compatible, else one human-readable reason per problem, each ending in
// the JSON-pointer-like location in the reader schema ("... at /fields/2/type").
std::vector<std::string> avro_incompatibilities(const AvroSchema& reader, const AvroSchema& writer);

}  // namespace strata::protocol::schema
