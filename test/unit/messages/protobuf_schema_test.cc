// Protobuf schemas of the Schema Registry (protocol/schema/protobuf_schema.h) and their values
// (protobuf_codec.h): parsing both registration forms, references, Confluent's compatibility
// rules one change at a time, and the value decoding every client framing produces.
#include "protocol/schema/protobuf_schema.h"

#include <google/protobuf/compiler/parser.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "protocol/base/base64.h"
#include "protocol/schema/protobuf_codec.h"

namespace strata::protocol::schema {
namespace {

using json = nlohmann::json;

ProtobufSchema must(std::string_view text,
                    const std::vector<ProtobufSchema::Reference>& refs = {}) {
  auto s = ProtobufSchema::parse(text, refs);
  EXPECT_TRUE(s.ok()) << s.status().message() << "\n" << text;
  return std::move(*s);
}

std::string error_of(std::string_view text) {
  auto s = ProtobufSchema::parse(text);
  return s.ok() ? std::string("(parsed)") : s.status().message();
}

// What confluent-kafka-python registers: the file's FileDescriptorProto, base64. Built here with
// libprotoc directly, not through the code under test.
std::string as_descriptor(std::string_view text, const std::string& name) {
  google::protobuf::io::ArrayInputStream in(text.data(), static_cast<int>(text.size()));
  google::protobuf::io::Tokenizer tokens(&in, nullptr);
  google::protobuf::compiler::Parser parser;
  google::protobuf::FileDescriptorProto proto;
  EXPECT_TRUE(parser.Parse(&tokens, &proto));
  proto.set_name(name);
  return base64_encode(proto.SerializeAsString());
}

std::vector<std::string> diff(std::string_view reader, std::string_view writer) {
  return protobuf_schema_incompatibilities(must(reader), must(writer));
}

// "CHANGE at ..." reasons reduced to their changes.
std::vector<std::string> changes(const std::vector<std::string>& reasons) {
  std::vector<std::string> out;
  for (const auto& r : reasons) out.push_back(r.substr(0, r.find(' ')));
  return out;
}

constexpr const char* kRisk = R"(syntax = "proto3";
package strata.test;
import "google/protobuf/wrappers.proto";
message Risk {
  string account = 1;
  double score = 2;
  optional int64 limit = 3;
  google.protobuf.Int64Value txn_count = 4;
  enum Level { LOW = 0; HIGH = 1; }
  Level level = 5;
  repeated string tags = 6;
  map<string, int32> counts = 7;
  bytes raw = 8;
  Inner inner = 9;
  message Inner { uint64 big = 1; }
}
message Other { sint32 delta = 1; }
)";

TEST(ProtobufSchemaParse, TextAndDescriptorFormsAreOneSchema) {
  const ProtobufSchema text = must(kRisk);
  const ProtobufSchema desc = must(as_descriptor(kRisk, "risk.proto"));
  EXPECT_EQ(text.normalized(), desc.normalized());
  EXPECT_EQ(must(text.normalized()).normalized(), text.normalized()) << "normalizing is stable";
  EXPECT_NE(text.normalized().find("message Risk"), std::string::npos) << text.normalized();
  EXPECT_NE(text.normalized().find("import \"google/protobuf/wrappers.proto\""), std::string::npos);
  // Formatting and comments do not make another schema.
  const std::string spaced =
      "// a comment\nsyntax   =  \"proto3\";\n\nmessage A {\n   int32 x = 1;  // x\n}\n";
  EXPECT_EQ(must(spaced).normalized(),
            must("syntax = \"proto3\"; message A { int32 x = 1; }").normalized());
}

TEST(ProtobufSchemaParse, BadSchemasAreRefusedWithTheReason) {
  EXPECT_NE(error_of("syntax = \"proto3\"; message A { int32 x = ; }").find("line 1"),
            std::string::npos);
  EXPECT_NE(error_of("syntax = \"proto3\"; message A { Missing m = 1; }").find("Missing"),
            std::string::npos);
  EXPECT_NE(error_of("syntax = \"proto3\"; message A { int32 x = 1; int32 y = 1; }")
                .find("already been used"),
            std::string::npos);
  EXPECT_NE(error_of("syntax = \"proto3\"; import \"other.proto\"; message A { int32 x = 1; }")
                .find("other.proto"),
            std::string::npos);
  EXPECT_NE(error_of("AAAA////").find("FileDescriptorProto"), std::string::npos);
  EXPECT_FALSE(ProtobufSchema::parse("").ok());
  // Nesting is bounded before the parser recurses, in both forms.
  std::string deep = "syntax = \"proto3\";";
  for (int i = 0; i < 40; ++i) deep.append(" message M").append(std::to_string(i)).append(" {");
  deep += std::string(40, '}');
  EXPECT_NE(error_of(deep).find("nest"), std::string::npos);
  google::protobuf::FileDescriptorProto proto;
  auto* m = proto.add_message_type();
  for (int i = 0; i < 40; ++i) {
    m->set_name(std::string("M").append(std::to_string(i)));
    m = m->add_nested_type();
  }
  m->set_name("Last");
  EXPECT_NE(error_of(base64_encode(proto.SerializeAsString())).find("nest"), std::string::npos);
}

TEST(ProtobufSchemaParse, ImportsResolveToReferencesByName) {
  const ProtobufSchema common =
      must("syntax = \"proto3\"; package c; message Money { int64 cents = 1; }");
  const std::string text =
      "syntax = \"proto3\"; import \"common/money.proto\"; message Txn { c.Money amount = 1; }";
  auto s = ProtobufSchema::parse(text, {{"common/money.proto", &common}});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_NE(s->normalized().find("import \"common/money.proto\""), std::string::npos);
  // A referrer of the referrer sees the whole chain.
  auto top = ProtobufSchema::parse(
      "syntax = \"proto3\"; import \"txn.proto\"; message Batch { repeated Txn txns = 1; }",
      {{"txn.proto", &*s}});
  EXPECT_TRUE(top.ok()) << top.status().message();
  EXPECT_FALSE(ProtobufSchema::parse(text, {{"other.proto", &common}}).ok());
}

// A table schema is pinned without the registry: the files it imports travel with its text,
// and read back they build the same file and encode the same bytes.
TEST(ProtobufSchemaParse, SelfContainedCarriesTheImportedFiles) {
  const ProtobufSchema money =
      must("syntax = \"proto3\"; package c; message Money { int64 cents = 1; }");
  const ProtobufSchema txn = must(
      "syntax = \"proto3\"; package t; import \"common/money.proto\";"
      " import \"google/protobuf/timestamp.proto\";"
      " message Txn { c.Money amount = 1; google.protobuf.Timestamp at = 2; }",
      {{"common/money.proto", &money}});
  const ProtobufSchema row = must(
      "syntax = \"proto3\"; import \"txn.proto\"; import \"common/money.proto\";"
      " message Row { optional t.Txn last = 1; optional c.Money total = 2; }",
      {{"txn.proto", &txn}, {"common/money.proto", &money}});

  const json pinned = json::parse(row.self_contained());
  ASSERT_EQ(pinned["imports"].size(), 2u) << pinned.dump(1);      // the well-known file stays out
  EXPECT_EQ(pinned["imports"][0]["name"], "common/money.proto");  // imports first
  EXPECT_EQ(pinned["imports"][1]["name"], "txn.proto");
  EXPECT_EQ(pinned["schema"], row.normalized());

  auto back = ProtobufSchema::parse_self_contained(row.self_contained());
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->normalized(), row.normalized());
  EXPECT_EQ(back->self_contained(), row.self_contained());
  const json value = {{"last", {{"amount", {{"cents", 12}}}, {"at", {{"seconds", 5}}}}},
                      {"total", {{"cents", 40}}}};
  auto a = protobuf_encode_row(row, value);
  auto b = protobuf_encode_row(*back, value);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status().message() << b.status().message();
  EXPECT_EQ(*a, *b);

  // Without references the text is the file's own; parse_self_contained reads that too.
  EXPECT_EQ(money.self_contained(), money.normalized());
  EXPECT_TRUE(ProtobufSchema::parse_self_contained(money.self_contained()).ok());
  // Hostile or damaged bundles are refused, not crashed on.
  for (const char* bad : {"{", "{}", R"({"imports": {}, "schema": ""})",
                          R"({"imports": [1], "schema": "syntax = \"proto3\";"})",
                          R"({"imports": [], "schema": 5})"}) {
    EXPECT_FALSE(ProtobufSchema::parse_self_contained(bad).ok()) << bad;
  }
  json missing = pinned;
  missing["imports"].erase(0);
  auto m = ProtobufSchema::parse_self_contained(missing.dump());
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("common/money.proto"), std::string::npos)
      << m.status().message();
}

// The forms references arrive in round-trip too: a reference registered as a base64 descriptor,
// a public import, a reference registered under a google/protobuf/ name that is not the linked
// file; and a bundle whose file imports one not before it is refused, naming both.
TEST(ProtobufSchemaParse, SelfContainedRoundTripsEveryReferenceForm) {
  const ProtobufSchema money = must(as_descriptor(
      "syntax = \"proto3\"; package c; message Money { int64 cents = 1; }", "money.proto"));
  const ProtobufSchema custom =
      must("syntax = \"proto3\"; package g; message Extra { string note = 1; }");
  const ProtobufSchema relay = must(
      "syntax = \"proto3\"; package r; import public \"common/money.proto\";"
      " message Relay { c.Money m = 1; }",
      {{"common/money.proto", &money}});
  const ProtobufSchema row = must(
      "syntax = \"proto3\"; import \"relay.proto\"; import \"google/protobuf/extra.proto\";"
      " message Row { optional c.Money m = 1; optional g.Extra e = 2; optional r.Relay r = 3; }",
      {{"relay.proto", &relay}, {"google/protobuf/extra.proto", &custom}});
  auto back = ProtobufSchema::parse_self_contained(row.self_contained());
  ASSERT_TRUE(back.ok()) << back.status().message() << "\n" << row.self_contained();
  EXPECT_EQ(back->normalized(), row.normalized());
  EXPECT_EQ(back->self_contained(), row.self_contained());
  const json pinned = json::parse(row.self_contained());
  std::vector<std::string> names;
  for (const auto& i : pinned["imports"]) names.push_back(i["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"common/money.proto", "relay.proto",
                                             "google/protobuf/extra.proto"}));

  json swapped = pinned;
  std::swap(swapped["imports"][0], swapped["imports"][1]);
  auto bad = ProtobufSchema::parse_self_contained(swapped.dump());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("import \"relay.proto\": import \"common/money.proto\""),
            std::string::npos)
      << bad.status().message();
}

TEST(ProtobufSchemaCompat, CompatibleChangesAsConfluentListsThem) {
  const char* v1 = "syntax = \"proto3\"; message A { int32 x = 1; string s = 2; }";
  EXPECT_TRUE(diff(v1, v1).empty());
  // Fields added, removed, renamed; messages and enums added; int32 widened to int64;
  // string read as bytes; a string made repeated.
  EXPECT_TRUE(diff("syntax = \"proto3\"; message A { int64 x = 1; bytes t = 2; int32 y = 3; }"
                   " message B {} enum E { Z = 0; }",
                   v1)
                  .empty());
  EXPECT_TRUE(diff("syntax = \"proto3\"; message A { int32 x = 1; }", v1).empty());
  EXPECT_TRUE(
      diff("syntax = \"proto3\"; message A { int32 x = 1; repeated string s = 2; }", v1).empty());
  // A recursive message compares without looping.
  const char* tree = "syntax = \"proto3\"; message T { int32 v = 1; repeated T kids = 2; }";
  EXPECT_TRUE(diff(tree, tree).empty());
}

TEST(ProtobufSchemaCompat, IncompatibleChangesAreNamedWithTheirPath) {
  const char* v1 =
      "syntax = \"proto3\"; package p; message A { int32 x = 1; B b = 2; }"
      " message B { int32 y = 1; }";
  EXPECT_EQ(changes(diff("syntax = \"proto3\"; package p; message A { string x = 1; B b = 2; }"
                         " message B { int32 y = 1; }",
                         v1)),
            std::vector<std::string>{"FIELD_SCALAR_KIND_CHANGED"});
  EXPECT_EQ(diff("syntax = \"proto3\"; package p; message A { sint32 x = 1; B b = 2; }"
                 " message B { int32 y = 1; }",
                 v1),
            std::vector<std::string>{"FIELD_SCALAR_KIND_CHANGED at #/A/1"});
  EXPECT_EQ(changes(diff("syntax = \"proto3\"; package p; message A { int32 x = 1; int32 b = 2; }"
                         " message B { int32 y = 1; }",
                         v1)),
            std::vector<std::string>{"FIELD_KIND_CHANGED"});
  EXPECT_EQ(changes(diff("syntax = \"proto3\"; package q; message A { int32 x = 1; B b = 2; }"
                         " message B { int32 y = 1; }",
                         v1)),
            std::vector<std::string>{"PACKAGE_CHANGED"});
  EXPECT_EQ(changes(diff("syntax = \"proto3\"; package p; message A { int32 x = 1; }", v1)),
            std::vector<std::string>{"MESSAGE_REMOVED"});
  // A change inside a field's message type is reported there and on the field.
  auto nested = diff(
      "syntax = \"proto3\"; package p; message A { int32 x = 1; B b = 2; }"
      " message B { string y = 1; }",
      v1);
  EXPECT_NE(std::find(nested.begin(), nested.end(), "FIELD_NAMED_TYPE_CHANGED at #/A/2"),
            nested.end());
  EXPECT_NE(std::find(nested.begin(), nested.end(), "FIELD_SCALAR_KIND_CHANGED at #/A/2/1"),
            nested.end());
  EXPECT_EQ(changes(diff("syntax = \"proto3\"; package p; message A { int32 x = 1; C b = 2; }"
                         " message B { int32 y = 1; } message C { int32 y = 1; }",
                         v1)),
            std::vector<std::string>{"FIELD_NAMED_TYPE_CHANGED"});
}

TEST(ProtobufSchemaCompat, LabelsRequiredFieldsAndOneofs) {
  const char* p2 =
      "syntax = \"proto2\"; message A { optional int32 x = 1; optional string s = 2; }";
  EXPECT_EQ(changes(diff("syntax = \"proto2\"; message A { repeated int32 x = 1;"
                         " optional string s = 2; }",
                         p2)),
            std::vector<std::string>{"FIELD_NUMERIC_LABEL_CHANGED"});
  EXPECT_TRUE(diff("syntax = \"proto2\"; message A { optional int32 x = 1;"
                   " repeated string s = 2; }",
                   p2)
                  .empty());
  EXPECT_EQ(changes(diff("syntax = \"proto2\"; message A { optional int32 x = 1;"
                         " optional string s = 2; required int32 r = 3; }",
                         p2)),
            std::vector<std::string>{"REQUIRED_FIELD_ADDED"});
  EXPECT_EQ(changes(diff(p2,
                         "syntax = \"proto2\"; message A { optional int32 x = 1;"
                         " optional string s = 2; required int32 r = 3; }")),
            std::vector<std::string>{"REQUIRED_FIELD_REMOVED"});
  const char* plain =
      "syntax = \"proto3\"; message A { int32 x = 1; int32 y = 2; oneof o { int32 z = 3; } }";
  EXPECT_EQ(changes(diff("syntax = \"proto3\"; message A { oneof n { int32 x = 1; int32 y = 2; }"
                         " oneof o { int32 z = 3; } }",
                         plain)),
            std::vector<std::string>{"MULTIPLE_FIELDS_MOVED_TO_ONEOF"});
  EXPECT_EQ(changes(diff("syntax = \"proto3\"; message A { int32 y = 2;"
                         " oneof o { int32 x = 1; int32 z = 3; } }",
                         plain)),
            std::vector<std::string>{"FIELD_MOVED_TO_EXISTING_ONEOF"});
  EXPECT_EQ(changes(diff("syntax = \"proto3\"; message A { int32 x = 1; int32 y = 2; oneof o {"
                         " int32 w = 4; } }",
                         plain)),
            std::vector<std::string>{"ONEOF_FIELD_REMOVED"});
  // One field moved into a new oneof, and members added to a oneof, are compatible.
  EXPECT_TRUE(diff("syntax = \"proto3\"; message A { int32 y = 2; oneof n { int32 x = 1; }"
                   " oneof o { int32 z = 3; int32 w = 4; } }",
                   plain)
                  .empty());
}

// Protobuf wire bytes, written by hand so the decoder is checked against the format itself.
std::string varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
  return out;
}
std::string tag(int field, int wire) { return varint((uint64_t(field) << 3) | wire); }
std::string len(int field, const std::string& bytes) {
  return tag(field, 2) + varint(bytes.size()) + bytes;
}

Result<json> decode(const ProtobufSchema& s, const std::string& bytes) {
  return protobuf_decode(s,
                         std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
}

TEST(ProtobufCodec, FieldsMapToJsonByPresence) {
  const ProtobufSchema s = must(kRisk);
  std::string body = len(1, "acct-1") + tag(3, 0) + varint(7) +
                     len(4, tag(1, 0) + varint(uint64_t{1} << 40)) + tag(5, 0) + varint(1) +
                     len(6, "a") + len(6, "b") + len(7, len(1, "k") + tag(2, 0) + varint(3)) +
                     len(8, std::string("\x00\xff", 2)) + len(9, tag(1, 0) + varint(~uint64_t{0}));
  auto v = decode(s, std::string(1, '\0') + body);  // [0] as one zero byte
  ASSERT_TRUE(v.ok()) << v.status().message();
  const json want = {{"account", "acct-1"},
                     {"score", 0.0},  // implicit presence: always there
                     {"limit", 7},
                     {"txn_count", int64_t{1} << 40},  // a wrapper is its value
                     {"level", "HIGH"},
                     {"tags", {"a", "b"}},
                     {"counts", {{"k", 3}}},
                     {"raw", std::string("\0\xc3\xbf", 3)},  // code points 0 and 255
                     {"inner", {{"big", ~uint64_t{0}}}}};
  EXPECT_EQ(*v, want) << v->dump();
  // No optional field written: it is absent; implicit ones hold their defaults.
  auto empty = decode(s, std::string(1, '\0'));
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(empty->contains("limit"));
  EXPECT_FALSE(empty->contains("txn_count"));
  EXPECT_EQ((*empty)["account"], "");
  EXPECT_EQ((*empty)["level"], "LOW");
}

TEST(ProtobufCodec, EveryClientsMessageIndexFramingDecodes) {
  const ProtobufSchema s = must(kRisk);
  const std::string other = tag(1, 0) + varint(5);  // Other.delta = sint32 -3
  const json want = {{"delta", -3}};
  // Zigzag (Java, librdkafka): count 1 → 0x02, index 1 → 0x02.
  auto zz = decode(s, std::string("\x02\x02").append(other));
  ASSERT_TRUE(zz.ok()) << zz.status().message();
  EXPECT_EQ(*zz, want);
  // Plain varints (confluent-kafka-python before 1.8.2): 0x01 0x01.
  auto plain = decode(s, std::string("\x01\x01").append(other));
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ(*plain, want);
  // No indexes at all (KafkaJS): the first message.
  auto none = decode(s, len(1, "acct-2"));
  ASSERT_TRUE(none.ok()) << none.status().message();
  EXPECT_EQ((*none)["account"], "acct-2");
}

TEST(ProtobufCodec, BadValuesAreRefusedWithTheReason) {
  const ProtobufSchema s = must(kRisk);
  auto unknown = decode(s, std::string(1, '\0') + tag(15, 0) + varint(1));
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("does not declare"), std::string::npos);
  auto nan = decode(
      s, std::string(1, '\0') + tag(2, 1) + std::string("\x00\x00\x00\x00\x00\x00\xf8\x7f", 8));
  ASSERT_FALSE(nan.ok());
  EXPECT_NE(nan.status().message().find("finite"), std::string::npos);
  EXPECT_FALSE(decode(s, std::string(1, '\0') + len(1, "x").substr(0, 2)).ok()) << "truncated";
  EXPECT_FALSE(decode(s, "\x02\x0a").ok()) << "index 5 names no message";
  const ProtobufSchema p2 =
      must("syntax = \"proto2\"; message A { required int32 r = 1; optional string s = 2; }");
  auto missing = decode(p2, std::string(1, '\0') + len(2, "x"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("required"), std::string::npos);
  auto latin1 = decode(p2, std::string(1, '\0') + tag(1, 0) + varint(1) + len(2, "\xff"));
  ASSERT_FALSE(latin1.ok());
  EXPECT_NE(latin1.status().message().find("UTF-8"), std::string::npos);
}

// A schema may name its own messages like the wrappers: only the real shape is unwrapped, and a
// row is an object even when its message is a wrapper.
TEST(ProtobufCodec, WrapperNamesDoNotUnwrapOtherShapesOrRows) {
  const ProtobufSchema empty = must(R"(syntax = "proto3"; package google.protobuf;
    message Int64Value {}
    message Row { Int64Value n = 1; BoolValue b = 2; }
    message BoolValue { bool value = 1; })");
  auto top = decode(empty, std::string(1, '\0'));
  ASSERT_TRUE(top.ok()) << top.status().message();
  EXPECT_EQ(*top, json::object());
  auto row = decode(empty, std::string("\x02\x02") + len(1, "") + len(2, tag(1, 0) + varint(1)));
  ASSERT_TRUE(row.ok()) << row.status().message();
  EXPECT_EQ(*row, (json{{"n", json::object()}, {"b", true}})) << row->dump();
  auto wrapper_row = decode(empty, std::string("\x02\x04") + tag(1, 0) + varint(1));
  ASSERT_TRUE(wrapper_row.ok()) << wrapper_row.status().message();
  EXPECT_EQ(*wrapper_row, (json{{"value", true}}));
}

TEST(ProtobufCodec, RandomBytesNeverCrashAndDecodeOnlyToObjects) {
  const ProtobufSchema s = must(kRisk);
  std::mt19937 rng(7);
  int decoded = 0;
  for (int i = 0; i < 5000; ++i) {
    std::string bytes(rng() % 40, '\0');
    for (auto& c : bytes) c = static_cast<char>(rng());
    auto v = decode(s, bytes);
    if (v.ok()) {
      ++decoded;
      EXPECT_TRUE(v->is_object());
      EXPECT_NO_THROW((void)v->dump());
    }
  }
  EXPECT_GT(decoded, 0) << "some random inputs are valid messages";
}

TEST(ProtobufCodec, RowsEncodeAsTheFirstMessageAndDecodeBack) {
  const ProtobufSchema s = must(kRisk);
  const json row = {{"account", "acct-1"},
                    {"score", 0.5},
                    {"limit", 7},
                    {"txn_count", int64_t{1} << 40},
                    {"level", "HIGH"},
                    {"tags", {"a", "b"}},
                    {"counts", {{"k", 3}}},
                    {"raw", std::string("\0\xc3\xbf", 3)},
                    {"inner", {{"big", ~uint64_t{0}}}}};
  auto bytes = protobuf_encode_row(s, row);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  EXPECT_EQ((*bytes)[0], '\0') << "the message index [0] as one zero byte";
  auto back = decode(s, *bytes);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, row) << back->dump();
  // Null and absent fields stay unset: those with presence read as absent, implicit ones as
  // their defaults.
  auto sparse = protobuf_encode_row(s, json{{"limit", nullptr}, {"txn_count", nullptr}});
  ASSERT_TRUE(sparse.ok()) << sparse.status().message();
  auto read = decode(s, *sparse);
  ASSERT_TRUE(read.ok());
  EXPECT_FALSE(read->contains("limit"));
  EXPECT_FALSE(read->contains("txn_count"));
  EXPECT_EQ((*read)["score"], 0.0);
  // Map keys of other types parse from the object's keys; a proto3 enum keeps a number it does
  // not name.
  const ProtobufSchema keyed = must(R"(syntax = "proto3";
    message Row { map<int64, string> names = 1; map<bool, int32> flags = 2;
                  enum E { A = 0; } E e = 3; })");
  const json k = {{"names", {{"-5", "x"}}}, {"flags", {{"true", 1}}}, {"e", 9}};
  auto kb = protobuf_encode_row(keyed, k);
  ASSERT_TRUE(kb.ok()) << kb.status().message();
  EXPECT_EQ(*decode(keyed, *kb), k);
}

TEST(ProtobufCodec, RowsThatDoNotFitAreRefusedNamingTheField) {
  const ProtobufSchema s = must(kRisk);
  auto error = [&](const json& row) {
    auto r = protobuf_encode_row(s, row);
    return r.ok() ? std::string("(encoded)") : r.status().message();
  };
  EXPECT_NE(error({{"nope", 1}}).find("has no field nope"), std::string::npos);
  EXPECT_NE(error({{"account", 1}}).find("account needs a string"), std::string::npos);
  EXPECT_NE(error({{"limit", 1.5}}).find("limit needs an integer"), std::string::npos);
  EXPECT_NE(error({{"inner", {{"big", -1}}}}).find("out of its type's range"), std::string::npos);
  EXPECT_NE(error({{"level", "MEDIUM"}}).find("is not a value of"), std::string::npos);
  EXPECT_NE(error({{"raw", "\xe2\x82\xac"}}).find("code points 0-255"), std::string::npos);
  EXPECT_NE(error({{"tags", {"a", nullptr}}}).find("null item"), std::string::npos);
  EXPECT_NE(error({{"tags", "a"}}).find("needs an array"), std::string::npos);
  const ProtobufSchema f = must(R"(syntax = "proto3"; message F { optional float x = 1; })");
  auto big = protobuf_encode_row(f, json{{"x", 1e300}});
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("overflows a float"), std::string::npos);
  EXPECT_NE(error(json::array()).find("needs an object"), std::string::npos);
  const ProtobufSchema node = must(R"(syntax = "proto3"; message Node { Node next = 1; })");
  json deep = json::object();
  for (int i = 0; i < 70; ++i) deep = json{{"next", deep}};
  auto too_deep = protobuf_encode_row(node, deep);
  ASSERT_FALSE(too_deep.ok());
  EXPECT_NE(too_deep.status().message().find("nest deeper"), std::string::npos);
}

}  // namespace
}  // namespace strata::protocol::schema
