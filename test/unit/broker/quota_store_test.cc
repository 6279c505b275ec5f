// QuotaStore: Kafka's validation of AlterClientQuotas, durability across reopen, validate_only,
// DescribeClientQuotas filter semantics (exact / default / any, strict) and resolution order.
#include "broker/quota/quota_store.h"

#include <gtest/gtest.h>

#include "storage/env.h"
#include "storage/file_util.h"
#include "test/unit/storage/test_util.h"

namespace strata::broker::quota {
namespace {

using storage::testing::TempDir;

std::unique_ptr<QuotaStore> open_store(const TempDir& dir) {
  auto s = QuotaStore::open(storage::default_env(), dir.path());
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return s.ok() ? std::move(*s) : nullptr;
}

QuotaAlteration alt(QuotaEntity e, std::vector<std::pair<std::string, std::optional<double>>> ops) {
  return QuotaAlteration{std::move(e), std::move(ops)};
}
QuotaEntity client(std::optional<std::string> name) { return {{"client-id", std::move(name)}}; }

// The value that applies to an unauthenticated client (quota user ANONYMOUS) with this client id.
std::optional<double> anon_value(const QuotaStore& s, const std::string& client_id,
                                 std::string_view key) {
  auto r = s.resolve("ANONYMOUS", client_id, key);
  return r ? std::optional<double>(r->value) : std::nullopt;
}

Status one(QuotaStore& s, QuotaAlteration a, bool validate_only = false) {
  return s.alter({std::move(a)}, validate_only).at(0);
}

TEST(QuotaStore, ValidationFollowsKafka) {
  TempDir dir;
  auto s = open_store(dir);
  auto invalid = [&](QuotaAlteration a, const std::string& needle) {
    Status st = one(*s, std::move(a));
    EXPECT_EQ(st.code(), Errc::invalid_argument) << needle;
    EXPECT_NE(st.message().find(needle), std::string::npos) << st.message();
  };
  invalid(alt({}, {{"producer_byte_rate", 1}}), "empty client quota entity");
  invalid(alt(client("a"), {{"bogus_rate", 1}}), "Invalid configuration key bogus_rate");
  invalid(alt(client("a"), {{"producer_byte_rate", -5}}), "must be a positive number");
  invalid(alt(client("a"), {{"request_percentage", 0}}), "must be a positive number");
  invalid(alt(client("a"), {{"consumer_byte_rate", 1.5}}), "must be a Long value");
  invalid(alt(client("a"), {{"producer_byte_rate", 1}, {"producer_byte_rate", 2}}),
          "Duplicate quota key");
  invalid(alt(client(""), {{"producer_byte_rate", 1}}), "Empty client-id not supported");
  invalid(alt({{"client-id", "a"}, {"client-id", "b"}}, {{"producer_byte_rate", 1}}), "duplicate");
  invalid(alt({{"group", "a"}}, {{"producer_byte_rate", 1}}), "Unhandled client quota entity type");
  invalid(alt({{"ip", "10.0.0.1"}}, {{"producer_byte_rate", 1}}), "ip is not supported");
  // the same entity twice in one request: the later one fails, the first applies
  auto both = s->alter({alt(client("a"), {{"producer_byte_rate", 10}}),
                        alt(client("a"), {{"producer_byte_rate", 20}})},
                       false);
  EXPECT_TRUE(both[0].ok());
  EXPECT_EQ(both[1].code(), Errc::invalid_argument);
  EXPECT_EQ(anon_value(*s, "a", kProducerByteRate), 10);
  // a fractional request_percentage is fine; a removal of an unset key is fine
  EXPECT_TRUE(one(*s, alt(client("a"), {{"request_percentage", 12.5}})).ok());
  EXPECT_TRUE(one(*s, alt(client("b"), {{"consumer_byte_rate", std::nullopt}})).ok());
}

TEST(QuotaStore, ValidateOnlyChangesNothing) {
  TempDir dir;
  auto s = open_store(dir);
  EXPECT_TRUE(one(*s, alt(client("a"), {{"producer_byte_rate", 100}}), true).ok());
  EXPECT_FALSE(s->resolve("ANONYMOUS", "a", kProducerByteRate));
  EXPECT_FALSE(s->any(kProducerByteRate));
  EXPECT_FALSE(storage::default_env()->file_exists(s->path()));
}

TEST(QuotaStore, DurableAcrossReopenWithOddNames) {
  TempDir dir;
  const std::string odd = "we,ird=na%me\twith\nbreaks é";
  {
    auto s = open_store(dir);
    EXPECT_TRUE(
        one(*s, alt(client(odd), {{"producer_byte_rate", 1048576}, {"request_percentage", 33.3}}))
            .ok());
    EXPECT_TRUE(one(*s, alt(client(std::nullopt), {{"consumer_byte_rate", 2000}})).ok());
    EXPECT_TRUE(one(*s, alt(client("gone"), {{"consumer_byte_rate", 1}})).ok());
    EXPECT_TRUE(one(*s, alt(client("gone"), {{"consumer_byte_rate", std::nullopt}})).ok());
  }
  auto s = open_store(dir);
  EXPECT_EQ(anon_value(*s, odd, kProducerByteRate), 1048576);
  EXPECT_EQ(anon_value(*s, odd, kRequestPercentage), 33.3);
  EXPECT_EQ(anon_value(*s, "anyone", kConsumerByteRate), 2000);  // the default entity
  auto all = s->describe({}, false);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 2u);  // "gone" has no values left: no entity
}

TEST(QuotaStore, CorruptFileIsReported) {
  TempDir dir;
  ASSERT_TRUE(storage::write_file_atomically(storage::default_env(),
                                             storage::join_path(dir.path(), "client-quotas"),
                                             "client-id=a\tnot_a_key\t5\n")
                  .ok());
  auto s = QuotaStore::open(storage::default_env(), dir.path());
  EXPECT_EQ(s.status().code(), Errc::corruption);
}

TEST(QuotaStore, DescribeFilters) {
  TempDir dir;
  auto s = open_store(dir);
  ASSERT_TRUE(one(*s, alt(client("a"), {{"producer_byte_rate", 1}})).ok());
  ASSERT_TRUE(one(*s, alt(client("b"), {{"consumer_byte_rate", 2}})).ok());
  ASSERT_TRUE(one(*s, alt(client(std::nullopt), {{"request_percentage", 3}})).ok());
  auto names = [&](std::vector<FilterComponent> f, bool strict) {
    auto r = s->describe(f, strict);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    std::vector<std::string> out;
    if (r.ok()) {
      for (auto& [e, v] : *r) out.push_back(entity_to_string(e));
    }
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(names({}, false), (V{"client-id=<default>", "client-id=a", "client-id=b"}));
  EXPECT_EQ(names({}, true), V{});
  EXPECT_EQ(names({{"client-id", MatchType::exact, "a"}}, false), V{"client-id=a"});
  EXPECT_EQ(names({{"client-id", MatchType::exact, "zzz"}}, true), V{});
  EXPECT_EQ(names({{"client-id", MatchType::default_, std::nullopt}}, true),
            V{"client-id=<default>"});
  EXPECT_EQ(names({{"client-id", MatchType::any, std::nullopt}}, true),
            (V{"client-id=<default>", "client-id=a", "client-id=b"}));
  EXPECT_EQ(names({{"user", MatchType::any, std::nullopt}}, false), V{});
  // bad filters
  EXPECT_EQ(s->describe({{"client-id", MatchType::exact, std::nullopt}}, false).status().code(),
            Errc::invalid_argument);
  EXPECT_EQ(
      s->describe({{"client-id", MatchType::any, {}}, {"client-id", MatchType::any, {}}}, false)
          .status()
          .code(),
      Errc::invalid_argument);
  EXPECT_EQ(s->describe({{"group", MatchType::any, {}}}, false).status().code(), Errc::unsupported);
  EXPECT_EQ(s->describe({{"ip", MatchType::any, {}}, {"client-id", MatchType::any, {}}}, false)
                .status()
                .code(),
            Errc::invalid_argument);
  EXPECT_EQ(s->describe({{"client-id", static_cast<MatchType>(7), {}}}, false).status().code(),
            Errc::invalid_argument);
  // values come back
  auto a = s->describe({{"client-id", MatchType::exact, "a"}}, false);
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->size(), 1u);
  EXPECT_EQ((*a)[0].second, (QuotaValues{{"producer_byte_rate", 1}}));
}

TEST(QuotaStore, ExactClientIdBeatsTheDefault) {
  TempDir dir;
  auto s = open_store(dir);
  ASSERT_TRUE(one(*s, alt(client(std::nullopt), {{"producer_byte_rate", 100}})).ok());
  ASSERT_TRUE(one(*s, alt(client("x"), {{"producer_byte_rate", 5000}})).ok());
  EXPECT_EQ(anon_value(*s, "x", kProducerByteRate), 5000);
  EXPECT_EQ(anon_value(*s, "y", kProducerByteRate), 100);
  EXPECT_EQ(anon_value(*s, "x", kConsumerByteRate), std::nullopt);
}

}  // namespace
}  // namespace strata::broker::quota
