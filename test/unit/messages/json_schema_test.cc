// Unit tests for protocol/schema/json_schema.h: validation, references, the normalized text and
// compatibility by Confluent's rules (each case names the change Confluent reports).
#include "protocol/schema/json_schema.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

namespace strata::protocol::schema {
namespace {

JsonSchema must_parse(std::string_view text, const std::vector<JsonSchema::Reference>& refs = {}) {
  auto r = JsonSchema::parse(text, refs);
  EXPECT_TRUE(r.ok()) << text << "\n" << r.status().to_string();
  return r.ok() ? std::move(r).value() : JsonSchema::parse("true").value();
}

std::string parse_error(std::string_view text) {
  auto r = JsonSchema::parse(text);
  EXPECT_FALSE(r.ok()) << text << " parsed";
  return r.ok() ? "" : r.status().message();
}

// The incompatibilities of reading data written with `writer` by `reader`, joined.
std::string incompat(std::string_view reader, std::string_view writer) {
  std::string out;
  for (const auto& r : json_schema_incompatibilities(must_parse(reader), must_parse(writer))) {
    out += (out.empty() ? "" : "; ") + r;
  }
  return out;
}

// Backward compatible: `next` reads what `prev` wrote.
void expect_backward(std::string_view prev, std::string_view next, const std::string& change) {
  const std::string got = incompat(next, prev);
  if (change.empty()) {
    EXPECT_EQ(got, "") << prev << " -> " << next;
  } else {
    EXPECT_NE(got.find(change), std::string::npos) << prev << " -> " << next << ": " << got;
  }
}

TEST(JsonSchemaParse, AcceptsTheDraftsKeywordsAndNormalizes) {
  auto s = must_parse(R"({
    "$schema": "http://json-schema.org/draft-07/schema#", "title": "Txn",
    "type": "object",
    "properties": {
      "id": {"type": "string", "pattern": "^t[0-9]{1,8}$", "maxLength": 9},
      "amount": {"type": ["number", "null"], "minimum": 0, "exclusiveMaximum": 1e9},
      "tags": {"type": "array", "items": {"$ref": "#/definitions/tag"}, "uniqueItems": true},
      "kind": {"enum": ["a", "b"]},
      "any": true
    },
    "required": ["id"],
    "additionalProperties": false,
    "definitions": {"tag": {"type": "string", "minLength": 1}}
  })");
  EXPECT_EQ(s.normalized_json().substr(0, 60),
            R"({"$schema":"http://json-schema.org/draft-07/schema#","title")");
  EXPECT_EQ(must_parse("true").normalized_json(), "true");
  EXPECT_EQ(must_parse(R"({ "b": 1, "a": 2 })").normalized_json(), R"({"b":1,"a":2})")
      << "key order kept, as Confluent's canonical string";
}

TEST(JsonSchemaParse, RejectsWhatConfluentRejects) {
  EXPECT_NE(parse_error("not json").find("not JSON"), std::string::npos);
  EXPECT_NE(parse_error("42").find("object or a boolean"), std::string::npos);
  EXPECT_NE(parse_error(R"({"type":"text"})").find("#/type"), std::string::npos);
  EXPECT_NE(parse_error(R"({"type":["string","string"]})").find("#/type"), std::string::npos);
  EXPECT_NE(parse_error(R"({"properties":{"a":3}})").find("#/properties/a"), std::string::npos);
  EXPECT_NE(parse_error(R"({"required":"a"})").find("#/required"), std::string::npos);
  EXPECT_NE(parse_error(R"({"pattern":"("})").find("invalid pattern"), std::string::npos);
  EXPECT_NE(parse_error(R"({"pattern":"a{100000}"})").find("over 999"), std::string::npos);
  EXPECT_NE(parse_error(R"({"minLength":-1})").find("non-negative"), std::string::npos);
  EXPECT_NE(parse_error(R"({"multipleOf":0})").find("multipleOf"), std::string::npos);
  EXPECT_NE(parse_error(R"({"anyOf":[]})").find("non-empty"), std::string::npos);
  EXPECT_NE(parse_error(R"({"$ref":"#/definitions/nope"})").find("unresolved $ref"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"$ref":"other.json"})").find("unresolved $ref"), std::string::npos);
  std::string deep;
  for (int i = 0; i < 100000; ++i) deep += "[";
  EXPECT_NE(parse_error(R"({"enum":)" + deep).find("not JSON"), std::string::npos);
  deep += std::string(100000, ']');
  EXPECT_NE(parse_error(R"({"enum":)" + deep + "}").find("deeper than"), std::string::npos);
  std::string nested = "true";
  for (int i = 0; i < 70; ++i) nested = R"({"not":)" + nested + "}";
  EXPECT_NE(parse_error(nested).find("deeper than 64"), std::string::npos);
}

TEST(JsonSchemaParse, ReferencesByNameAndFragment) {
  JsonSchema addr = must_parse(
      R"({"type":"object","properties":{"zip":{"$ref":"#/definitions/zip"}},
          "definitions":{"zip":{"type":"string","maxLength":10}}})");
  std::vector<JsonSchema::Reference> refs{{"address.json", &addr}};
  JsonSchema person = must_parse(
      R"({"type":"object","properties":{"home":{"$ref":"address.json"},
          "zip":{"$ref":"address.json#/definitions/zip"}}})",
      refs);
  // The referenced schema is compared through the reference: a narrower maxLength is
  // incompatible inside it.
  JsonSchema addr2 = must_parse(
      R"({"type":"object","properties":{"zip":{"$ref":"#/definitions/zip"}},
          "definitions":{"zip":{"type":"string","maxLength":5}}})");
  std::vector<JsonSchema::Reference> refs2{{"address.json", &addr2}};
  JsonSchema person2 = must_parse(
      R"({"type":"object","properties":{"home":{"$ref":"address.json"},
          "zip":{"$ref":"address.json#/definitions/zip"}}})",
      refs2);
  auto r = json_schema_incompatibilities(person2, person);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0], "MAX_LENGTH_DECREASED at #/properties/home/properties/zip/maxLength");
  EXPECT_EQ(r[1], "MAX_LENGTH_DECREASED at #/properties/zip/maxLength");
  EXPECT_TRUE(json_schema_incompatibilities(person, person2).empty());
}

TEST(JsonSchemaCompat, ContentModels) {
  const std::string open_a = R"({"type":"object","properties":{"a":{"type":"string"}}})";
  const std::string open_ab =
      R"({"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}}})";
  expect_backward(open_a, open_ab, "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL at #/properties/b");
  expect_backward(open_ab, open_a, "");  // PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL
  expect_backward(open_a, R"({"type":"object","properties":{"a":{"type":"string"},"b":{}}})", "");

  const std::string closed_a =
      R"({"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false})";
  const std::string closed_ab =
      R"({"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},
          "additionalProperties":false})";
  expect_backward(closed_a, closed_ab, "");  // OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL
  expect_backward(closed_ab, closed_a, "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL");
  const std::string closed_ab_required =
      R"({"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},
          "required":["b"],"additionalProperties":false})";
  expect_backward(closed_a, closed_ab_required, "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL");
  expect_backward(closed_a,
                  R"({"type":"object","properties":{"a":{"type":"string"},
                      "b":{"type":"integer","default":0}},"required":["b"],
                      "additionalProperties":false})",
                  "");
  expect_backward(closed_a, open_a, "");  // ADDITIONAL_PROPERTIES_ADDED
  expect_backward(open_a, closed_a, "ADDITIONAL_PROPERTIES_REMOVED at #/additionalProperties");

  const std::string partial =
      R"({"type":"object","properties":{"a":{"type":"string"}},
          "additionalProperties":{"type":"string"}})";
  expect_backward(partial,
                  R"({"type":"object","properties":{"a":{"type":"string"},"c":{"type":"string"}},
                      "additionalProperties":{"type":"string"}})",
                  "");
  expect_backward(partial,
                  R"({"type":"object","properties":{"a":{"type":"string"},"c":{"type":"integer"}},
                      "additionalProperties":{"type":"string"}})",
                  "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL at #/properties/c");
  const std::string patterned =
      R"({"type":"object","patternProperties":{"^n_":{"type":"number"}},
          "additionalProperties":false})";
  expect_backward(patterned,
                  R"({"type":"object","properties":{"n_x":{"type":"number"}},
                      "patternProperties":{"^n_":{"type":"number"}},"additionalProperties":false})",
                  "");
  expect_backward(patterned,
                  R"({"type":"object","properties":{"n_x":{"type":"integer"}},
                      "patternProperties":{"^n_":{"type":"number"}},"additionalProperties":false})",
                  "TYPE_NARROWED at #/properties/n_x");
}

TEST(JsonSchemaCompat, RequiredTypesEnumsAndLimits) {
  const std::string a = R"({"type":"object","properties":{"a":{"type":"integer"}}})";
  const std::string a_req =
      R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]})";
  expect_backward(a, a_req, "REQUIRED_ATTRIBUTE_ADDED at #/required/a");
  expect_backward(a_req, a, "");
  expect_backward(R"({"type":"integer"})", R"({"type":"number"})", "");  // TYPE_EXTENDED
  expect_backward(R"({"type":"number"})", R"({"type":"integer"})", "TYPE_NARROWED");
  expect_backward(R"({"type":"string"})", R"({"type":"integer"})", "TYPE_CHANGED at #");
  expect_backward(R"({"type":"string"})", R"({"type":["string","null"]})", "");
  expect_backward(R"({"type":["string","null"]})", R"({"type":"string"})", "TYPE_CHANGED");
  expect_backward(R"({"type":"string"})", "true", "");
  expect_backward("false", R"({"type":"string"})", "");
  expect_backward(R"({"enum":["a","b"]})", R"({"enum":["a","b","c"]})", "");
  expect_backward(R"({"enum":["a","b"]})", R"({"enum":["a"]})", "ENUM_ARRAY_NARROWED");
  expect_backward(R"({"enum":["a","b"]})", R"({"enum":["a","c"]})", "ENUM_ARRAY_CHANGED");
  expect_backward(R"({"type":"string","maxLength":5})", R"({"type":"string","maxLength":9})", "");
  expect_backward(R"({"type":"string","maxLength":9})", R"({"type":"string","maxLength":5})",
                  "MAX_LENGTH_DECREASED at #/maxLength");
  expect_backward(R"({"type":"string"})", R"({"type":"string","minLength":1})", "MIN_LENGTH_ADDED");
  expect_backward(R"({"type":"string","pattern":"^a"})", R"({"type":"string"})", "");
  expect_backward(R"({"type":"string"})", R"({"type":"string","pattern":"^a"})", "PATTERN_ADDED");
  expect_backward(R"({"type":"number","minimum":0})", R"({"type":"number","minimum":-1})", "");
  expect_backward(R"({"type":"number","minimum":0})", R"({"type":"number","minimum":1})",
                  "MINIMUM_INCREASED");
  expect_backward(R"({"type":"number","multipleOf":4})", R"({"type":"number","multipleOf":2})", "");
  expect_backward(R"({"type":"number","multipleOf":2})", R"({"type":"number","multipleOf":4})",
                  "MULTIPLE_OF_EXPANDED");
}

TEST(JsonSchemaCompat, ArraysCombinationsAndRecursion) {
  expect_backward(R"({"type":"array","items":{"type":"integer"}})",
                  R"({"type":"array","items":{"type":"number"}})", "");
  expect_backward(R"({"type":"array","items":{"type":"integer"}})",
                  R"({"type":"array","items":{"type":"string"}})", "TYPE_CHANGED at #/items");
  expect_backward(R"({"type":"array"})", R"({"type":"array","items":{"type":"string"}})",
                  "SCHEMA_ADDED at #/items");
  expect_backward(R"({"type":"array","items":[{"type":"string"}],"additionalItems":false})",
                  R"({"type":"array","items":[{"type":"string"},{"type":"integer"}],
                      "additionalItems":false})",
                  "");  // ITEM_ADDED_TO_CLOSED_CONTENT_MODEL
  expect_backward(R"({"type":"array","items":[{"type":"string"},{"type":"integer"}],
                      "additionalItems":false})",
                  R"({"type":"array","items":[{"type":"string"}],"additionalItems":false})",
                  "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL at #/items/1");
  expect_backward(R"({"type":"array","minItems":1})", R"({"type":"array","minItems":2})",
                  "MIN_ITEMS_INCREASED");
  const std::string one2 = R"({"oneOf":[{"type":"string"},{"type":"integer"}]})";
  const std::string one3 = R"({"oneOf":[{"type":"string"},{"type":"integer"},{"type":"null"}]})";
  expect_backward(one2, one3, "");  // SUM_TYPE_EXTENDED
  expect_backward(one3, one2, "SUM_TYPE_NARROWED");
  expect_backward(one2, R"({"anyOf":[{"type":"string"},{"type":"integer"}]})", "");
  expect_backward(R"({"anyOf":[{"type":"string"},{"type":"integer"}]})", one2,
                  "COMBINED_TYPE_CHANGED");
  expect_backward(R"({"oneOf":[{"type":"string"},{"type":"integer"}]})",
                  R"({"oneOf":[{"type":"string"},{"type":"boolean"}]})",
                  "COMBINED_TYPE_SUBSCHEMAS_CHANGED");
  expect_backward(R"({"not":{"type":"string"}})", R"({"not":{"type":"string","maxLength":3}})", "");
  expect_backward(R"({"not":{"type":"string","maxLength":3}})", R"({"not":{"type":"string"}})",
                  "NOT_TYPE_EXTENDED");
  // A recursive schema (a tree): the diff terminates and sees a change deep in the cycle.
  const std::string tree =
      R"({"type":"object","properties":{"v":{"type":"integer"},
          "kids":{"type":"array","items":{"$ref":"#"}}}})";
  const std::string tree2 =
      R"({"type":"object","properties":{"v":{"type":"string"},
          "kids":{"type":"array","items":{"$ref":"#"}}}})";
  expect_backward(tree, tree, "");
  expect_backward(tree, tree2, "TYPE_CHANGED at #/properties/v");
  expect_backward(R"({"allOf":[{"$ref":"#"}]})", R"({"allOf":[{"$ref":"#"}]})", "");
  // Definitions that fan out (each an anyOf of the next, twice): 2^40 paths. The diff stops at
  // its budget and answers incompatible instead of running for ages.
  std::string defs;
  for (int i = 0; i < 40; ++i) {
    const std::string next = R"({"$ref":"#/definitions/d)" + std::to_string(i + 1) + R"("})";
    defs += R"("d)" + std::to_string(i) + R"(":{"anyOf":[)" + next + "," + next + "]},";
  }
  const std::string fan =
      R"({"$ref":"#/definitions/d0","definitions":{)" + defs + R"("d40":{"type":"string"}}})";
  expect_backward(fan, fan, "SCHEMA_TOO_COMPLEX_TO_COMPARE");
}

// Random schemas: each is compatible with itself both ways, its normalized text parses back
// to itself, and adding an optional property to a closed object is always backward compatible
// while removing one is not (Confluent's closed content model).
TEST(JsonSchemaCompat, RandomSchemasAgainstTheRules) {
  std::mt19937 rng(20261204);
  std::function<std::string(int)> gen = [&](int depth) -> std::string {
    const int pick = static_cast<int>(rng() % (depth > 3 ? 5 : 9));
    switch (pick) {
      case 0:
        return R"({"type":"string","maxLength":)" + std::to_string(rng() % 50) + "}";
      case 1:
        return R"({"type":"integer","minimum":)" + std::to_string(rng() % 10) + "}";
      case 2:
        return R"({"type":["number","null"]})";
      case 3:
        return R"({"enum":["x","y",)" + std::to_string(rng() % 5) + "]}";
      case 4:
        return rng() % 2 ? "true" : R"({"type":"boolean"})";
      case 5:
        return R"({"type":"array","items":)" + gen(depth + 1) + "}";
      case 6:
        return R"({"anyOf":[)" + gen(depth + 1) + "," + gen(depth + 1) + "]}";
      default: {
        std::string props;
        const int n = 1 + static_cast<int>(rng() % 4);
        for (int i = 0; i < n; ++i) {
          props += i ? "," : "";
          props.append("\"p").append(std::to_string(i)).append("\":").append(gen(depth + 1));
        }
        return R"({"type":"object","properties":{)" + props + "}" +
               (rng() % 2 ? R"(,"additionalProperties":false})" : "}");
      }
    }
  };
  for (int i = 0; i < 300; ++i) {
    const std::string text = gen(0);
    JsonSchema s = must_parse(text);
    EXPECT_TRUE(json_schema_incompatibilities(s, s).empty()) << text;
    EXPECT_EQ(must_parse(s.normalized_json()).normalized_json(), s.normalized_json());
    const std::string field = gen(1);
    const std::string a = gen(1);
    const std::string closed =
        R"({"type":"object","properties":{"a":)" + a + R"(},"additionalProperties":false})";
    const std::string wider = R"({"type":"object","properties":{"a":)" + a + R"(,"z":)" + field +
                              R"(},"additionalProperties":false})";
    expect_backward(closed, wider, "");
    expect_backward(wider, closed, "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL");
  }
}

}  // namespace
}  // namespace strata::protocol::schema
