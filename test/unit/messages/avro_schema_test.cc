// Unit tests for protocol/schema/avro_schema.h: validation as Java's parser does it, the
// Parsing Canonical Form, the normalized text, schema references and reader/writer compatibility.
#include "protocol/schema/avro_schema.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace strata::protocol::schema {
namespace {

using Refs = std::vector<const AvroSchema*>;

AvroSchema must_parse(std::string_view text, const Refs& refs = {}) {
  auto r = AvroSchema::parse(text, refs);
  EXPECT_TRUE(r.ok()) << text << "\n" << r.status().to_string();
  return r.ok() ? std::move(r).value() : AvroSchema::parse(R"("null")").value();
}

// The parse error of `text` (empty and a test failure if it parses).
std::string parse_error(std::string_view text, const Refs& refs = {}) {
  auto r = AvroSchema::parse(text, refs);
  EXPECT_FALSE(r.ok()) << text << " parsed";
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), Errc::invalid_argument);
  return r.status().message();
}

std::vector<std::string> incompat(std::string_view reader, std::string_view writer) {
  return avro_incompatibilities(must_parse(reader), must_parse(writer));
}

std::string pcf(std::string_view text, const Refs& refs = {}) {
  return must_parse(text, refs).canonical_form();
}

// A record "R" with the given fields JSON.
std::string record(const std::string& fields) {
  return R"({"type":"record","name":"R","fields":[)" + fields + "]}";
}

TEST(AvroParse, PrimitivesAndComplexTypes) {
  for (const char* p : {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}) {
    std::string quoted = std::string("\"") + p + "\"";
    EXPECT_EQ(must_parse(quoted).type_name(), p);
    EXPECT_EQ(must_parse(R"({"type":)" + quoted + "}").type_name(), p);
  }
  AvroSchema s = must_parse(R"({
    "type": "record", "name": "Order", "namespace": "shop", "doc": "an order",
    "fields": [
      {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
      {"name": "state", "type": {"type": "enum", "name": "State", "symbols": ["NEW", "PAID"]}},
      {"name": "hash", "type": {"type": "fixed", "name": "Md5", "size": 16}},
      {"name": "tags", "type": {"type": "array", "items": "string"}, "default": []},
      {"name": "attrs", "type": {"type": "map", "values": "long"}, "default": {}},
      {"name": "note", "type": ["null", "string"], "default": null},
      {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9,
                                 "scale": 2}},
      {"name": "odd", "type": {"type": "int", "logicalType": "no-such-logical-type"}}
    ]})");
  EXPECT_EQ(s.type_name(), "record");
  EXPECT_EQ(s.full_name(), "shop.Order");
  EXPECT_EQ(must_parse(R"(["null","int"])").type_name(), "union");
  EXPECT_EQ(must_parse(R"(["null","int"])").full_name(), "");
  EXPECT_EQ(must_parse("/* Java allows comments */ \"int\"").type_name(), "int");
}

TEST(AvroParse, RejectsBadNames) {
  EXPECT_NE(parse_error(R"({"type":"record","name":"1R","fields":[]})").find("invalid name '1R'"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"type":"record","name":"a-b","fields":[]})").find("invalid name"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"type":"record","name":"R","namespace":"a.1b","fields":[]})")
                .find("invalid namespace 'a.1b'"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"type":"fixed","name":"a..F","size":1})").find("invalid namespace"),
            std::string::npos);
  parse_error(record(R"({"name":"x-y","type":"int"})"));
  parse_error(R"({"type":"enum","name":"E","symbols":["A","9"]})");
  parse_error(R"({"type":"record","name":"int","fields":[]})");  // primitive names are taken
  parse_error(R"({"type":"record","fields":[]})");               // no name
  must_parse(R"({"type":"record","name":"_a.B_1.c9","fields":[]})");
}

TEST(AvroParse, RejectsDuplicates) {
  EXPECT_NE(parse_error(record(R"({"name":"a","type":{"type":"fixed","name":"F","size":1}},
                                  {"name":"b","type":{"type":"enum","name":"F","symbols":["X"]}})"))
                .find("cannot redefine named type 'F'"),
            std::string::npos);
  // The inner record inherits namespace n, so n.R is defined twice.
  parse_error(R"({"type":"record","name":"R","namespace":"n","fields":[
                  {"name":"a","type":{"type":"record","name":"R","fields":[]}}]})");
  // The same simple name in another namespace is another type.
  must_parse(R"({"type":"record","name":"R","namespace":"n","fields":[
                  {"name":"a","type":{"type":"record","name":"R","namespace":"m","fields":[]}}]})");
  EXPECT_NE(parse_error(record(R"({"name":"a","type":"int"},{"name":"a","type":"long"})"))
                .find("duplicate field 'a'"),
            std::string::npos);
  parse_error(R"({"type":"enum","name":"E","symbols":["A","B","A"]})");
}

TEST(AvroParse, RejectsUnknownTypes) {
  EXPECT_NE(parse_error(R"("Foo")").find("unknown type name 'Foo'"), std::string::npos);
  parse_error(R"({"type":"Foo"})");
  EXPECT_NE(parse_error(record(R"({"name":"f","type":"Bar"})")).find("unknown type name 'Bar'"),
            std::string::npos);
  parse_error(R"({"type":"array"})");
  parse_error(R"({"type":"map","items":"int"})");
  parse_error(R"({"name":"R"})");
  parse_error("42");
  parse_error("{\"type\":");
  parse_error(R"({"type":"record","name":"R"})");  // no fields
  parse_error(record(R"({"name":"f"})"));          // field without a type
  parse_error(record(R"({"name":"f","type":"int","order":"up"})"));
  // A name is usable only once defined.
  parse_error(record(
      R"({"name":"a","type":"F"},{"name":"b","type":{"type":"fixed","name":"F","size":1}})"));
}

TEST(AvroParse, RejectsBadUnions) {
  EXPECT_NE(parse_error(R"(["int","int"])").find("duplicate type 'int'"), std::string::npos);
  parse_error(R"(["null",{"type":"array","items":"int"},{"type":"array","items":"long"}])");
  parse_error(R"(["null",["int","string"]])");
  parse_error(R"(["null",{"type":"string"},"string"])");
  must_parse(
      R"(["null",{"type":"fixed","name":"A","size":1},{"type":"fixed","name":"B","size":1}])");
  must_parse(R"([])");
}

TEST(AvroParse, EnumDefaultMustBeASymbol) {
  EXPECT_NE(parse_error(R"({"type":"enum","name":"E","symbols":["A","B"],"default":"C"})")
                .find("not one of its symbols"),
            std::string::npos);
  must_parse(R"({"type":"enum","name":"E","symbols":["A","B"],"default":"B"})");
}

TEST(AvroParse, FixedSizeMustBeANonNegativeInt) {
  for (const char* size : {"-1", "\"16\"", "1.5", "2147483648", "null"}) {
    parse_error(std::string(R"({"type":"fixed","name":"F","size":)") + size + "}");
  }
  parse_error(R"({"type":"fixed","name":"F"})");
  must_parse(R"({"type":"fixed","name":"F","size":0})");
  must_parse(R"({"type":"fixed","name":"F","size":2147483647})");
}

TEST(AvroParse, ValidatesFieldDefaults) {
  const char* good[][2] = {
      {"\"int\"", "-2147483648"},
      {"\"long\"", "9007199254740993"},
      {"\"float\"", "1"},
      {"\"double\"", "\"NaN\""},
      {"\"double\"", "\"-Infinity\""},
      {"\"boolean\"", "true"},
      {"\"null\"", "null"},
      {"\"string\"", "\"x\""},
      {"\"bytes\"", "\"\\u00ff\""},
      {R"({"type":"fixed","name":"F","size":2})", "\"ab\""},
      {R"({"type":"enum","name":"E","symbols":["A","B"]})", "\"B\""},
      {R"(["null","int"])", "null"},
      {R"(["int","null"])", "1"},
      {R"({"type":"array","items":"int"})", "[1,2]"},
      {R"({"type":"map","values":"int"})", R"({"a":1})"},
      {R"({"type":"record","name":"In","fields":[{"name":"a","type":"int"},
          {"name":"b","type":"string","default":"x"}]})",
       R"({"a":1})"},
  };
  for (const auto& g : good) {
    must_parse(
        record(std::string(R"({"name":"f","type":)") + g[0] + R"(,"default":)" + g[1] + "}"));
  }
  const char* bad[][2] = {
      {"\"int\"", "\"1\""},
      {"\"int\"", "1.5"},
      {"\"int\"", "2147483648"},
      {"\"long\"", "1.0"},
      {"\"float\"", "\"fast\""},
      {"\"boolean\"", "0"},
      {"\"null\"", "0"},
      {"\"bytes\"", "1"},
      {R"({"type":"enum","name":"E","symbols":["A"]})", "\"Z\""},
      {R"(["null","string"])", "\"x\""},  // a union's default matches its first branch
      {R"(["string","null"])", "null"},
      {R"({"type":"array","items":"int"})", R"(["a"])"},
      {R"({"type":"map","values":"int"})", "[]"},
      {R"({"type":"record","name":"In","fields":[{"name":"a","type":"int"}]})", "{}"},
  };
  for (const auto& b : bad) {
    std::string err = parse_error(
        record(std::string(R"({"name":"f","type":)") + b[0] + R"(,"default":)" + b[1] + "}"));
    EXPECT_NE(err.find("invalid default for field 'f'"), std::string::npos) << err;
  }
}

TEST(AvroParse, RecursiveRecords) {
  AvroSchema list = must_parse(R"({"type":"record","name":"Node","namespace":"l","fields":[
      {"name":"value","type":"int"},{"name":"next","type":["null","Node"],"default":null}]})");
  EXPECT_EQ(list.canonical_form(),
            R"({"name":"l.Node","type":"record","fields":[{"name":"value","type":"int"},)"
            R"({"name":"next","type":["null","l.Node"]}]})");
  EXPECT_TRUE(avro_incompatibilities(list, list).empty());
}

TEST(AvroParse, RejectsHostileNesting) {
  std::string deep;
  for (int i = 0; i < 5000; ++i) deep += R"({"type":"array","items":)";
  deep += "\"int\"" + std::string(5000, '}');
  EXPECT_NE(parse_error(deep).find("nests too deeply"), std::string::npos);
  std::string deep_default = std::string(5000, '[') + std::string(5000, ']');
  parse_error(record(R"({"name":"f","type":"int","x":)" + deep_default + "}"));
}

TEST(AvroCanonicalForm, SpecExamples) {
  EXPECT_EQ(pcf(R"("int")"), R"("int")");
  EXPECT_EQ(pcf(R"({"type":"int"})"), R"("int")");
  EXPECT_EQ(pcf(R"({"type":"long","logicalType":"timestamp-millis"})"), R"("long")");
  EXPECT_EQ(
      pcf(R"({"type":"record","name":"R","namespace":"a.b","fields":[{"name":"f","type":"int","doc":"x"}]})"),
      R"({"name":"a.b.R","type":"record","fields":[{"name":"f","type":"int"}]})");
  EXPECT_EQ(pcf(R"({"doc":"d","items":{"type":"string"},"type":"array"})"),
            R"({"type":"array","items":"string"})");
  EXPECT_EQ(pcf(R"({"type":"map","values":"long","extra":1})"),
            R"({"type":"map","values":"long"})");
  EXPECT_EQ(pcf(R"({"symbols":["A","B"],"aliases":["X"],"type":"enum","namespace":"n","name":"E",
                    "default":"A"})"),
            R"({"name":"n.E","type":"enum","symbols":["A","B"]})");
  EXPECT_EQ(pcf(R"( [ "null" , { "type" : "string" } ] )"), R"(["null","string"])");
  EXPECT_EQ(pcf(R"({"type":"fixed","name":"n.F","namespace":"ignored","size":16})"),
            R"({"name":"n.F","type":"fixed","size":16})");
  // [STRINGS]: escapes are replaced by the characters they stand for.
  EXPECT_EQ(pcf(R"({"type":"record","name":"\u0052","fields":[]})"),
            R"({"name":"R","type":"record","fields":[]})");
}

TEST(AvroCanonicalForm, NamesAreFullAndDefinedOnce) {
  // E inherits a.b; F is explicitly in the null namespace and still found from inside a.b.
  EXPECT_EQ(
      pcf(R"({"type":"record","name":"R","namespace":"a.b","fields":[
                  {"name":"e","type":{"type":"enum","name":"E","symbols":["X"]}},
                  {"name":"e2","type":"E"},
                  {"name":"e3","type":"a.b.E"},
                  {"name":"f","type":{"type":"fixed","name":"F","namespace":"","size":2}},
                  {"name":"f2","type":"F"}]})"),
      R"({"name":"a.b.R","type":"record","fields":[)"
      R"({"name":"e","type":{"name":"a.b.E","type":"enum","symbols":["X"]}},)"
      R"({"name":"e2","type":"a.b.E"},{"name":"e3","type":"a.b.E"},)"
      R"({"name":"f","type":{"name":"F","type":"fixed","size":2}},{"name":"f2","type":"F"}]})");
  // Formatting, key order and namespace spelling do not change the form.
  EXPECT_EQ(
      pcf(R"({"type":"record","name":"R","namespace":"a","fields":[{"name":"x","type":"long"}]})"),
      pcf(R"({ "fields" : [ { "type" : "long", "name" : "x" } ], "name" : "a.R",
                     "type" : "record" })"));
}

TEST(AvroNormalizedJson, KeepsEveryAttributeInJavaLayout) {
  const char* text = R"({
    "type": "record", "name": "R", "namespace": "a.b", "doc": "top",
    "aliases": ["Old", "x.Y"],
    "fields": [
      {"name": "id", "type": {"type": "long", "logicalType": "timestamp-millis"}, "doc": "when",
       "default": 0, "order": "descending", "aliases": ["ts"], "custom": [1, 2]},
      {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A"], "default": "A"}},
      {"name": "f", "type": {"name": "F", "type": "fixed", "namespace": "c", "size": 2}},
      {"name": "g", "type": "a.b.E", "order": "ascending"}
    ],
    "extra": true
  })";
  const std::string want =
      R"({"type":"record","name":"R","namespace":"a.b","doc":"top","fields":[)"
      R"({"name":"id","type":{"type":"long","logicalType":"timestamp-millis"},"doc":"when",)"
      R"("default":0,"order":"descending","aliases":["ts"],"custom":[1,2]},)"
      R"({"name":"e","type":{"type":"enum","name":"E","symbols":["A"],"default":"A"}},)"
      R"({"name":"f","type":{"type":"fixed","name":"F","namespace":"c","size":2}},)"
      R"({"name":"g","type":"E"}],"extra":true,"aliases":["Old","x.Y"]})";
  EXPECT_EQ(must_parse(text).normalized_json(), want);
  EXPECT_EQ(must_parse(want).normalized_json(), want);  // a fixed point
  // The same schema with namespaces spelled differently.
  EXPECT_EQ(must_parse(R"({"type":"record","name":"a.b.R","doc":"top","fields":[
      {"name":"id","type":{"type":"long","logicalType":"timestamp-millis"},"doc":"when",
       "default":0,"order":"descending","aliases":["ts"],"custom":[1,2]},
      {"name":"e","type":{"type":"enum","name":"a.b.E","symbols":["A"],"default":"A"}},
      {"name":"f","type":{"type":"fixed","name":"c.F","size":2}},
      {"name":"g","type":"E"}],"extra":true,"aliases":["a.b.Old","x.Y"]})")
                .normalized_json(),
            want);
  EXPECT_EQ(must_parse(R"({"type":"int"})").normalized_json(), R"("int")");
  EXPECT_EQ(must_parse(R"({"type":"record","name":"R","namespace":"n","fields":[
                  {"name":"f","type":{"type":"fixed","name":"G","namespace":"","size":1}}]})")
                .normalized_json(),
            R"({"type":"record","name":"R","namespace":"n","fields":[)"
            R"({"name":"f","type":{"type":"fixed","name":"G","namespace":"","size":1}}]})");
}

TEST(AvroCompatibility, RecordFields) {
  const std::string v1 = record(R"({"name":"id","type":"int"})");
  const std::string v2_default =
      record(R"({"name":"id","type":"int"},{"name":"name","type":"string","default":""})");
  const std::string v2_required =
      record(R"({"name":"id","type":"int"},{"name":"name","type":"string"})");
  EXPECT_TRUE(incompat(v2_default, v1).empty());  // added with a default: reads old data
  EXPECT_EQ(incompat(v2_required, v1),
            std::vector<std::string>{
                "reader field 'name' has no default and is missing from the writer at /fields/1"});
  EXPECT_TRUE(incompat(v1, v2_required).empty());  // a removed field is skipped
  // A reader field alias finds a renamed writer field.
  EXPECT_TRUE(incompat(record(R"({"name":"ident","type":"int","aliases":["id"]})"), v1).empty());
  EXPECT_FALSE(incompat(record(R"({"name":"ident","type":"int"})"), v1).empty());
}

TEST(AvroCompatibility, Promotions) {
  EXPECT_TRUE(incompat(R"("long")", R"("int")").empty());
  EXPECT_EQ(incompat(R"("int")", R"("long")"),
            std::vector<std::string>{"reader type 'int' cannot read writer type 'long' at /"});
  for (auto [reader, writer] :
       std::vector<std::pair<const char*, const char*>>{{"float", "int"},
                                                        {"float", "long"},
                                                        {"double", "int"},
                                                        {"double", "long"},
                                                        {"double", "float"},
                                                        {"bytes", "string"},
                                                        {"string", "bytes"}}) {
    EXPECT_TRUE(
        incompat(std::string("\"") + reader + "\"", std::string("\"") + writer + "\"").empty())
        << reader << " <- " << writer;
  }
  for (auto [reader, writer] :
       std::vector<std::pair<const char*, const char*>>{{"long", "float"},
                                                        {"float", "double"},
                                                        {"int", "string"},
                                                        {"null", "int"},
                                                        {"int", "null"},
                                                        {"boolean", "int"}}) {
    EXPECT_FALSE(
        incompat(std::string("\"") + reader + "\"", std::string("\"") + writer + "\"").empty())
        << reader << " <- " << writer;
  }
  EXPECT_TRUE(
      incompat(record(R"({"name":"f","type":"long"})"), record(R"({"name":"f","type":"int"})"))
          .empty());
  EXPECT_EQ(
      incompat(record(R"({"name":"f","type":"int"})"), record(R"({"name":"f","type":"long"})")),
      std::vector<std::string>{
          "reader type 'int' cannot read writer type 'long' at /fields/0/type"});
  EXPECT_TRUE(incompat(R"({"type":"array","items":"double"})", R"({"type":"array","items":"int"})")
                  .empty());
  EXPECT_EQ(
      incompat(R"({"type":"map","values":"int"})", R"({"type":"map","values":"long"})"),
      std::vector<std::string>{"reader type 'int' cannot read writer type 'long' at /values"});
}

TEST(AvroCompatibility, EnumSymbols) {
  const char* abc = R"({"type":"enum","name":"E","symbols":["A","B","C"]})";
  const char* ab = R"({"type":"enum","name":"E","symbols":["A","B"]})";
  const char* ab_default = R"({"type":"enum","name":"E","symbols":["A","B"],"default":"A"})";
  EXPECT_TRUE(incompat(abc, ab).empty());  // the new reader knows every old symbol
  EXPECT_EQ(incompat(ab, abc),
            std::vector<std::string>{
                "reader enum 'E' lacks writer symbols [C] and has no default at /symbols"});
  EXPECT_TRUE(incompat(ab_default, abc).empty());  // unknown symbols read as the default
  EXPECT_FALSE(incompat(R"({"type":"enum","name":"F","symbols":["A","B"]})", ab).empty());
}

TEST(AvroCompatibility, NamedTypes) {
  EXPECT_EQ(incompat(R"({"type":"record","name":"S","fields":[]})", record("")),
            std::vector<std::string>{"reader record 'S' does not match writer name 'R' at /name"});
  EXPECT_TRUE(
      incompat(R"({"type":"record","name":"S","aliases":["R"],"fields":[]})", record("")).empty());
  // As in Java, only the unqualified names must agree.
  EXPECT_TRUE(incompat(R"({"type":"record","name":"a.R","fields":[]})", record("")).empty());
  EXPECT_EQ(incompat(R"({"type":"fixed","name":"F","size":16})",
                     R"({"type":"fixed","name":"F","size":8})"),
            std::vector<std::string>{
                "reader fixed 'F' has size 16 but the writer's has size 8 at /size"});
  EXPECT_FALSE(incompat(R"({"type":"fixed","name":"F","size":4})", record("")).empty());
}

TEST(AvroCompatibility, Unions) {
  const char* null_int = R"(["null","int"])";
  const char* null_int_string = R"(["null","int","string"])";
  EXPECT_TRUE(incompat(null_int_string, null_int).empty());  // widening
  EXPECT_EQ(incompat(null_int, null_int_string),
            std::vector<std::string>{
                "reader union has no branch that can read writer type 'string' at /2"});
  EXPECT_TRUE(incompat(R"(["null","long"])", R"("int")").empty());  // promoted into a branch
  EXPECT_TRUE(incompat(R"(["null","int"])", R"("null")").empty());
  EXPECT_EQ(incompat(R"("int")", null_int),
            std::vector<std::string>{"reader type 'int' cannot read writer type 'null' at /0"});
  EXPECT_TRUE(incompat(R"("long")", R"(["int","long"])").empty());
  // An optional field made required is incompatible; required made optional is fine.
  const std::string optional = record(R"({"name":"f","type":["null","string"],"default":null})");
  const std::string required = record(R"({"name":"f","type":"string"})");
  EXPECT_TRUE(incompat(optional, required).empty());
  EXPECT_FALSE(incompat(required, optional).empty());
}

TEST(AvroCompatibility, RecursiveTypes) {
  auto list = [](const char* value_type, const char* extra) {
    return std::string(R"({"type":"record","name":"Node","fields":[{"name":"value","type":")") +
           value_type + R"("},{"name":"next","type":["null","Node"],"default":null})" + extra +
           "]}";
  };
  EXPECT_TRUE(incompat(list("int", ""), list("int", "")).empty());
  EXPECT_TRUE(
      incompat(list("long", R"(,{"name":"tag","type":"string","default":""})"), list("int", ""))
          .empty());
  EXPECT_EQ(incompat(list("int", ""), list("long", "")),
            std::vector<std::string>{
                "reader type 'int' cannot read writer type 'long' at /fields/0/type"});
  EXPECT_EQ(incompat(list("int", R"(,{"name":"tag","type":"string"})"), list("int", "")),
            std::vector<std::string>{
                "reader field 'tag' has no default and is missing from the writer at /fields/2"});
}

TEST(AvroReferences, NamedTypesOfReferencedSchemas) {
  const char* person_text = R"({"type":"record","name":"Person","namespace":"com.x","fields":[
      {"name":"home","type":"Address"},
      {"name":"work","type":["null","com.x.Address"],"default":null}]})";
  std::optional<AvroSchema> address = must_parse(
      R"({"type":"record","name":"Address","namespace":"com.x","fields":[{"name":"street","type":"string"}]})");
  EXPECT_NE(parse_error(person_text).find("unknown type name 'Address'"), std::string::npos);
  AvroSchema person = must_parse(person_text, {&*address});
  // A whole schema may be just the name of a referenced type.
  AvroSchema alias = must_parse(R"("com.x.Address")", {&*address});
  EXPECT_EQ(alias.full_name(), "com.x.Address");
  EXPECT_EQ(alias.type_name(), "record");
  EXPECT_EQ(alias.normalized_json(), R"("com.x.Address")");
  // Redefining a referenced type is an error, as in one Java parser.
  parse_error(R"({"type":"record","name":"com.x.Address","fields":[]})", {&*address});
  address.reset();  // the parsed schema keeps its references alive
  EXPECT_EQ(
      person.canonical_form(),
      R"({"name":"com.x.Person","type":"record","fields":[{"name":"home","type":)"
      R"({"name":"com.x.Address","type":"record","fields":[{"name":"street","type":"string"}]}},)"
      R"({"name":"work","type":["null","com.x.Address"]}]})");
  EXPECT_EQ(person.normalized_json(),
            R"({"type":"record","name":"Person","namespace":"com.x","fields":[)"
            R"({"name":"home","type":"Address"},)"
            R"({"name":"work","type":["null","Address"],"default":null}]})");
  // Self-contained: the referenced type defined at its first use, every attribute kept; the
  // text parses without the reference and is the same schema.
  const std::string alone = person.self_contained_json();
  EXPECT_EQ(alone, R"({"type":"record","name":"Person","namespace":"com.x","fields":[)"
                   R"({"name":"home","type":{"type":"record","name":"Address","fields":[)"
                   R"({"name":"street","type":"string"}]}},)"
                   R"({"name":"work","type":["null","Address"],"default":null}]})");
  AvroSchema reparsed = must_parse(alone);
  EXPECT_EQ(reparsed.canonical_form(), person.canonical_form());
  EXPECT_EQ(reparsed.self_contained_json(), alone);
  // References are transitive: Person brings Address along.
  AvroSchema team = must_parse(
      R"({"type":"record","name":"Team","fields":[{"name":"lead","type":"com.x.Person"},
          {"name":"office","type":"com.x.Address"}]})",
      {&person});
  EXPECT_NE(team.canonical_form().find(R"("name":"com.x.Address","type":"record")"),
            std::string::npos);
}

TEST(AvroReferences, SelfContainedWithADiamondOfReferences) {
  // Two references that each bring their own parse of one shared type: it is written once.
  const char* money_text =
      R"({"type":"record","name":"Money","namespace":"m","fields":[{"name":"cents","type":"long"}]})";
  AvroSchema money_a = must_parse(money_text);
  AvroSchema money_b = must_parse(money_text);
  AvroSchema debit = must_parse(
      R"({"type":"record","name":"Debit","namespace":"d","fields":[{"name":"amount","type":"m.Money"}]})",
      {&money_a});
  AvroSchema credit = must_parse(
      R"({"type":"record","name":"Credit","namespace":"c","fields":[{"name":"amount","type":"m.Money"}]})",
      {&money_b});
  AvroSchema row = must_parse(R"({"type":"record","name":"Row","fields":[
      {"name":"debit","type":["null","d.Debit"],"default":null},
      {"name":"credit","type":["null","c.Credit"],"default":null},
      {"name":"fee","type":["null","m.Money"],"default":null}]})",
                              {&debit, &credit, &money_a});
  const std::string alone = row.self_contained_json();
  AvroSchema reparsed = must_parse(alone);
  EXPECT_EQ(reparsed.canonical_form(), row.canonical_form()) << alone;
  size_t defined = 0;
  for (size_t at = alone.find(R"("name":"Money")"); at != std::string::npos;
       at = alone.find(R"("name":"Money")", at + 1)) {
    ++defined;
  }
  EXPECT_EQ(defined, 1u) << alone;
}

TEST(AvroReferences, CompatibilityAcrossReferences) {
  AvroSchema address1 =
      must_parse(R"({"type":"record","name":"A","fields":[{"name":"street","type":"string"}]})");
  AvroSchema address2 = must_parse(R"({"type":"record","name":"A","fields":[
      {"name":"street","type":"string"},{"name":"zip","type":"string","default":""}]})");
  AvroSchema address3 = must_parse(R"({"type":"record","name":"A","fields":[
      {"name":"street","type":"string"},{"name":"zip","type":"string"}]})");
  const char* person = R"({"type":"record","name":"P","fields":[{"name":"home","type":"A"}]})";
  AvroSchema p1 = must_parse(person, {&address1});
  AvroSchema p2 = must_parse(person, {&address2});
  AvroSchema p3 = must_parse(person, {&address3});
  EXPECT_TRUE(avro_incompatibilities(p2, p1).empty());
  EXPECT_EQ(avro_incompatibilities(p3, p1),
            std::vector<std::string>{"reader field 'zip' has no default and is missing from the "
                                     "writer at /fields/0/type/fields/1"});
  // Two references may share a type only if they agree on it.
  AvroSchema address1_again =
      must_parse(R"({"type":"record","name":"A","fields":[{"name":"street","type":"string"}]})");
  must_parse(person, {&address1, &address1_again});
  EXPECT_NE(parse_error(person, {&address1, &address2}).find("define 'A' differently"),
            std::string::npos);
}

}  // namespace
}  // namespace strata::protocol::schema
