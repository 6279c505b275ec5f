// JSON Schemas for the embedded Schema Registry (schema type "JSON"): validation of the
// keywords a schema's readers interpret (drafts 4 to 7, the ones Confluent's serializers use),
// schema references (a "$ref" naming a referenced schema, optionally with a "#/..." fragment),
// the normalized text Confluent compares registered schemas by (the JSON re-serialized compactly,
// key order kept), and the compatibility of two schemas as Confluent's JSON Schema provider
// decides it: a structural diff whose every change is classified compatible or not (open,
// closed and partially open content models; docs/schema-registry.md lists the rules).
//
// A JsonSchema is immutable and cheap to copy (its document is shared); any thread may use one.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/base/result.h"

namespace strata::protocol::schema {

namespace detail {
struct JsonDoc;
}

class JsonSchema {
 public:
  // A referenced schema under the name its "$ref"s use (a Confluent schema reference's name).
  using Reference = std::pair<std::string, const JsonSchema*>;

  // Parses JSON Schema text: an object or a boolean. Errors are Errc::invalid_argument naming
  // the offending keyword and its JSON pointer. Every "$ref" must resolve: "#..." inside the
  // document, anything else to one of `references` (kept alive by the result).
  static Result<JsonSchema> parse(std::string_view text,
                                  const std::vector<Reference>& references = {});

  // Compact, with the input's key order (Confluent's canonical string for JSON schemas).
  std::string normalized_json() const;

  // Does `value` satisfy the schema? The assertions of drafts 4 to 7 and 2019-09's split forms
  // (dependentRequired, dependentSchemas, prefixItems): types (1.0 is an integer), enum, const,
  // bounds, multipleOf, string lengths in code points, patterns (by RE2: one it cannot run,
  // with a backreference or lookaround, or past the per-schema bounds, is not checked — and a
  // property name it might match is not additional), items, contains, uniqueItems,
  // properties, patternProperties, additionalProperties, required, dependencies,
  // propertyNames, allOf/anyOf/oneOf/not, if/then/else and "$ref" (which, as in draft 7,
  // replaces its siblings). "format" is an annotation, not checked. Errc::invalid_argument
  // naming the first failure and where in the value ("expected ... at #/amount"); also when
  // the check would take more than 100,000 steps plus 16 per node of the value (combinators
  // that multiply the work, huge schema nodes) or nest deeper than 256 (a "$ref" cycle).
  // Any thread.
  Status validate_value(const nlohmann::json& value) const;

 private:
  friend std::vector<std::string> json_schema_incompatibilities(const JsonSchema& reader,
                                                                const JsonSchema& writer);
  explicit JsonSchema(std::shared_ptr<const detail::JsonDoc> doc) : doc_(std::move(doc)) {}

  std::shared_ptr<const detail::JsonDoc> doc_;
};

// Can a reader validating with `reader` accept every document valid under `writer`? Confluent's
// rules: each structural change from writer to reader is classified (Confluent's names, e.g.
// PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL); empty when all are compatible, else one reason per
// incompatible change, "<CHANGE> at #/json/path".
std::vector<std::string> json_schema_incompatibilities(const JsonSchema& reader,
                                                       const JsonSchema& writer);

}  // namespace strata::protocol::schema
