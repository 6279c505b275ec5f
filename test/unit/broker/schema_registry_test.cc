// SchemaRegistry over an in-memory `_schemas` journal: a model test of registrations and deletes
// (ids global and stable, versions per subject, soft and permanent deletes with Confluent's error
// codes) with reloads from the journal after random steps — the state is the replay of the topic
// — plus examples of compatibility levels, modes and failed writes.
#include "broker/schema/schema_registry.h"

#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "broker/net/http_server.h"
#include "broker/schema/registry_access.h"
#include "broker/schema/registry_http.h"
#include "broker/schema/registry_parse.h"
#include "broker/security/acl.h"
#include "broker/security/security_services.h"

namespace strata::broker::schema {
namespace {

// `_schemas` partition 0 in memory. Appends complete on another thread, as the real journal's do
// (the registry waits for them while holding its write lock); `fail_next` fails one append.
class MemJournal : public group::GroupJournal {
 public:
  ~MemJournal() override {
    for (auto& t : threads_) t.join();
  }
  int32_t partitions() const override { return 1; }
  bool partitions_fixed() const override { return true; }
  size_t max_write_bytes() const override { return std::numeric_limits<size_t>::max(); }
  void append(int32_t, std::vector<group::JournalRecord> records, AppendDone done) override {
    protocol::ErrorCode e = protocol::ErrorCode::none;
    {
      std::lock_guard lk(mu_);
      if (hold_next) {  // still queued: written and answered only at release()
        hold_next = false;
        held_records_ = std::move(records);
        held_ = std::move(done);
        return;
      }
      if (fail_next) {
        fail_next = false;
        e = protocol::ErrorCode::not_coordinator;
      } else if (written_but_failed_next) {  // a cluster's commit timeout: the record stays
        written_but_failed_next = false;
        e = protocol::ErrorCode::coordinator_not_available;
        for (auto& r : records) log_.push_back(std::move(r));
      } else {
        for (auto& r : records) log_.push_back(std::move(r));
      }
    }
    threads_.emplace_back([done = std::move(done), e] { done(e, 0); });
  }
  Status replay(int32_t, const std::function<Status(const group::JournalRecord&)>& fn) override {
    std::lock_guard lk(mu_);
    for (const auto& r : log_) STRATA_RETURN_IF_ERROR(fn(r));
    return Status::Ok();
  }
  void run_async(std::function<void()> fn) override { fn(); }
  size_t size() {
    std::lock_guard lk(mu_);
    return log_.size();
  }
  void release() {
    {
      std::lock_guard lk(mu_);
      for (auto& r : held_records_) log_.push_back(std::move(r));
    }
    if (held_) held_(protocol::ErrorCode::none, 0);
  }
  bool fail_next = false;
  bool written_but_failed_next = false;
  bool hold_next = false;

 private:
  AppendDone held_;
  std::vector<group::JournalRecord> held_records_;
  std::mutex mu_;
  std::vector<group::JournalRecord> log_;
  std::vector<std::thread> threads_;
};

std::string record_schema(const std::string& name, int fields) {
  std::string s = R"({"type":"record","name":")" + name + R"(","fields":[)";
  for (int i = 0; i < fields; ++i) {
    if (i) s += ",";
    s += R"({"name":"f)" + std::to_string(i) + R"(","type":"int","default":0})";
  }
  return s + "]}";
}

RegisterRequest avro(const std::string& schema) {
  RegisterRequest r;
  r.schema = schema;
  return r;
}

TEST(SchemaRegistry, BackwardByDefaultForwardAndNoneOnRequest) {
  MemJournal j;
  SchemaRegistry reg(j);
  ASSERT_TRUE(reg.load().ok());
  const std::string v1 = R"({"type":"record","name":"U","fields":[{"name":"a","type":"int"}]})";
  const std::string v2_default =
      R"({"type":"record","name":"U","fields":[{"name":"a","type":"int"},)"
      R"({"name":"b","type":"string","default":"x"}]})";
  const std::string v2_required =
      R"({"type":"record","name":"U","fields":[{"name":"a","type":"int"},)"
      R"({"name":"c","type":"string"}]})";
  auto id1 = reg.register_schema("s", avro(v1));
  ASSERT_TRUE(id1.ok()) << id1.error.message;
  auto bad = reg.register_schema("s", avro(v2_required));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error.http_status, 409);
  EXPECT_NE(bad.error.message.find("c"), std::string::npos) << bad.error.message;
  auto id2 = reg.register_schema("s", avro(v2_default));
  ASSERT_TRUE(id2.ok()) << id2.error.message;
  EXPECT_NE(*id1.value, *id2.value);
  ASSERT_TRUE(reg.set_compatibility(std::string("s"), "NONE").ok());
  EXPECT_TRUE(reg.register_schema("s", avro(v2_required)).ok());
  auto level = reg.compatibility(std::string("s"), false);
  EXPECT_EQ(*level.value, Compatibility::none);
  EXPECT_EQ(reg.compatibility(std::string("t"), false).error.error_code, 40408);
  EXPECT_EQ(*reg.compatibility(std::string("t"), true).value, Compatibility::backward);
  EXPECT_EQ(reg.set_compatibility(std::nullopt, "BOGUS").error.error_code, 42203);
}

TEST(SchemaRegistry, ReadOnlyModeAndFailedWritesChangeNothing) {
  MemJournal j;
  SchemaRegistry reg(j);
  ASSERT_TRUE(reg.set_mode(std::nullopt, "READONLY").ok());
  EXPECT_EQ(reg.register_schema("s", avro(record_schema("A", 1))).error.error_code, 42205);
  ASSERT_TRUE(reg.set_mode(std::nullopt, "READWRITE").ok());
  j.fail_next = true;
  auto failed = reg.register_schema("s", avro(record_schema("A", 1)));
  EXPECT_EQ(failed.error.error_code, 50001);
  EXPECT_TRUE(reg.subjects(true).empty()) << "memory follows the topic: nothing was written";
  auto ok = reg.register_schema("s", avro(record_schema("A", 1)));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok.value, 1);
  EXPECT_EQ(reg.register_schema("s", avro("{\"type\":\"nope\"}")).error.error_code, 42201);
  RegisterRequest unknown_type = avro("syntax = \"proto3\"; message M {}");
  unknown_type.type = "THRIFT";
  EXPECT_EQ(reg.register_schema("s", unknown_type).error.error_code, 42201);
  RegisterRequest json_type = avro("{}");
  json_type.type = "JSON";
  auto other_type = reg.register_schema("s", json_type);
  EXPECT_EQ(other_type.error.error_code, 409) << "an AVRO subject under BACKWARD";
  EXPECT_NE(other_type.error.message.find("is of type AVRO"), std::string::npos);
}

RegisterRequest json_schema(const std::string& text) {
  RegisterRequest r;
  r.type = "JSON";
  r.schema = text;
  return r;
}

TEST(SchemaRegistry, JsonSchemasRegisterCheckCompatibilityAndReference) {
  MemJournal j;
  SchemaRegistry reg(j);
  const std::string v1 = R"({"type": "object", "properties": {"a": {"type": "integer"}}})";
  auto id1 = reg.register_schema("j", json_schema(v1));
  ASSERT_TRUE(id1.ok()) << id1.error.message;
  auto e = reg.schema_by_id(*id1.value);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e.value->type, "JSON");
  EXPECT_EQ(e.value->schema, R"({"type":"object","properties":{"a":{"type":"integer"}}})")
      << "compact, key order kept";
  // Making a property required is not backward compatible (an untyped new one would be).
  auto added = reg.register_schema(
      "j", json_schema(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{}},
                           "required":["a"]})"));
  EXPECT_FALSE(added.ok());
  EXPECT_EQ(added.error.error_code, 409);
  EXPECT_NE(added.error.message.find("REQUIRED_ATTRIBUTE_ADDED at #/required/a"), std::string::npos)
      << added.error.message;
  auto widened = reg.register_schema(
      "j", json_schema(R"({"type":"object","properties":{"a":{"type":"number"}}})"));
  ASSERT_TRUE(widened.ok()) << widened.error.message;
  auto narrowed = reg.register_schema(
      "j", json_schema(R"({"type":"object","properties":{"a":{"type":"integer","title":"A"}}})"));
  EXPECT_FALSE(narrowed.ok());
  EXPECT_EQ(narrowed.error.error_code, 409);
  EXPECT_NE(narrowed.error.message.find("TYPE_NARROWED at #/properties/a"), std::string::npos)
      << narrowed.error.message;
  auto again = reg.register_schema("j", json_schema(v1));
  ASSERT_TRUE(again.ok()) << "a live version's schema: its id, nothing checked";
  EXPECT_EQ(*again.value, *id1.value);
  EXPECT_EQ(reg.register_schema("bad", json_schema(R"({"type":"objekt"})")).error.error_code,
            42201);
  EXPECT_EQ(reg.register_schema("bad", json_schema(R"({"$ref":"other.json"})")).error.error_code,
            42201)
      << "an unresolved reference";
  // References: the referrer's $ref uses the reference's name.
  ASSERT_TRUE(reg.register_schema("addr", json_schema(R"({"type":"string","maxLength":64})")).ok());
  RegisterRequest referrer =
      json_schema(R"({"type":"object","properties":{"home":{"$ref":"addr.json"}}})");
  referrer.references.push_back({"addr.json", "addr", 1});
  auto rid = reg.register_schema("person", referrer);
  ASSERT_TRUE(rid.ok()) << rid.error.message;
  RegisterRequest avro_ref = referrer;
  avro_ref.references = {{"addr.json", "s-avro", 1}};
  ASSERT_TRUE(reg.register_schema("s-avro", avro(record_schema("A", 1))).ok());
  auto cross = reg.register_schema("person2", avro_ref);
  EXPECT_FALSE(cross.ok());
  EXPECT_EQ(cross.error.error_code, 42201) << "a reference of another type";
}

RegisterRequest protobuf(const std::string& text) {
  RegisterRequest r;
  r.type = "PROTOBUF";
  r.schema = text;
  return r;
}

TEST(SchemaRegistry, ProtobufSchemasRegisterLookUpCheckCompatibilityAndReference) {
  MemJournal j;
  SchemaRegistry reg(j);
  const std::string v1 = "syntax = \"proto3\";\npackage t;\nmessage Txn { int64 amount = 1; }";
  auto id1 = reg.register_schema("p", protobuf(v1));
  ASSERT_TRUE(id1.ok()) << id1.error.message;
  auto e = reg.schema_by_id(*id1.value);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e.value->type, "PROTOBUF");
  EXPECT_NE(e.value->schema.find("message Txn {"), std::string::npos) << e.value->schema;
  // The same file formatted differently is the same schema.
  auto again = reg.register_schema("p", protobuf("syntax=\"proto3\"; package t; message Txn {"
                                                 " int64 amount = 1; } // v1"));
  ASSERT_TRUE(again.ok()) << again.error.message;
  EXPECT_EQ(*again.value, *id1.value);
  // Confluent's rules: a new field and a widened varint are fine, a new scalar kind is not.
  auto v2 = reg.register_schema(
      "p", protobuf("syntax = \"proto3\"; package t; message Txn { int64 amount = 1;"
                    " string note = 2; }"));
  ASSERT_TRUE(v2.ok()) << v2.error.message;
  auto bad = reg.register_schema(
      "p", protobuf("syntax = \"proto3\"; package t; message Txn { double amount = 1;"
                    " string note = 2; }"));
  EXPECT_EQ(bad.error.http_status, 409);
  EXPECT_NE(bad.error.message.find("FIELD_SCALAR_KIND_CHANGED at #/Txn/1"), std::string::npos)
      << bad.error.message;
  EXPECT_EQ(reg.register_schema("q", protobuf("message {")).error.error_code, 42201);
  // An import is a reference by its path.
  ASSERT_TRUE(reg.register_schema("money", protobuf("syntax = \"proto3\"; package m;"
                                                    " message Money { int64 cents = 1; }"))
                  .ok());
  RegisterRequest referrer = protobuf(
      "syntax = \"proto3\"; import \"m/money.proto\"; message Pay { m.Money amount = 1; }");
  EXPECT_EQ(reg.register_schema("pay", referrer).error.error_code, 42201) << "unresolved import";
  referrer.references.push_back({"m/money.proto", "money", 1});
  auto rid = reg.register_schema("pay", referrer);
  ASSERT_TRUE(rid.ok()) << rid.error.message;
  auto parsed = reg.parsed_schema(*rid.value);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_TRUE((*parsed)->protobuf.has_value());
}

TEST(SchemaRegistry, AnAppendWithoutAnswerMakesTheNextWriteReadTheTopicFirst) {
  MemJournal j;
  SchemaRegistry reg(j, /*write_wait_ms=*/50);
  j.hold_next = true;  // the journal is slow: the record is still queued when the wait ends
  auto lost = reg.register_schema("s", avro(record_schema("A", 1)));
  EXPECT_EQ(lost.error.error_code, 50002);
  EXPECT_TRUE(reg.subjects(false).empty()) << "memory waits for the answer";
  auto refused = reg.register_schema("t", avro(record_schema("B", 1)));
  EXPECT_EQ(refused.error.error_code, 50002)
      << "while the earlier append may still land, the topic does not tell the next free id";
  EXPECT_EQ(j.size(), 0u);
  j.release();  // the record lands, with id 1
  auto next = reg.register_schema("t", avro(record_schema("B", 1)));
  ASSERT_TRUE(next.ok()) << next.error.message;
  EXPECT_EQ(*next.value, 2) << "id 1 is in the topic: never handed out twice";
  EXPECT_EQ(reg.subjects(false), (std::vector<std::string>{"s", "t"}));
}

TEST(SchemaRegistry, AFailedAnswerForAWrittenRecordMakesTheNextWriteReadTheTopicFirst) {
  MemJournal j;
  SchemaRegistry reg(j);
  j.written_but_failed_next = true;
  auto failed = reg.register_schema("s", avro(record_schema("A", 1)));
  EXPECT_EQ(failed.error.error_code, 50001);
  EXPECT_TRUE(reg.subjects(false).empty());
  auto next = reg.register_schema("t", avro(record_schema("B", 1)));
  ASSERT_TRUE(next.ok()) << next.error.message;
  EXPECT_EQ(*next.value, 2) << "id 1 is in the topic: never handed out twice";
}

// A broker that is not the writer keeps a copy: rebuilt from a prefix of the topic (its replica's
// committed records) it answers exactly that prefix, from all of it what the writer answers; a
// write on it (the broker made the writer) reads the whole topic first, so ids stay unique.
TEST(SchemaRegistry, ACopyRebuiltFromAPrefixAnswersThatPrefixAndWritesReadTheTopicFirst) {
  MemJournal j;
  SchemaRegistry writer(j);
  ASSERT_TRUE(writer.register_schema("s", avro(record_schema("A", 1))).ok());
  ASSERT_TRUE(writer.register_schema("t", avro(record_schema("B", 1))).ok());
  ASSERT_TRUE(writer.set_compatibility("s", "FORWARD").ok());
  std::vector<group::JournalRecord> records;
  ASSERT_TRUE(j.replay(0, [&](const group::JournalRecord& r) {
                 records.push_back(r);
                 return Status::Ok();
               }).ok());
  ASSERT_EQ(records.size(), 3u);
  auto prefix = [&](size_t n) {
    return [&records, n](const auto& apply) -> Status {
      for (size_t i = 0; i < n; ++i) STRATA_RETURN_IF_ERROR(apply(records[i]));
      return Status::Ok();
    };
  };
  SchemaRegistry copy(j);
  ASSERT_TRUE(copy.rebuild(prefix(1)).ok());
  EXPECT_EQ(copy.subjects(false), std::vector<std::string>{"s"});
  EXPECT_FALSE(copy.schema_by_id(2).ok());
  EXPECT_EQ(copy.compatibility("s", true).value, Compatibility::backward);
  ASSERT_TRUE(copy.rebuild(prefix(3)).ok());
  EXPECT_EQ(copy.subjects(false), writer.subjects(false));
  for (int32_t id : {1, 2}) {
    ASSERT_TRUE(copy.schema_by_id(id).ok()) << id;
    EXPECT_EQ(copy.schema_by_id(id).value->schema, writer.schema_by_id(id).value->schema);
  }
  EXPECT_EQ(copy.compatibility("s", false).value, Compatibility::forward);
  // Made the writer with only a prefix in memory: the topic is read before the id is chosen.
  ASSERT_TRUE(copy.rebuild(prefix(1)).ok());
  auto id = copy.register_schema("u", avro(record_schema("C", 1)));
  ASSERT_TRUE(id.ok()) << id.error.message;
  EXPECT_EQ(*id.value, 3);
  EXPECT_EQ(copy.subjects(false), (std::vector<std::string>{"s", "t", "u"}));
}

// The model: per subject, version -> (schema index, soft-deleted); per schema index, its id while
// some version refers to it; the largest id handed out (ids are never handed out twice).
struct Model {
  std::map<std::string, std::map<int32_t, std::pair<int, bool>>> subjects;
  std::map<int, int32_t> ids;
  int32_t max_id = 0;
};

class SchemaRegistryModel : public ::testing::TestWithParam<int> {};

TEST_P(SchemaRegistryModel, ReadsEqualTheModelAndTheReplayOfTheTopic) {
  std::mt19937 rng(static_cast<uint32_t>(GetParam()));
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  MemJournal j;
  auto reg = std::make_unique<SchemaRegistry>(j);
  ASSERT_TRUE(reg->load().ok());
  ASSERT_TRUE(reg->set_compatibility(std::nullopt, "NONE").ok());  // levels: examples above
  std::vector<std::string> pool;
  for (int i = 0; i < 6; ++i) pool.push_back(record_schema("R" + std::to_string(i % 3), 1 + i));
  const std::vector<std::string> names = {"a-value", "b-value", "c-key"};
  Model m;
  int registered = 0, soft = 0, hard = 0, reloads = 0, refused = 0;
  for (int step = 0; step < 300; ++step) {
    const std::string& s = names[pick(3)];
    auto& versions = m.subjects[s];
    const int op = pick(10);
    if (op < 4) {
      const int k = pick(static_cast<int>(pool.size()));
      auto got = reg->register_schema(s, avro(pool[k]));
      ASSERT_TRUE(got.ok()) << got.error.message;
      std::optional<int32_t> live;  // the subject's live version with this schema
      int32_t max_version = 0;
      for (const auto& [v, e] : versions) {
        max_version = std::max(max_version, v);
        if (e.first == k && !e.second) live = v;
      }
      if (!m.ids.count(k)) m.ids[k] = ++m.max_id;
      ASSERT_EQ(*got.value, m.ids[k]) << "step " << step;
      if (!live) versions[max_version + 1] = {k, false};
      ++registered;
    } else if (op < 7 && !versions.empty()) {  // one version, soft or permanent
      auto it = std::next(versions.begin(), pick(static_cast<int>(versions.size())));
      const bool permanent = pick(2) == 0;
      auto got = reg->delete_version(s, std::to_string(it->first), permanent);
      if (permanent && !it->second.second) {
        ASSERT_EQ(got.error.error_code, 40407) << "step " << step;
        ++refused;
      } else if (!permanent && it->second.second) {
        ASSERT_EQ(got.error.error_code, 40406) << "step " << step;
        ++refused;
      } else {
        ASSERT_TRUE(got.ok()) << "step " << step << ": " << got.error.message;
        if (permanent) {
          versions.erase(it);
          ++hard;
        } else {
          it->second.second = true;
          ++soft;
        }
      }
    } else if (op < 9) {  // the whole subject
      const bool permanent = pick(2) == 0;
      bool any_live = false;
      for (const auto& [v, e] : versions) any_live |= !e.second;
      auto got = reg->delete_subject(s, permanent);
      if (versions.empty()) {
        ASSERT_EQ(got.error.error_code, 40401) << "step " << step;
      } else if (permanent == any_live) {
        ASSERT_EQ(got.error.error_code, permanent ? 40405 : 40404) << "step " << step;
        ++refused;
      } else {
        ASSERT_TRUE(got.ok()) << got.error.message;
        if (permanent) {
          versions.clear();
        } else {
          for (auto& [v, e] : versions) e.second = true;
        }
      }
    } else {  // a restart: the state is the replay of `_schemas`
      reg = std::make_unique<SchemaRegistry>(j);
      ASSERT_TRUE(reg->load().ok());
      ASSERT_EQ(reg->skipped_records(), 0u);
      // New ids continue after the largest one in the topic (this one is never compacted).
      ++reloads;
    }
    // A schema no version refers to any more (permanently deleted everywhere) has no id: the
    // same text registered again is a new schema.
    for (auto it = m.ids.begin(); it != m.ids.end();) {
      bool used = false;
      for (const auto& [name, vs] : m.subjects) {
        for (const auto& [v, e] : vs) used |= e.first == it->first;
      }
      it = used ? std::next(it) : m.ids.erase(it);
    }
    // Every subject's versions (live and all), and each live version's schema, equal the model.
    for (const auto& name : names) {
      std::vector<int32_t> all, live;
      for (const auto& [v, e] : m.subjects[name]) {
        all.push_back(v);
        if (!e.second) live.push_back(v);
      }
      auto got_all = reg->versions(name, true);
      auto got_live = reg->versions(name, false);
      ASSERT_EQ(got_all.ok() ? *got_all.value : std::vector<int32_t>(), all) << "step " << step;
      ASSERT_EQ(got_live.ok() ? *got_live.value : std::vector<int32_t>(), live) << "step " << step;
      for (int32_t v : live) {
        auto got = reg->version(name, std::to_string(v));
        ASSERT_TRUE(got.ok());
        const int k = m.subjects[name][v].first;
        ASSERT_EQ(got.value->first.id, m.ids[k]);
        auto by_id = reg->schema_by_id(m.ids[k]);
        ASSERT_TRUE(by_id.ok());
        ASSERT_EQ(by_id.value->schema, got.value->second.schema);
      }
    }
  }
  EXPECT_GT(registered, 0);
  EXPECT_GT(soft, 0);
  EXPECT_GT(hard, 0);
  EXPECT_GT(reloads, 0);
  EXPECT_GT(refused, 0);
}

INSTANTIATE_TEST_SUITE_P(Seeds, SchemaRegistryModel, ::testing::Range(1, 9));

// Found by the fuzzer: a subject that is not UTF-8 went into a JSON record key, whose printer
// throws. Paths are checked as they are decoded.
TEST(SchemaRegistryHttp, APathThatIsNotUtf8IsNotFoundAndWritesNothing) {
  MemJournal j;
  SchemaRegistry reg(j);
  for (const char* path : {"/subjects/s%FF%FF", "/subjects/\xc3", "/subjects/%ED%A0%80/versions",
                           "/subjects/%C0%AF"}) {
    HttpRequest req;
    req.method = "DELETE";
    req.path = path;
    EXPECT_EQ(handle_registry_request(reg, req).status, 404) << path;
  }
  HttpRequest ok;
  ok.method = "POST";
  ok.path = "/subjects/%C3%A9t%C3%A9/versions";  // "été"
  ok.body = R"({"schema": "\"string\""})";
  const HttpResponse r = handle_registry_request(reg, ok);
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(reg.subjects(false), (std::vector<std::string>{"\xc3\xa9t\xc3\xa9"}));
  EXPECT_EQ(j.size(), 1u);
}

TEST(SchemaRegistryListener, ParsesHttpAndHttpsAddresses) {
  auto a = parse_registry_listener("http://127.0.0.1:8081");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 8081);
  EXPECT_FALSE(a->https);
  auto b = parse_registry_listener("127.0.0.1:0");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->port, 0);
  EXPECT_FALSE(b->https);
  auto c = parse_registry_listener("https://[::1]:8443/");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->https);
  EXPECT_EQ(c->host, "::1");
  EXPECT_EQ(c->port, 8443);
  for (const char* bad : {"https://nohost", "http://nohost", "http://h:99999", "h:x"}) {
    EXPECT_FALSE(parse_registry_listener(bad).ok()) << bad;
  }
}

TEST(RegistryAccess, ASubjectBelongsToItsTopicByConfluentsNamingStrategies) {
  EXPECT_EQ(subject_topic("orders-value"), "orders");
  EXPECT_EQ(subject_topic("my-orders-key"), "my-orders");
  EXPECT_EQ(subject_topic("account_state-com.example.Txn"), "account_state");  // TopicRecordName
  EXPECT_EQ(subject_topic("my-topic-Txn"), "my-topic");
  EXPECT_EQ(subject_topic("com.example.Txn"), "com.example.Txn");  // RecordNameStrategy
  EXPECT_EQ(subject_topic("-value"), "-value");
  EXPECT_EQ(subject_topic("-x"), "-x");
}

// ACLs with Kafka's rules (AclStore) behind the Authorizer interface.
class StoreAuthorizer : public security::Authorizer {
 public:
  explicit StoreAuthorizer(security::AuthorizerConfig c) : store(std::move(c)) {}
  bool authorize(const std::string& principal, const std::string& host, security::AclOperation op,
                 security::ResourceType type, const std::string& name) const override {
    return store.authorize(principal, host, op, type, name);
  }
  bool authorize_any(const std::string& principal, const std::string& host,
                     security::AclOperation op, security::ResourceType type) const override {
    return store.authorize_any(principal, host, op, type);
  }
  std::vector<security::AclBinding> acls(const security::AclFilter& f) const override {
    return store.list(f);
  }
  Status create(const std::vector<security::AclBinding>& b) override {
    store.add(b);
    return Status::Ok();
  }
  Result<std::vector<security::AclBinding>> remove(const security::AclFilter& f) override {
    return store.remove(f);
  }
  security::AclStore store;
};

security::AclBinding allow(const std::string& user, security::AclOperation op,
                           const std::string& topic) {
  security::AclBinding b;
  b.resource_name = topic;
  b.principal = "User:" + user;
  b.operation = op;
  return b;
}

HttpResponse call(const HttpHandler& h, const std::string& user, const std::string& method,
                  const std::string& path, const std::string& body = {}) {
  HttpRequest req;
  req.method = method;
  req.path = path;
  req.body = body;
  req.user = user;
  req.peer = "127.0.0.1";
  return h(req);
}

TEST(RegistryAccess, EachRouteNeedsItsOperationOnTheSubjectsTopicAndListingsLeaveOutTheRest) {
  using security::AclOperation;
  MemJournal j;
  SchemaRegistry reg(j);
  ASSERT_TRUE(reg.load().ok());
  StoreAuthorizer authz({{"User:admin"}, false});
  authz.store.add({allow("producer", AclOperation::write, "orders"),
                   allow("reader", AclOperation::read, "orders"),
                   allow("reader", AclOperation::read, "payments"),
                   allow("janitor", AclOperation::del, "orders"),
                   allow("tuner", AclOperation::alter_configs, "orders")});
  HttpHandler h = authorized_registry(
      [&reg](const HttpRequest& req) { return handle_registry_request(reg, req); }, &authz);
  const std::string avro = R"({"schema": "\"string\""})";
  const std::string avro2 = R"({"schema": "\"int\""})";
  auto status = [&](const std::string& user, const std::string& method, const std::string& path,
                    const std::string& body = {}) {
    return call(h, user, method, path, body).status;
  };
  // Registering needs WRITE on the topic: the producer, not the reader; nobody for another topic.
  auto denied = call(h, "reader", "POST", "/subjects/orders-value/versions", avro);
  EXPECT_EQ(denied.status, 403);
  EXPECT_NE(denied.body.find("40301"), std::string::npos) << denied.body;
  EXPECT_TRUE(reg.subjects(false).empty()) << "a denied write wrote nothing";
  EXPECT_EQ(status("producer", "POST", "/subjects/orders-value/versions", avro), 200);
  EXPECT_EQ(status("producer", "POST", "/subjects/payments-value/versions", avro), 403);
  EXPECT_EQ(status("admin", "POST", "/subjects/payments-value/versions", avro), 200);  // super
  EXPECT_EQ(status("admin", "POST", "/subjects/secret-value/versions", avro2), 200);
  // Reads need DESCRIBE (implied by READ and WRITE).
  EXPECT_EQ(status("reader", "GET", "/subjects/orders-value/versions/latest"), 200);
  EXPECT_EQ(status("producer", "POST", "/subjects/orders-value", avro), 200);  // lookup
  EXPECT_EQ(status("reader", "GET", "/subjects/secret-value/versions"), 403);
  EXPECT_EQ(status("", "GET", "/subjects/orders-value/versions"), 403);  // User:ANONYMOUS
  EXPECT_EQ(status("reader", "POST", "/compatibility/subjects/orders-value/versions/latest", avro2),
            200);
  EXPECT_EQ(
      status("janitor", "POST", "/compatibility/subjects/secret-value/versions/latest", avro2),
      403);
  // Listings leave out what the principal may not describe.
  EXPECT_EQ(call(h, "reader", "GET", "/subjects").body, R"(["orders-value","payments-value"])");
  EXPECT_EQ(call(h, "producer", "GET", "/subjects").body, R"(["orders-value"])");
  EXPECT_EQ(call(h, "nobody", "GET", "/subjects").body, "[]");
  EXPECT_EQ(call(h, "admin", "GET", "/subjects").body,
            R"(["orders-value","payments-value","secret-value"])");
  // An id: readable when the principal may describe a subject using it. Ids 1 ("string", in
  // orders-value and payments-value) and 2 ("int", only in secret-value).
  EXPECT_EQ(status("producer", "GET", "/schemas/ids/1"), 200);
  EXPECT_EQ(status("producer", "GET", "/schemas/ids/2"), 403);
  EXPECT_EQ(status("producer", "GET", "/schemas/ids/2/schema"), 403);
  EXPECT_EQ(status("admin", "GET", "/schemas/ids/2"), 200);
  EXPECT_EQ(status("producer", "GET", "/schemas/ids/99"), 404) << "an unknown id stays a 404";
  EXPECT_EQ(call(h, "producer", "GET", "/schemas/ids/1/subjects").body, R"(["orders-value"])");
  EXPECT_EQ(call(h, "reader", "GET", "/schemas/ids/1/versions").body,
            R"([{"subject":"orders-value","version":1},{"subject":"payments-value","version":1}])");
  EXPECT_EQ(status("nobody", "GET", "/schemas/types"), 200);
  // Config and mode: a subject's are read with DESCRIBE or DESCRIBE_CONFIGS on its topic and
  // changed with ALTER_CONFIGS; the global ones are read by anyone and changed only with
  // ALTER_CONFIGS on the cluster.
  const std::string full = R"({"compatibility": "FULL"})";
  EXPECT_EQ(status("reader", "PUT", "/config/orders-value", full), 403);
  EXPECT_EQ(status("tuner", "PUT", "/config/orders-value", full), 200);
  EXPECT_EQ(status("tuner", "GET", "/config/orders-value"), 200);  // DESCRIBE_CONFIGS, implied
  EXPECT_EQ(status("reader", "GET", "/config/orders-value"), 200);
  EXPECT_EQ(status("producer", "GET", "/mode/orders-value"), 200);
  EXPECT_EQ(status("janitor", "GET", "/config/secret-value"), 403);
  EXPECT_EQ(status("tuner", "PUT", "/config", full), 403);
  EXPECT_EQ(status("nobody", "GET", "/config"), 200);
  EXPECT_EQ(status("nobody", "GET", "/mode"), 200);
  EXPECT_EQ(status("tuner", "PUT", "/mode", R"({"mode": "READONLY"})"), 403);
  EXPECT_EQ(status("admin", "PUT", "/config", full), 200);
  // Deleting needs DELETE.
  EXPECT_EQ(status("producer", "DELETE", "/subjects/orders-value/versions/1"), 403);
  EXPECT_EQ(status("janitor", "DELETE", "/subjects/orders-value/versions/1"), 200);
  EXPECT_EQ(status("janitor", "DELETE", "/subjects/payments-value"), 403);
  EXPECT_EQ(reg.subjects(false), (std::vector<std::string>{"payments-value", "secret-value"}));
  // A soft-deleted subject's id is still readable by those who may describe it (deserializers
  // meet old ids), and by super users.
  EXPECT_EQ(status("admin", "DELETE", "/subjects/secret-value"), 200);
  EXPECT_EQ(status("admin", "GET", "/schemas/ids/2"), 200);
  EXPECT_EQ(status("producer", "GET", "/schemas/ids/2"), 403);
  // The brokers' own principal describes every subject (and writes nothing); CLUSTER_ACTION
  // alone is no such grant (with allow.everyone.if.no.acl.found everyone would have it).
  HttpHandler with_broker = authorized_registry(
      [&reg](const HttpRequest& req) { return handle_registry_request(reg, req); }, &authz, "",
      "User:broker");
  EXPECT_EQ(call(with_broker, "broker", "GET", "/schemas/ids/2").status, 200);
  EXPECT_EQ(call(with_broker, "broker", "GET", "/subjects/payments-value/versions/latest").status,
            200);
  EXPECT_EQ(call(with_broker, "broker", "POST", "/subjects/payments-value/versions", avro2).status,
            403)
      << "reads only";
  security::AclBinding cluster_action;
  cluster_action.resource_type = security::ResourceType::cluster;
  cluster_action.resource_name = security::kClusterName;
  cluster_action.principal = "User:producer";
  cluster_action.operation = AclOperation::cluster_action;
  authz.store.add({cluster_action});
  EXPECT_EQ(call(with_broker, "producer", "GET", "/schemas/ids/2").status, 403);
  // No authorizer: the handler is the registry's own.
  HttpHandler open = authorized_registry(
      [&reg](const HttpRequest& req) { return handle_registry_request(reg, req); }, nullptr);
  EXPECT_EQ(call(open, "", "GET", "/subjects/payments-value/versions").status, 200);
}

// The id check asks the inner handler for the id's subjects: when that fails for another reason
// than "no such id" (a cluster's writer out of reach), its error is the answer, never the schema.
TEST(RegistryAccess, AnIdIsNeverServedUncheckedWhenItsSubjectsCannotBeRead) {
  StoreAuthorizer authz({{}, false});
  int served = 0;
  HttpHandler h = authorized_registry(
      [&served](const HttpRequest& req) {
        if (req.path.ends_with("/subjects")) {
          return registry_error_response(500, 50003, "writer unreachable");
        }
        ++served;
        HttpResponse r;
        r.body = R"({"schema": "\"string\""})";
        return r;
      },
      &authz);
  auto r = call(h, "anyone", "GET", "/schemas/ids/1");
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(served, 0);
}

// A forwarded request is checked with its client's address when the forwarding broker vouches
// for it with the shared key; a header without the key's MAC (or for another request) is ignored.
TEST(RegistryAccess, ForwardedRequestsAreCheckedWithTheClientsAddressTheKeyVouchesFor) {
  using security::AclOperation;
  StoreAuthorizer authz({{}, false});
  security::AclBinding b = allow("producer", AclOperation::write, "orders");
  b.host = "10.0.0.7";
  authz.store.add({b});
  int served = 0;
  const std::string key = forward_key("inter-broker-secret");
  ASSERT_FALSE(key.empty());
  EXPECT_EQ(forward_key(""), "");
  HttpHandler h = authorized_registry(
      [&served](const HttpRequest&) {
        ++served;
        return HttpResponse{};
      },
      &authz, key);
  HttpRequest client;  // as the first broker received it
  client.method = "POST";
  client.path = "/subjects/orders-value/versions";
  client.body = R"({"schema": "\"string\""})";
  client.user = "producer";
  client.peer = "10.0.0.7";
  client.headers.emplace_back("authorization", "Basic cHJvZHVjZXI6cHc=");
  EXPECT_EQ(h(client).status, 200);
  HttpRequest forwarded = client;  // as the writer receives it from 10.0.0.2
  forwarded.peer = "10.0.0.2";
  EXPECT_EQ(h(forwarded).status, 403) << "no vouching header: the forwarding broker's address";
  forwarded.headers.emplace_back(kForwardedClientHeader, vouch_for_client(key, client));
  EXPECT_EQ(vouched_client_host(key, forwarded), std::optional<std::string>("10.0.0.7"));
  EXPECT_EQ(h(forwarded).status, 200);
  HttpRequest forged = forwarded;  // another key's MAC
  forged.headers.back().second = vouch_for_client(forward_key("guess"), client);
  EXPECT_EQ(h(forged).status, 403);
  HttpRequest replayed = forwarded;  // the header of one request on another
  replayed.body = R"({"schema": "\"int\""})";
  EXPECT_EQ(h(replayed).status, 403);
  EXPECT_EQ(vouched_client_host("", forwarded), std::nullopt);
  EXPECT_EQ(served, 2);
}

}  // namespace
}  // namespace strata::broker::schema
