// Internals shared by json_schema.cc (parsing, validation), json_schema_values.cc (values
// against a schema) and json_schema_diff.cc (compatibility): the parsed document and "$ref"
// resolution. Not for use elsewhere.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace re2 {
class RE2;
}

namespace strata::protocol::schema::detail {

using ojson = nlohmann::ordered_json;

// Bound on the nesting of schemas (validation) and of the diff's walk.
inline constexpr int kJsonSchemaMaxDepth = 64;

struct JsonDoc {
  ojson root;
  std::vector<std::pair<std::string, std::shared_ptr<const JsonDoc>>> refs;
  // Every "pattern" and "patternProperties" name of the document compiled for RE2 (parse);
  // null for a pattern RE2 cannot run (backreferences, lookaround) or past the per-document
  // bounds (json_schema.cc, compile_patterns): such a pattern is not checked.
  std::map<std::string, std::shared_ptr<const re2::RE2>, std::less<>> patterns;
};

// A schema node and the document its "$ref"s resolve in.
struct JsonNode {
  const JsonDoc* doc = nullptr;
  const ojson* j = nullptr;
};

// "name#/json/pointer" (percent-encoded): the named reference's document (no name: `doc`),
// then the pointer in it; nullopt when either does not exist.
std::optional<JsonNode> resolve_ref(const JsonDoc& doc, const std::string& ref);

}  // namespace strata::protocol::schema::detail
