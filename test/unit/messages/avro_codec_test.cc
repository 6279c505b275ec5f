// Unit tests for protocol/schema/avro_codec.h: the spec's encoding examples byte for byte,
// random schemas with random values round-tripped against the values themselves (the model),
// and hostile input (truncation, trailing bytes, bad indexes, block counts, nesting).
#include "protocol/schema/avro_codec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace strata::protocol::schema {
namespace {

using json = nlohmann::json;

AvroSchema schema(const std::string& text) {
  auto s = AvroSchema::parse(text);
  EXPECT_TRUE(s.ok()) << text << ": " << s.status().to_string();
  return s.ok() ? std::move(s).value() : AvroSchema::parse(R"("null")").value();
}

std::string hex(const std::string& bytes) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += (out.empty() ? "" : " ");
    out += d[c >> 4];
    out += d[c & 15];
  }
  return out;
}

std::string encoded(const std::string& s, const json& v) {
  auto r = avro_encode(schema(s), v);
  EXPECT_TRUE(r.ok()) << s << " " << v.dump() << ": " << r.status().to_string();
  return r.ok() ? hex(*r) : "";
}

Result<json> decode(const std::string& s, const std::string& bytes) {
  return avro_decode(schema(s),
                     std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
}

std::string decode_error(const std::string& s, const std::string& bytes) {
  auto r = decode(s, bytes);
  EXPECT_FALSE(r.ok()) << s << " decoded " << r->dump();
  return r.ok() ? "" : r.status().message();
}

// A byte as the code point Avro's JSON mapping gives it, in UTF-8.
void append_byte(std::string& out, uint8_t b) {
  if (b < 0x80) {
    out += static_cast<char>(b);
  } else {
    out += static_cast<char>(0xC0 | (b >> 6));
    out += static_cast<char>(0x80 | (b & 0x3F));
  }
}

TEST(AvroCodec, TheSpecsExamples) {
  EXPECT_EQ(encoded(R"("long")", 0), "00");
  EXPECT_EQ(encoded(R"("long")", -1), "01");
  EXPECT_EQ(encoded(R"("long")", 1), "02");
  EXPECT_EQ(encoded(R"("long")", -64), "7f");
  EXPECT_EQ(encoded(R"("long")", 64), "80 01");
  EXPECT_EQ(encoded(R"("string")", "foo"), "06 66 6f 6f");
  EXPECT_EQ(encoded(R"({"type":"record","name":"test","fields":[{"name":"a","type":"long"},
                       {"name":"b","type":"string"}]})",
                    json{{"a", 27}, {"b", "foo"}}),
            "36 06 66 6f 6f");
  EXPECT_EQ(encoded(R"({"type":"array","items":"long"})", json::array({3, 27})), "04 06 36 00");
  EXPECT_EQ(encoded(R"(["null","string"])", nullptr), "00");
  EXPECT_EQ(encoded(R"(["null","string"])", "a"), "02 02 61");
  EXPECT_EQ(encoded(R"("double")", 1.0), "00 00 00 00 00 00 f0 3f");
  EXPECT_EQ(encoded(R"({"type":"fixed","name":"F","size":2})",
                    "\xc3\xbf"
                    "A"),
            "ff 41");
  EXPECT_EQ(encoded(R"("bytes")", "\xc2\x80"), "02 80");
  EXPECT_EQ(encoded(R"({"type":"map","values":"int"})", json{{"k", 2}}), "02 02 6b 04 00");
  // A block with a negative count carries its byte size; both forms decode alike.
  auto neg = decode(R"({"type":"array","items":"long"})", std::string("\x03\x04\x06\x36\x00", 5));
  ASSERT_TRUE(neg.ok()) << neg.status().to_string();
  EXPECT_EQ(*neg, json::array({3, 27}));
}

TEST(AvroCodec, RecordsTakeDefaultsAndUnionsTheFirstBranchThatFits) {
  const std::string s = R"({"type":"record","name":"Txn","fields":[
      {"name":"account","type":"string"},
      {"name":"amount","type":["null","double"],"default":null},
      {"name":"kind","type":{"type":"enum","name":"K","symbols":["DEBIT","CREDIT"]},"default":"DEBIT"},
      {"name":"count","type":"int","default":1}]})";
  auto bytes = avro_encode(schema(s), json{{"account", "a1"}, {"amount", 2.5}});
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  auto back = decode(s, *bytes);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(*back, (json{{"account", "a1"}, {"amount", 2.5}, {"kind", "DEBIT"}, {"count", 1}}));
  auto missing = avro_encode(schema(s), json{{"amount", 1}});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("field account: missing"), std::string::npos);
  auto wrong = avro_encode(schema(s), json{{"account", "a"}, {"kind", "REFUND"}});
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("not a symbol of enum K"), std::string::npos);
  EXPECT_FALSE(avro_encode(schema(R"("int")"), 1LL << 40).ok());
  EXPECT_FALSE(avro_encode(schema(R"(["null","long"])"), "x").ok());
}

TEST(AvroCodec, HostileInputIsRefusedNotFollowed) {
  const std::string rec = R"({"type":"record","name":"R","fields":[{"name":"n","type":"long"},
                             {"name":"s","type":"string"}]})";
  EXPECT_NE(decode_error(rec, "\x02").find("field s: truncated varint"), std::string::npos);
  EXPECT_NE(decode_error(rec, std::string("\x02\x08"
                                          "ab",
                                          4))
                .find("past the end"),
            std::string::npos);
  EXPECT_NE(decode_error(rec, std::string("\x02\x02"
                                          "ab",
                                          4))
                .find("1 bytes left"),
            std::string::npos);
  EXPECT_NE(decode_error(R"("string")", "\x04\xff\xfe").find("not UTF-8"), std::string::npos);
  EXPECT_NE(decode_error(R"("boolean")", "\x02").find("boolean byte 2"), std::string::npos);
  EXPECT_NE(
      decode_error(R"({"type":"enum","name":"E","symbols":["A"]})", "\x02").find("out of range"),
      std::string::npos);
  EXPECT_NE(decode_error(R"(["null","int"])", "\x04").find("branch 2 out of range"),
            std::string::npos);
  EXPECT_NE(decode_error(R"("int")", "\x80\x80\x80\x80\x20").find("int out of range"),
            std::string::npos);
  EXPECT_NE(decode_error(R"("long")", std::string(11, '\xff')).find("longer than 64 bits"),
            std::string::npos);
  double nan = std::nan("");
  EXPECT_NE(decode_error(R"("double")", std::string(reinterpret_cast<char*>(&nan), 8)).find("NaN"),
            std::string::npos);
  // 2^62 nulls announced by a few bytes: refused at once, not iterated.
  EXPECT_NE(
      decode_error(R"({"type":"array","items":"null"})", "\xfe\xff\xff\xff\xff\xff\xff\xff\x7f")
          .find("more values than the input can hold"),
      std::string::npos);
  // A recursive record nested past 64 levels.
  const std::string list =
      R"({"type":"record","name":"L","fields":[{"name":"next","type":["null","L"]}]})";
  EXPECT_NE(decode_error(list, std::string(100, '\x02') + '\0').find("deeper than 64"),
            std::string::npos);
  auto shallow = decode(list, std::string(10, '\x02') + '\0');
  ASSERT_TRUE(shallow.ok()) << shallow.status().to_string();
}

// Random schemas with random values of them: encode then decode gives the value back, and the
// decoder reads exactly the bytes the encoder wrote (trailing or missing bytes are errors).
TEST(AvroCodec, RandomSchemasRoundTripTheirValues) {
  std::mt19937_64 rng(20261204);
  int names = 0;
  auto str = [&rng] {
    std::string s;
    for (size_t n = rng() % 6; n > 0; --n) s += "aZ09x_"[rng() % 6];
    return s;
  };
  // Returns the schema JSON; `gen_value` makes a value of it.
  std::function<json(int, std::function<json()>&)> gen =
      [&](int depth, std::function<json()>& gen_value) -> json {
    const int pick = static_cast<int>(rng() % (depth > 3 ? 9 : 14));
    switch (pick) {
      case 0:
        gen_value = [] { return json(nullptr); };
        return "null";
      case 1:
        gen_value = [&rng] { return json(rng() % 2 == 0); };
        return "boolean";
      case 2:
        gen_value = [&rng] { return json(static_cast<int32_t>(rng())); };
        return "int";
      case 3:
        gen_value = [&rng] { return json(static_cast<int64_t>(rng())); };
        return "long";
      case 4:
        gen_value = [&rng] { return json(static_cast<double>(static_cast<int32_t>(rng())) / 8); };
        return "double";
      case 5:
        gen_value = [&rng] { return json(static_cast<double>(static_cast<int16_t>(rng())) / 4); };
        return "float";
      case 6:
        gen_value = [&str] { return json(str()); };
        return "string";
      case 7:
        gen_value = [&rng] {
          std::string b;
          for (size_t i = rng() % 5; i > 0; --i) append_byte(b, static_cast<uint8_t>(rng()));
          return json(b);
        };
        return "bytes";
      case 8: {
        const std::string name = std::string("E").append(std::to_string(names++));
        gen_value = [&rng] { return json(std::string(1, "ABC"[rng() % 3])); };
        return json{{"type", "enum"}, {"name", name}, {"symbols", {"A", "B", "C"}}};
      }
      case 9: {
        auto item = std::make_shared<std::function<json()>>();
        json items = gen(depth + 1, *item);
        gen_value = [&rng, item] {
          json a = json::array();
          for (size_t i = rng() % 4; i > 0; --i) a.push_back((*item)());
          return a;
        };
        return json{{"type", "array"}, {"items", items}};
      }
      case 10: {
        auto val = std::make_shared<std::function<json()>>();
        json values = gen(depth + 1, *val);
        gen_value = [&rng, &str, val] {
          json m = json::object();
          for (size_t i = rng() % 4; i > 0; --i) m[str()] = (*val)();
          return m;
        };
        return json{{"type", "map"}, {"values", values}};
      }
      case 11: {
        // A nullable union: Avro forbids two unnamed branches of one type, so null + one more.
        auto other = std::make_shared<std::function<json()>>();
        json branch = gen(depth + 1, *other);
        if (branch == "null" || branch.is_array()) {
          gen_value = [] { return json(nullptr); };
          return json::array({"null"});
        }
        gen_value = [&rng, other] { return rng() % 3 == 0 ? json(nullptr) : (*other)(); };
        return json::array({"null", branch});
      }
      default: {
        const std::string name = std::string("R").append(std::to_string(names++));
        json fields = json::array();
        auto gens = std::make_shared<std::vector<std::pair<std::string, std::function<json()>>>>();
        const size_t n = 1 + rng() % 4;
        for (size_t i = 0; i < n; ++i) {
          std::function<json()> g;
          json t = gen(depth + 1, g);
          const std::string field = std::string("f").append(std::to_string(i));
          fields.push_back(json{{"name", field}, {"type", t}});
          gens->emplace_back(field, std::move(g));
        }
        gen_value = [gens] {
          json o = json::object();
          for (auto& [k, g] : *gens) o[k] = g();
          return o;
        };
        return json{{"type", "record"}, {"name", name}, {"fields", fields}};
      }
    }
  };
  for (int round = 0; round < 300; ++round) {
    names = 0;
    std::function<json()> gen_value;
    const json s = gen(0, gen_value);
    AvroSchema parsed = schema(s.dump());
    for (int k = 0; k < 5; ++k) {
      const json v = gen_value();
      auto bytes = avro_encode(parsed, v);
      ASSERT_TRUE(bytes.ok()) << s.dump() << " " << v.dump() << ": " << bytes.status().to_string();
      auto back = avro_decode(
          parsed, std::span(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size()));
      ASSERT_TRUE(back.ok()) << s.dump() << " " << v.dump() << ": " << back.status().to_string();
      EXPECT_EQ(*back, v) << s.dump();
      if (!bytes->empty()) {
        EXPECT_FALSE(avro_decode(parsed, std::span(reinterpret_cast<const uint8_t*>(bytes->data()),
                                                   bytes->size() - 1))
                         .ok())
            << "the last byte is always needed";
        std::string longer = *bytes + "x";
        EXPECT_FALSE(avro_decode(parsed, std::span(reinterpret_cast<const uint8_t*>(longer.data()),
                                                   longer.size()))
                         .ok())
            << "a trailing byte is an error";
      }
    }
  }
}

}  // namespace
}  // namespace strata::protocol::schema
