// Internals shared by json_schema.cc (parsing, validation) and json_schema_diff.cc
// (compatibility): the parsed document and "$ref" resolution. Not for use elsewhere.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace strata::protocol::schema::detail {

using ojson = nlohmann::ordered_json;

// Bound on the nesting of schemas (validation) and of the diff's walk.
inline constexpr int kJsonSchemaMaxDepth = 64;

struct JsonDoc {
  ojson root;
  std::vector<std::pair<std::string, std::shared_ptr<const JsonDoc>>> refs;
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
