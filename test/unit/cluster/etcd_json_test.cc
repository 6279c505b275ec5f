// etcd's gateway JSON: base64, int64-as-string fields, omitted defaults, error codes, and the
// watch stream's framing split at arbitrary byte boundaries.
#include "broker/cluster/etcd_json.h"

#include <gtest/gtest.h>

#include <random>

namespace strata::broker::cluster::etcd_json {
namespace {

TEST(EtcdJson, Base64RoundTripsEveryLength) {
  std::mt19937 rng(7);
  for (size_t n = 0; n < 40; ++n) {
    std::string bytes(n, '\0');
    for (auto& c : bytes) c = static_cast<char>(rng());
    const std::string text = base64_encode(bytes);
    EXPECT_EQ(text.size() % 4, 0u);
    auto back = base64_decode(text);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, bytes) << n;
  }
  EXPECT_EQ(base64_encode("a"), "YQ==");
  EXPECT_FALSE(base64_decode("YQ=").ok());
  EXPECT_FALSE(base64_decode("Y!==").ok());
}

TEST(EtcdJson, PrefixEnd) {
  EXPECT_EQ(prefix_end("/a/"), "/a0");
  EXPECT_EQ(prefix_end(std::string("a\xff", 2)), "b");
  EXPECT_EQ(prefix_end(std::string("\xff\xff", 2)), std::string(1, '\0'));
}

TEST(EtcdJson, IntFieldsAreStringsNumbersOrAbsent) {
  json j = {{"a", "123"}, {"b", 45}, {"c", "x1"}};
  EXPECT_EQ(int_field(j, "a"), 123);
  EXPECT_EQ(int_field(j, "b"), 45);
  EXPECT_EQ(int_field(j, "c"), 0);
  EXPECT_EQ(int_field(j, "missing"), 0);
}

TEST(EtcdJson, RangeAnswerWithOmittedDefaults) {
  json answer = json::parse(R"({"header":{"revision":"9"},"kvs":[
      {"key":"YQ==","create_revision":"2","mod_revision":"8","version":"3","value":"MQ=="},
      {"key":"Yg==","create_revision":"4","mod_revision":"4","version":"1","lease":"77"}]})");
  auto r = decode_range(answer);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->revision, 9);
  ASSERT_EQ(r->kvs.size(), 2u);
  EXPECT_EQ(r->kvs[0].key, "a");
  EXPECT_EQ(r->kvs[0].value, "1");
  EXPECT_EQ(r->kvs[0].version, 3);
  EXPECT_EQ(r->kvs[0].lease, 0);
  EXPECT_EQ(r->kvs[1].value, "");  // empty value is omitted
  EXPECT_EQ(r->kvs[1].lease, 77);
  EXPECT_FALSE(decode_range(json::parse(R"({"kvs":[{"key":"%%%%"}]})")).ok());
}

TEST(EtcdJson, TxnRequestAndAnswer) {
  json req = txn_request({Compare::absent("k")}, {TxnOp::put("k", "v", 5)}, {TxnOp::get("k")});
  EXPECT_EQ(req["compare"][0]["target"], "MOD");
  EXPECT_EQ(req["compare"][0]["result"], "EQUAL");
  EXPECT_EQ(req["compare"][0]["mod_revision"], "0");
  EXPECT_EQ(req["success"][0]["request_put"]["lease"], "5");
  EXPECT_EQ(req["failure"][0]["request_range"]["key"], "aw==");
  auto t = decode_txn(json::parse(
      R"({"header":{"revision":"5"},"responses":[{"response_range":{"header":{"revision":"5"},
          "kvs":[{"key":"aw==","value":"dg==","mod_revision":"4","version":"1"}],"count":"1"}}]})"));
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(t->succeeded);  // "succeeded": false is omitted
  ASSERT_EQ(t->ranges.size(), 1u);
  EXPECT_EQ(t->ranges[0].kvs[0].value, "v");
}

TEST(EtcdJson, ErrorCodes) {
  EXPECT_TRUE(error_of(json::parse(R"({"header":{}})")).ok());
  EXPECT_EQ(error_of(json::parse(R"({"error":"lease not found","code":5})")).code(),
            Errc::not_found);
  EXPECT_EQ(error_of(json::parse(R"({"error":"compacted","code":11})")).code(), Errc::out_of_range);
  EXPECT_EQ(error_of(json::parse(R"({"error":"x","code":13})")).code(), Errc::io_error);
  EXPECT_TRUE(is_unavailable(json::parse(R"({"error":"no leader","code":14})")));
  EXPECT_FALSE(is_unavailable(json::parse(R"({"error":"x","code":5})")));
}

TEST(EtcdJson, WatchMessages) {
  auto created =
      decode_watch_message(json::parse(R"({"result":{"header":{"revision":"3"},"created":true}})"));
  ASSERT_TRUE(created.ok());
  EXPECT_TRUE(created->created);
  EXPECT_EQ(created->revision, 3);
  auto events = decode_watch_message(json::parse(
      R"({"result":{"header":{"revision":"4"},"events":[{"kv":{"key":"YQ==","mod_revision":"3",
          "version":"2","value":"Mg=="}},{"type":"DELETE","kv":{"key":"YQ==","mod_revision":"4"}}]}})"));
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->events.size(), 2u);
  EXPECT_EQ(events->events[0].type, WatchEvent::Type::put);
  EXPECT_EQ(events->events[0].kv.value, "2");
  EXPECT_EQ(events->events[1].type, WatchEvent::Type::del);
  auto compacted = decode_watch_message(
      json::parse(R"({"result":{"header":{},"canceled":true,"compact_revision":"3"}})"));
  ASSERT_TRUE(compacted.ok());
  EXPECT_TRUE(compacted->canceled);
  EXPECT_EQ(compacted->compact_revision, 3);
  EXPECT_FALSE(decode_watch_message(json::parse(R"({"nothing":1})")).ok());
}

TEST(EtcdJson, SplitterFindsObjectsAcrossAnyBoundary) {
  const std::string a = R"({"result":{"x":"br{ace}s \" and \\ in strings"}})";
  const std::string b = R"({"result":{"events":[{"kv":{}}]}})";
  const std::string stream = a + "\n" + b + "\n";
  for (size_t cut1 = 0; cut1 <= stream.size(); ++cut1) {
    for (size_t cut2 = cut1; cut2 <= stream.size(); cut2 += 7) {
      ObjectSplitter s;
      std::vector<std::string> got;
      for (auto piece :
           {stream.substr(0, cut1), stream.substr(cut1, cut2 - cut1), stream.substr(cut2)}) {
        for (auto& o : s.feed(piece)) got.push_back(o);
      }
      ASSERT_EQ(got.size(), 2u) << cut1 << "," << cut2;
      EXPECT_EQ(got[0], a);
      EXPECT_EQ(got[1], b);
      EXPECT_EQ(s.pending_bytes(), 0u);
    }
  }
}

}  // namespace
}  // namespace strata::broker::cluster::etcd_json
