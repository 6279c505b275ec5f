// User and user+client-id quota entities (KIP-55): Kafka's validation and DescribeClientQuotas
// filters with the user type, the eight-level resolution order checked against a simple model on
// random entity sets (persisted and reopened along the way), the file format (an old client-id
// only file loads), and which clients share a rate (Kafka's metric-tag rule).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "broker/quota/client_quotas.h"
#include "broker/quota/quota_store.h"
#include "storage/env.h"
#include "storage/file_util.h"
#include "test/unit/storage/test_util.h"

namespace strata::broker::quota {
namespace {

using storage::testing::TempDir;
using Name = std::optional<std::string>;

std::unique_ptr<QuotaStore> open_store(const TempDir& dir) {
  auto s = QuotaStore::open(storage::default_env(), dir.path());
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return s.ok() ? std::move(*s) : nullptr;
}

QuotaEntity user(Name u) { return {{"user", std::move(u)}}; }
QuotaEntity client(Name c) { return {{"client-id", std::move(c)}}; }
// sent user first, as clients do; the store sorts the parts
QuotaEntity user_client(Name u, Name c) { return {{"user", std::move(u)}, {"client-id", c}}; }

Status set(QuotaStore& s, QuotaEntity e, std::string key, std::optional<double> v) {
  return s.alter({QuotaAlteration{std::move(e), {{std::move(key), v}}}}, false).at(0);
}

std::optional<double> value(const QuotaStore& s, std::string_view u, std::string_view c,
                            std::string_view key) {
  auto r = s.resolve(u, c, key);
  return r ? std::optional<double>(r->value) : std::nullopt;
}

TEST(UserQuotas, ValidationAcceptsUserEntitiesAsKafka) {
  TempDir dir;
  auto s = open_store(dir);
  for (const QuotaEntity& e : {user("alice"), user(std::nullopt), user_client("alice", "x"),
                               user_client("alice", std::nullopt), user_client(std::nullopt, "x"),
                               user_client(std::nullopt, std::nullopt)}) {
    EXPECT_TRUE(set(*s, e, "producer_byte_rate", 100).ok()) << entity_to_string(e);
  }
  auto invalid = [&](QuotaEntity e, const std::string& needle) {
    Status st = set(*s, std::move(e), "producer_byte_rate", 1);
    EXPECT_EQ(st.code(), Errc::invalid_argument) << needle;
    EXPECT_NE(st.message().find(needle), std::string::npos) << st.message();
  };
  invalid(user(""), "Empty user not supported");
  invalid(user_client("alice", ""), "Empty client-id not supported");
  invalid({{"user", "a"}, {"user", "b"}}, "duplicate entity entry user");
  invalid({{"user", "a"}, {"ip", "10.0.0.1"}}, "ip is not supported");
  invalid({{"user", "a"}, {"group", "g"}}, "Unhandled client quota entity type: group");
  // the user+client-id entity is one entity: set twice in one request, the later one fails
  auto both = s->alter(
      {QuotaAlteration{user_client("bob", "x"), {{"producer_byte_rate", 1}}},
       QuotaAlteration{{{"client-id", "x"}, {"user", "bob"}}, {{"producer_byte_rate", 2}}}},
      false);
  EXPECT_TRUE(both[0].ok());
  EXPECT_EQ(both[1].code(), Errc::invalid_argument);
  EXPECT_EQ(value(*s, "bob", "x", kProducerByteRate), 1);
}

TEST(UserQuotas, EntityTextNamesTheUserFirst) {
  EXPECT_EQ(entity_to_string({{"client-id", "x"}, {"user", "alice"}}), "user=alice,client-id=x");
  EXPECT_EQ(entity_to_string({{"client-id", std::nullopt}, {"user", std::nullopt}}),
            "user=<default>,client-id=<default>");
}

TEST(UserQuotas, DescribeFiltersWithTheUserType) {
  TempDir dir;
  auto s = open_store(dir);
  for (const QuotaEntity& e :
       {user("alice"), user(std::nullopt), user_client("alice", "x"),
        user_client(std::nullopt, std::nullopt), user_client("bob", std::nullopt), client("x"),
        client(std::nullopt)}) {
    ASSERT_TRUE(set(*s, e, "consumer_byte_rate", 10).ok());
  }
  using V = std::set<std::string>;
  auto names = [&](std::vector<FilterComponent> f, bool strict) {
    auto r = s->describe(f, strict);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    V out;
    if (r.ok()) {
      for (auto& [e, v] : *r) out.insert(entity_to_string(e));
    }
    return out;
  };
  const FilterComponent alice{"user", MatchType::exact, "alice"};
  const FilterComponent user_default{"user", MatchType::default_, std::nullopt};
  const FilterComponent any_user{"user", MatchType::any, std::nullopt};
  const FilterComponent x{"client-id", MatchType::exact, "x"};
  const FilterComponent client_default{"client-id", MatchType::default_, std::nullopt};
  const FilterComponent any_client{"client-id", MatchType::any, std::nullopt};
  EXPECT_EQ(names({}, false).size(), 7u);
  EXPECT_EQ(names({}, true), V{});
  EXPECT_EQ(names({alice}, false), (V{"user=alice", "user=alice,client-id=x"}));
  EXPECT_EQ(names({alice}, true), V{"user=alice"});
  EXPECT_EQ(names({user_default}, false),
            (V{"user=<default>", "user=<default>,client-id=<default>"}));
  EXPECT_EQ(names({any_user}, true), (V{"user=alice", "user=<default>"}));
  EXPECT_EQ(names({any_user}, false),
            (V{"user=alice", "user=<default>", "user=alice,client-id=x",
               "user=<default>,client-id=<default>", "user=bob,client-id=<default>"}));
  const V pairs{"user=alice,client-id=x", "user=<default>,client-id=<default>",
                "user=bob,client-id=<default>"};
  EXPECT_EQ(names({any_user, any_client}, false), pairs);
  EXPECT_EQ(names({any_user, any_client}, true), pairs);
  EXPECT_EQ(names({alice, x}, true), V{"user=alice,client-id=x"});
  EXPECT_EQ(names({user_default, x}, false), V{});
  EXPECT_EQ(names({x}, false), (V{"client-id=x", "user=alice,client-id=x"}));
  EXPECT_EQ(names({x}, true), V{"client-id=x"});
  EXPECT_EQ(names({client_default}, false),
            (V{"client-id=<default>", "user=<default>,client-id=<default>",
               "user=bob,client-id=<default>"}));
  EXPECT_EQ(names({any_client, user_default}, true), V{"user=<default>,client-id=<default>"});
  EXPECT_EQ(names({{"user", MatchType::exact, "carol"}}, false), V{});
  EXPECT_EQ(s->describe({any_user, {"ip", MatchType::any, {}}}, false).status().code(),
            Errc::invalid_argument);
  EXPECT_EQ(s->describe({{"user", MatchType::exact, std::nullopt}}, false).status().code(),
            Errc::invalid_argument);
  EXPECT_EQ(s->describe({any_user, any_user}, false).status().code(), Errc::invalid_argument);
}

// ---- resolution: the store against a model of Kafka's order ----

// Kafka's order, most specific first, as (user part, client-id part) shapes.
enum class Part { named, default_, absent };
constexpr std::pair<Part, Part> kOrder[kQuotaLevels] = {
    {Part::named, Part::named},    {Part::named, Part::default_},    {Part::named, Part::absent},
    {Part::default_, Part::named}, {Part::default_, Part::default_}, {Part::default_, Part::absent},
    {Part::absent, Part::named},   {Part::absent, Part::default_},
};

struct ModelEntry {
  Part u, c;
  std::string user, client;  // when named
  std::string key;
  double value;
};

// The model: a flat list of (entity, key, value); the first shape of kOrder with an entry for this
// user, client id and key wins. Returns (value, level index).
std::optional<std::pair<double, int>> model_resolve(const std::vector<ModelEntry>& m,
                                                    const std::string& u, const std::string& c,
                                                    const std::string& key) {
  for (int level = 0; level < kQuotaLevels; ++level) {
    const auto [pu, pc] = kOrder[level];
    for (const auto& e : m) {
      if (e.u == pu && e.c == pc && e.key == key && (pu != Part::named || e.user == u) &&
          (pc != Part::named || e.client == c)) {
        return std::make_pair(e.value, level);
      }
    }
  }
  return std::nullopt;
}

TEST(UserQuotas, ResolutionFollowsKafkasOrderOnRandomEntitySets) {
  std::mt19937_64 rng(55);
  const std::vector<std::string> users{"alice", "bob", "ANONYMOUS"};
  const std::vector<std::string> clients{"x", "y", "we,ird=%"};
  const std::vector<std::string> keys{std::string(kProducerByteRate),
                                      std::string(kConsumerByteRate),
                                      std::string(kRequestPercentage)};
  for (int round = 0; round < 60; ++round) {
    TempDir dir;
    auto s = open_store(dir);
    std::vector<ModelEntry> model;
    for (int step = 0; step < 40; ++step) {
      // set or remove one key of a random entity (any of the eight shapes)
      const auto [pu, pc] = kOrder[rng() % kQuotaLevels];
      ModelEntry e{pu,
                   pc,
                   users[rng() % users.size()],
                   clients[rng() % clients.size()],
                   keys[rng() % keys.size()],
                   static_cast<double>(1 + rng() % 1000)};
      QuotaEntity entity;
      if (pc != Part::absent) {
        entity.emplace_back("client-id", pc == Part::named ? Name(e.client) : std::nullopt);
      }
      if (pu != Part::absent) {
        entity.emplace_back("user", pu == Part::named ? Name(e.user) : std::nullopt);
      }
      auto same = [&](const ModelEntry& o) {
        return o.u == e.u && o.c == e.c && o.key == e.key &&
               (e.u != Part::named || o.user == e.user) &&
               (e.c != Part::named || o.client == e.client);
      };
      model.erase(std::remove_if(model.begin(), model.end(), same), model.end());
      const bool remove = rng() % 4 == 0;
      ASSERT_TRUE(set(*s, entity, e.key, remove ? std::nullopt : std::optional(e.value)).ok());
      if (!remove) model.push_back(e);
      if (step % 10 == 9) s = open_store(dir);  // what was persisted resolves the same
      // every lookup (an unknown user and client id, and no client id, included)
      for (const auto& u : {"alice", "bob", "ANONYMOUS", "carol"}) {
        for (const auto& c : {"x", "y", "we,ird=%", "z", ""}) {
          for (const auto& key : keys) {
            const auto want = model_resolve(model, u, c, key);
            const auto got = s->resolve(u, c, key);
            ASSERT_EQ(got.has_value(), want.has_value())
                << "round " << round << " step " << step << " " << u << "/" << c << " " << key;
            if (!got) continue;
            ASSERT_EQ(got->value, want->first) << round << " " << step << " " << u << "/" << c;
            ASSERT_EQ(static_cast<int>(got->level), want->second) << u << "/" << c;
          }
        }
      }
    }
  }
}

TEST(UserQuotas, EveryLevelInTurn) {
  // all eight entities set, then removed most specific first: each lookup falls one level down
  TempDir dir;
  auto s = open_store(dir);
  const std::vector<QuotaEntity> order{user_client("alice", "x"),
                                       user_client("alice", std::nullopt),
                                       user("alice"),
                                       user_client(std::nullopt, "x"),
                                       user_client(std::nullopt, std::nullopt),
                                       user(std::nullopt),
                                       client("x"),
                                       client(std::nullopt)};
  for (size_t i = 0; i < order.size(); ++i) {
    ASSERT_TRUE(set(*s, order[i], "producer_byte_rate", static_cast<double>(100 + i)).ok());
  }
  for (size_t i = 0; i < order.size(); ++i) {
    auto r = s->resolve("alice", "x", kProducerByteRate);
    ASSERT_TRUE(r) << i;
    EXPECT_EQ(r->value, static_cast<double>(100 + i));
    EXPECT_EQ(static_cast<size_t>(r->level), i);
    ASSERT_TRUE(set(*s, order[i], "producer_byte_rate", std::nullopt).ok());
  }
  EXPECT_FALSE(s->resolve("alice", "x", kProducerByteRate));
}

// ---- the file ----

TEST(UserQuotas, PersistedWithSortedPartsAndOldFilesLoad) {
  TempDir dir;
  const std::string path = storage::join_path(dir.path(), "client-quotas");
  // a file as written before user entities: client-id lines only, a bare type for the default
  ASSERT_TRUE(storage::write_file_atomically(storage::default_env(), path,
                                             "# client quotas (AlterClientQuotas): entity, key, "
                                             "value\n"
                                             "client-id\tconsumer_byte_rate\t2000\n"
                                             "client-id=a%2Cb\tproducer_byte_rate\t1048576\n")
                  .ok());
  {
    auto s = open_store(dir);
    EXPECT_EQ(value(*s, "ANONYMOUS", "a,b", kProducerByteRate), 1048576);
    EXPECT_EQ(value(*s, "alice", "zzz", kConsumerByteRate), 2000);
    ASSERT_TRUE(set(*s, user_client("al ice", "x"), "producer_byte_rate", 10).ok());
    ASSERT_TRUE(set(*s, user_client(std::nullopt, std::nullopt), "request_percentage", 2.5).ok());
    ASSERT_TRUE(set(*s, user(std::nullopt), "consumer_byte_rate", 30).ok());
  }
  auto text = storage::read_file_to_string(storage::default_env(), path);
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("client-id=x,user=al%20ice\tproducer_byte_rate\t10\n"), std::string::npos)
      << *text;
  EXPECT_NE(text->find("client-id,user\trequest_percentage\t2.5\n"), std::string::npos) << *text;
  EXPECT_NE(text->find("\nuser\tconsumer_byte_rate\t30\n"), std::string::npos) << *text;
  auto s = open_store(dir);
  EXPECT_EQ(value(*s, "al ice", "x", kProducerByteRate), 10);
  EXPECT_EQ(value(*s, "bob", "y", kRequestPercentage), 2.5);
  EXPECT_EQ(value(*s, "bob", "y", kConsumerByteRate), 30);  // /users/<default> before clients
  EXPECT_EQ(value(*s, "bob", "a,b", kProducerByteRate), 1048576);
  auto all = s->describe({}, false);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 5u);
}

// ---- rate sharing ----

struct Quotas {
  TempDir dir;
  int64_t now = 1000000;
  std::unique_ptr<ClientQuotas> q;
  Quotas() {
    auto store = QuotaStore::open(storage::default_env(), dir.path());
    EXPECT_TRUE(store.ok());
    q = std::make_unique<ClientQuotas>(std::move(*store), RateConfig{11, 1000},
                                       [this] { return now; });
  }
  void set(QuotaEntity e, std::optional<double> v, std::string key = "producer_byte_rate") {
    auto st = q->alter({QuotaAlteration{std::move(e), {{std::move(key), v}}}}, false);
    ASSERT_TRUE(st.at(0).ok()) << st[0].to_string();
  }
  // 1000 B/s over the 10 s minimum span: 15000 bytes at once is 5 s over
  int64_t produce(std::string_view u, std::string_view c, int64_t bytes) {
    return q->record_produce(QuotaClient{u, c}, bytes);
  }
};

TEST(UserQuotaSharing, QuotaUserIsThePrincipalsName) {
  EXPECT_EQ(quota_user("User:alice"), "alice");
  EXPECT_EQ(quota_user("User:ANONYMOUS"), "ANONYMOUS");
  EXPECT_EQ(quota_user("User:CN=a,O=b:c"), "CN=a,O=b:c");
}

TEST(UserQuotaSharing, AUserQuotaIsSharedByAllItsClientIds) {
  Quotas f;
  f.set(user("alice"), 1000);
  EXPECT_EQ(f.produce("alice", "a", 9000), 0);
  EXPECT_EQ(f.produce("alice", "b", 6000), 5000);  // the same rate: 15000 B
  EXPECT_EQ(f.produce("alice", "", 1), 5001);
  EXPECT_EQ(f.produce("bob", "a", 1 << 30), 0);  // no quota for bob
  EXPECT_EQ(f.q->tracked_rates(), 1u);
}

TEST(UserQuotaSharing, AClientIdQuotaIsSharedByAllItsUsers) {
  Quotas f;
  f.set(client("x"), 1000);
  EXPECT_EQ(f.produce("alice", "x", 9000), 0);
  EXPECT_EQ(f.produce("bob", "x", 6000), 5000);
  EXPECT_EQ(f.produce("bob", "y", 1 << 30), 0);
  EXPECT_EQ(f.q->tracked_rates(), 1u);
}

TEST(UserQuotaSharing, AUserClientIdQuotaIsPerPair) {
  Quotas f;
  f.set(user_client("alice", "x"), 1000);
  EXPECT_EQ(f.produce("alice", "x", 9000), 0);
  EXPECT_EQ(f.produce("alice", "x", 6000), 5000);
  EXPECT_EQ(f.produce("alice", "y", 1 << 30), 0);
  EXPECT_EQ(f.produce("bob", "x", 1 << 30), 0);
}

TEST(UserQuotaSharing, DefaultEntitiesLimitEachUserOrPairSeparately) {
  Quotas f;
  f.set(user(std::nullopt), 1000);
  EXPECT_EQ(f.produce("alice", "a", 9000), 0);
  EXPECT_EQ(f.produce("alice", "b", 6000), 5000);  // alice's own rate, all her client ids
  EXPECT_EQ(f.produce("bob", "a", 9000), 0);       // bob's is another
  EXPECT_EQ(f.produce("ANONYMOUS", "a", 9000), 0);
  EXPECT_EQ(f.q->tracked_rates(), 3u);

  Quotas g;
  g.set(user_client(std::nullopt, std::nullopt), 1000);
  EXPECT_EQ(g.produce("alice", "a", 9000), 0);
  EXPECT_EQ(g.produce("alice", "b", 9000), 0);  // another pair
  EXPECT_EQ(g.produce("alice", "a", 6000), 5000);
  EXPECT_EQ(g.q->tracked_rates(), 2u);

  Quotas h;
  h.set(user_client("alice", std::nullopt), 1000);  // each of alice's client ids on its own
  EXPECT_EQ(h.produce("alice", "a", 9000), 0);
  EXPECT_EQ(h.produce("alice", "b", 9000), 0);
  EXPECT_EQ(h.produce("bob", "a", 1 << 30), 0);
}

TEST(UserQuotaSharing, MoreSpecificEntitiesOverrideAndCountApart) {
  Quotas f;
  f.set(user("alice"), 1000);
  f.set(user_client("alice", "fast"), 1e9);
  f.set(client("fast"), 1000);  // below both user levels: not alice's
  EXPECT_EQ(f.produce("alice", "fast", 1 << 20), 0);
  // alice/fast's bytes went to the pair's rate, not to alice's
  EXPECT_EQ(f.produce("alice", "other", 9000), 0);
  EXPECT_EQ(f.produce("alice", "other", 6000), 5000);
  EXPECT_GT(f.produce("bob", "fast", 20000), 0);  // bob gets client-id=fast
}

TEST(UserQuotaSharing, AChangeOfLevelStartsANewRate) {
  Quotas f;
  f.set(client("x"), 1000);
  EXPECT_GT(f.produce("alice", "x", 20000), 0);
  f.set(user("alice"), 1000);  // now alice/x is measured by alice's rate, fresh
  EXPECT_EQ(f.produce("alice", "x", 5000), 0);
  EXPECT_GT(f.produce("bob", "x", 1), 0);  // bob still on the client-id rate
  f.set(user("alice"), std::nullopt);      // back to the client-id rate, which kept running
  EXPECT_GT(f.produce("alice", "x", 1), 0);
}

TEST(UserQuotaSharing, FetchAndRequestQuotasResolvePerKey) {
  Quotas f;
  f.set(user("alice"), 1000, "consumer_byte_rate");
  f.set(client("x"), 1000, "producer_byte_rate");
  const QuotaClient ax{"alice", "x"};
  EXPECT_EQ(f.q->fetch_window_bytes(ax), 10000);
  EXPECT_EQ(f.q->fetch_window_bytes(QuotaClient{"bob", "x"}), 0);
  EXPECT_GT(f.q->record_fetch(ax, 20000), 0);
  f.q->unrecord_fetch(ax, 20000);
  EXPECT_EQ(f.q->record_fetch(QuotaClient{"alice", "y"}, 5000), 0);  // alice's one rate: 5000
  EXPECT_GT(f.q->record_fetch(QuotaClient{"alice", "z"}, 6000), 0);  // 11000 now
  f.set(user_client(std::nullopt, "x"), 10, "request_percentage");
  f.q->record_request_time(ax, 5'000'000'000);
  EXPECT_EQ(f.q->request_throttle(ax), 1000);
  EXPECT_EQ(f.q->request_throttle(QuotaClient{"bob", "x"}), 0);  // another pair
}

}  // namespace
}  // namespace strata::broker::quota
