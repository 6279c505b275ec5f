// Unit tests for JsonSchema::validate_value (protocol/schema/json_schema_values.cc): each
// keyword passing and failing, where a failure is reported, references, and the bounds a
// hostile schema or value meets.
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "protocol/schema/json_schema.h"

namespace strata::protocol::schema {
namespace {

using nlohmann::json;

JsonSchema must_parse(std::string_view text, const std::vector<JsonSchema::Reference>& refs = {}) {
  auto r = JsonSchema::parse(text, refs);
  EXPECT_TRUE(r.ok()) << text << "\n" << r.status().to_string();
  return r.ok() ? std::move(r).value() : JsonSchema::parse("true").value();
}

// "" when `value` is valid under `schema`, else the failure's message.
std::string check(std::string_view schema, std::string_view value) {
  auto st = must_parse(schema).validate_value(json::parse(value));
  return st.ok() ? "" : st.message();
}

struct Case {
  const char* schema;
  const char* value;
  const char* failure;  // "" = valid; else a part of the message
};

TEST(JsonSchemaValues, EachKeywordAcceptsAndRefuses) {
  const std::vector<Case> cases = {
      {"true", R"({"a": [1]})", ""},
      {"false", "1", "the schema false accepts no value at #"},
      {R"({"type": "integer"})", "3", ""},
      {R"({"type": "integer"})", "3.0", ""},
      {R"({"type": "integer"})", "3.5", R"(expected "integer", got number at #)"},
      {R"({"type": ["string", "null"]})", "null", ""},
      {R"({"type": ["string", "null"]})", "true", "got boolean"},
      {R"({"type": "number"})", "18446744073709551615", ""},
      {R"({"enum": [1, "a", {"x": [null]}]})", R"({"x": [null]})", ""},
      {R"({"enum": [1, "a"]})", "1.0", ""},
      {R"({"enum": [1, "a"]})", R"("b")", "not in the enum"},
      {R"({"const": {"a": 1, "b": 2}})", R"({"b": 2, "a": 1})", ""},
      {R"({"const": {"a": 1}})", R"({"a": 1, "b": 2})", "not the const"},
      {R"({"maximum": 10, "minimum": -1})", "10", ""},
      {R"({"maximum": 10})", "10.5", "not within maximum 10"},
      {R"({"exclusiveMaximum": 10})", "10", "not within exclusiveMaximum 10"},
      {R"({"maximum": 10, "exclusiveMaximum": true})", "10", "not within maximum 10"},
      {R"({"minimum": 0, "exclusiveMinimum": true})", "0.001", ""},
      {R"({"exclusiveMinimum": 0})", "0", "not within exclusiveMinimum 0"},
      {R"({"maximum": 9223372036854775807})", "9223372036854775808", "not within maximum"},
      // Integers against doubles exactly: 2^53 + 1 is above 2^53 even as a double's bound.
      {R"({"maximum": 9007199254740992.0})", "9007199254740993", "not within maximum"},
      {R"({"minimum": 9007199254740992.5})", "9007199254740993", ""},
      {R"({"enum": [9007199254740992.0]})", "9007199254740993", "not in the enum"},
      {R"({"multipleOf": 3})", "-9", ""},
      {R"({"multipleOf": 3})", "10", "not a multiple of 3"},
      {R"({"multipleOf": 0.01})", "19.99", ""},
      {R"({"multipleOf": 0.01})", "19.995", "not a multiple of 0.01"},
      {R"({"multipleOf": 0.5})", "1e308", ""},  // the quotient overflows: fmod decides
      {R"({"multipleOf": 0.001})", "1000000000.5", ""},
      {R"({"multipleOf": 0.25})", "1000000000.1", "not a multiple"},
      {R"({"maxLength": 2})", R"("é€")", ""},  // code points, not bytes
      {R"({"maxLength": 2})", R"("abc")", "longer than maxLength 2"},
      {R"({"minLength": 1})", R"("")", "shorter than minLength 1"},
      {R"({"type": "string", "minLength": 1})", "5", "expected"},  // lengths only for strings
      {R"({"pattern": "^t[0-9]{1,3}$"})", R"("t12")", ""},
      {R"({"pattern": "[0-9]"})", R"("ab1c")", ""},  // unanchored, as ECMA 262's test()
      {R"({"pattern": "^t[0-9]{1,3}$"})", R"("t1234")", "does not match the pattern"},
      {R"({"pattern": "^\\u0041+$"})", R"("AAA")", ""},  // \uXXXX read as RE2's \x{XXXX}
      {R"({"pattern": "(a)\\1"})", R"("xy")", ""},       // a backreference: RE2 cannot, unchecked
      {R"({"items": {"type": "integer"}})", "[1, 2, 3]", ""},
      {R"({"items": {"type": "integer"}})", R"([1, "2"])",
       "expected \"integer\", got string at #/1"},
      {R"({"items": [{"type": "string"}], "additionalItems": false})", R"(["a"])", ""},
      {R"({"items": [{"type": "string"}], "additionalItems": false})", R"(["a", 1])", "at #/1"},
      {R"({"prefixItems": [{"type": "string"}], "items": {"type": "integer"}})", R"(["a", 1])", ""},
      {R"({"prefixItems": [{"type": "string"}], "items": {"type": "integer"}})", R"(["a", "b"])",
       "at #/1"},
      {R"({"maxItems": 1})", "[1, 2]", "more items than maxItems 1"},
      {R"({"minItems": 1})", "[]", "fewer items than minItems 1"},
      {R"({"uniqueItems": true})", R"([1, {"a": 1}, [1]])", ""},
      {R"({"uniqueItems": true})", R"([{"a": 1, "b": 2}, 3, {"b": 2, "a": 1}])",
       "items 0 and 2 are equal"},
      {R"({"uniqueItems": true})", "[1, 1.0]", "are equal"},
      {R"({"contains": {"const": 2}})", "[1, 2]", ""},
      {R"({"contains": {"const": 2}})", "[1, 3]", "no item matches contains"},
      {R"({"required": ["a", "b"]})", R"({"a": 1, "b": null})", ""},
      {R"({"required": ["a", "b"]})", R"({"a": 1})", "missing property b (required) at #"},
      {R"({"properties": {"a": {"properties": {"b": {"type": "string"}}}}})", R"({"a": {"b": 7}})",
       "got number at #/a/b"},
      {R"({"properties": {"a": true}, "additionalProperties": false})", R"({"a": 1})", ""},
      {R"({"properties": {"a": true}, "additionalProperties": false})", R"({"a": 1, "z": 2})",
       "property z is not allowed at #"},
      {R"({"properties": {"a": true}, "additionalProperties": {"type": "integer"}})",
       R"({"z": "x"})", "at #/z"},
      {R"({"patternProperties": {"^n_": {"type": "number"}}, "additionalProperties": false})",
       R"({"n_a": 1, "n_b": 2.5})", ""},
      {R"({"patternProperties": {"^n_": {"type": "number"}}, "additionalProperties": false})",
       R"({"n_a": "1"})", "at #/n_a"},
      {R"({"patternProperties": {"^n_": true}, "additionalProperties": false})", R"({"x": 1})",
       "property x is not allowed"},
      // A lookahead RE2 cannot run: the pattern is not checked, so no key is additional.
      {R"j({"patternProperties": {"^(?=a)": {"type": "string"}}, "additionalProperties": false})j",
       R"({"ab": 1, "zz": 2})", ""},
      // A pattern in a node only a "$ref" reaches.
      {R"({"components": {"id": {"pattern": "^t[0-9]+$"}}, "properties": {"id": {"$ref": "#/components/id"}}})",
       R"({"id": "x1"})", "does not match the pattern \"^t[0-9]+$\" at #/id"},
      {R"({"maxProperties": 1})", R"({"a": 1, "b": 2})", "more properties than maxProperties"},
      {R"({"minProperties": 1})", "{}", "fewer properties than minProperties"},
      {R"({"dependencies": {"card": ["billing"]}})", R"({"card": 1})",
       "missing property billing (present with card)"},
      {R"({"dependencies": {"card": ["billing"]}})", R"({"billing": 1})", ""},
      {R"({"dependencies": {"card": {"required": ["cvv"]}}})", R"({"card": 1, "cvv": 2})", ""},
      {R"({"dependentRequired": {"card": ["billing"]}})", R"({"card": 1})", "missing property"},
      {R"({"dependentSchemas": {"card": {"maxProperties": 1}}})", R"({"card": 1, "x": 2})",
       "more properties"},
      {R"({"propertyNames": {"maxLength": 3}})", R"({"abc": 1})", ""},
      {R"({"propertyNames": {"maxLength": 3}})", R"({"abcd": 1})",
       "property name abcd does not match propertyNames"},
      {R"({"allOf": [{"type": "number"}, {"minimum": 2}]})", "3", ""},
      {R"({"allOf": [{"type": "number"}, {"minimum": 2}]})", "1", "not within minimum 2"},
      {R"({"anyOf": [{"type": "string"}, {"type": "null"}]})", "null", ""},
      {R"({"anyOf": [{"type": "string"}, {"type": "null"}]})", "1", "matches no schema of anyOf"},
      {R"({"oneOf": [{"type": "integer"}, {"minimum": 2}]})", "1", ""},
      {R"({"oneOf": [{"type": "integer"}, {"minimum": 2}]})", "3",
       "matches 2 schemas of oneOf, not exactly one"},
      {R"({"not": {"type": "null"}})", "0", ""},
      {R"({"not": {"type": "null"}})", "null", "matches the schema of not"},
      {R"({"if": {"minimum": 10}, "then": {"multipleOf": 10}, "else": {"maximum": 5}})", "20", ""},
      {R"({"if": {"minimum": 10}, "then": {"multipleOf": 10}, "else": {"maximum": 5}})", "25",
       "not a multiple of 10"},
      {R"({"if": {"minimum": 10}, "then": {"multipleOf": 10}, "else": {"maximum": 5}})", "7",
       "not within maximum 5"},
      {R"({"format": "date-time"})", R"("not a date")", ""},  // an annotation only
      {R"({"definitions": {"pos": {"minimum": 0}}, "properties": {"n": {"$ref": "#/definitions/pos"}}})",
       R"({"n": -1})", "not within minimum 0 at #/n"},
      // As in draft 7, a "$ref" replaces its siblings.
      {R"({"definitions": {"any": true}, "$ref": "#/definitions/any", "type": "string"})", "1", ""},
  };
  for (const Case& c : cases) {
    const std::string got = check(c.schema, c.value);
    if (std::string(c.failure).empty()) {
      EXPECT_EQ(got, "") << c.schema << " on " << c.value;
    } else {
      EXPECT_NE(got.find(c.failure), std::string::npos)
          << c.schema << " on " << c.value << ": \"" << got << "\"";
    }
  }
}

TEST(JsonSchemaValues, ReferencedSchemasCheckTheirPart) {
  auto amount = must_parse(R"({"type": "number", "minimum": 0, "pattern": "unused"})");
  auto ids = must_parse(R"({"definitions": {"id": {"type": "string", "pattern": "^t[0-9]+$"}}})");
  auto s = must_parse(R"({"type": "object", "properties": {
      "amount": {"$ref": "amount.json"},
      "id": {"$ref": "ids.json#/definitions/id"}}})",
                      {{"amount.json", &amount}, {"ids.json", &ids}});
  EXPECT_TRUE(s.validate_value(json::parse(R"({"amount": 3, "id": "t1"})")).ok());
  auto st = s.validate_value(json::parse(R"({"amount": -3, "id": "t1"})"));
  EXPECT_NE(st.message().find("not within minimum 0 at #/amount"), std::string::npos)
      << st.message();
  // The referenced document's own patterns are used for its nodes.
  st = s.validate_value(json::parse(R"({"amount": 3, "id": "x1"})"));
  EXPECT_NE(st.message().find("does not match the pattern \"^t[0-9]+$\" at #/id"),
            std::string::npos)
      << st.message();
}

TEST(JsonSchemaValues, HostileSchemasAndValuesAreBounded) {
  // allOf of two references to the next level, 40 levels deep: 2^40 evaluations unbounded.
  std::string defs;
  for (int i = 0; i < 40; ++i) {
    defs += "\"d" + std::to_string(i) + "\": {\"allOf\": [{\"$ref\": \"#/definitions/d" +
            std::to_string(i + 1) + "\"}, {\"$ref\": \"#/definitions/d" + std::to_string(i + 1) +
            "\"}]},";
  }
  defs += "\"d40\": {\"type\": \"integer\"}";
  const std::string doubling = "{\"definitions\": {" + defs + "}, \"$ref\": \"#/definitions/d0\"}";
  EXPECT_NE(check(doubling, "1").find("too many steps"), std::string::npos);
  // The budget also fails a check under "not" (which would otherwise invert the failure).
  const std::string negated =
      "{\"definitions\": {" + defs + "}, \"not\": {\"$ref\": \"#/definitions/d0\"}}";
  EXPECT_NE(check(negated, "1").find("too many steps"), std::string::npos);
  EXPECT_NE(check(R"({"anyOf": [{"$ref": "#"}]})", "1").find("nest deeper than 256"),
            std::string::npos);
  // A pattern that backtracks exponentially in a backtracking engine, on a long value: RE2
  // answers in linear time without recursion.
  std::string value = "\"";
  value.append(200'000, 'a');
  value += "!\"";
  EXPECT_NE(check(R"({"pattern": "^(a+)+$"})", value).find("does not match"), std::string::npos);
  EXPECT_EQ(check(R"({"pattern": "^(a|aa)+!$"})", value), "");
  // uniqueItems sorts: 100,000 distinct items pass, one repeated is found.
  json many = json::array();
  for (int i = 0; i < 100'000; ++i) many.push_back(i % 2 ? json(i) : json(std::to_string(i)));
  const auto unique = must_parse(R"({"uniqueItems": true})");
  EXPECT_TRUE(unique.validate_value(many).ok());
  many.push_back(3.0);
  auto st = unique.validate_value(many);
  EXPECT_NE(st.message().find("items 3 and 100000 are equal"), std::string::npos) << st.message();
  // A fat node (an enum of 10,000 entries) under the doubling schema: each visit costs its
  // size, so the budget ends it after a few visits.
  std::string fat = "\"d40\": {\"enum\": [";
  for (int i = 0; i < 10'000; ++i) fat += std::to_string(i + 1) + ",";
  fat += "0]}";
  std::string fat_defs = defs.substr(0, defs.rfind("\"d40\"")) + fat;
  EXPECT_NE(check("{\"definitions\": {" + fat_defs + "}, \"$ref\": \"#/definitions/d0\"}", "0")
                .find("too many steps"),
            std::string::npos);
  // A pattern whose RE2 program is too large (a DFA of 2^990 states, which RE2 would run by
  // its slower NFA on a long value) is not checked.
  std::string ab = "\"";
  for (int i = 0; i < 50'000; ++i) ab += "ab";
  ab += "\"";
  EXPECT_EQ(check(R"({"pattern": "[ab]*a[ab]{990}$"})", ab), "");
}

// Random values: each is valid under its own const and enum and under its type, and invalid
// under "not" of them; a value with one leaf changed is not its const.
TEST(JsonSchemaValues, RandomValuesMatchTheirOwnLiterals) {
  std::mt19937 rng(7);
  std::function<json(int)> gen = [&](int depth) -> json {
    switch (rng() % (depth > 3 ? 5 : 7)) {
      case 0:
        return nullptr;
      case 1:
        return rng() % 2 == 0;
      case 2:
        return static_cast<int64_t>(rng() % 2000) - 1000;
      case 3:
        return (static_cast<double>(rng() % 2000) - 1000) / 8;
      case 4:
        return std::string(rng() % 4, static_cast<char>('a' + rng() % 3));
      case 5: {
        json a = json::array();
        for (unsigned i = rng() % 4; i > 0; --i) a.push_back(gen(depth + 1));
        return a;
      }
      default: {
        json o = json::object();
        for (unsigned i = rng() % 4; i > 0; --i)
          o[std::string(1, 'k' + rng() % 4)] = gen(depth + 1);
        return o;
      }
    }
  };
  for (int i = 0; i < 500; ++i) {
    const json v = gen(0);
    const std::string lit = v.dump();
    const std::string type = v.is_number_integer() ? "integer" : v.type_name();
    EXPECT_EQ(check("{\"const\": " + lit + "}", lit), "") << lit;
    EXPECT_EQ(check("{\"enum\": [0, " + lit + "]}", lit), "") << lit;
    EXPECT_EQ(check("{\"type\": \"" + type + "\"}", lit), "") << lit;
    EXPECT_NE(check("{\"not\": {\"const\": " + lit + "}}", lit), "") << lit;
    const json other = gen(0);
    EXPECT_EQ(check("{\"const\": " + lit + "}", other.dump()) == "", v == other)
        << lit << " vs " << other.dump();
  }
}

}  // namespace
}  // namespace strata::protocol::schema
