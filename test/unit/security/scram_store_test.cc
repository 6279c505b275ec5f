// The SCRAM credential store and Kafka's administration rules: the broker-side derivation from a
// salted password against RFC 7677's exchange; the single-node file across a reopen (never the
// password or the salted password on disk); the cluster store on the in-memory coordination (a
// change through one broker's store reaches another's through the watch, also after a
// compaction); AlterUserScramCredentials' and DescribeUserScramCredentials' rules and codes; the
// bootstrap users' syntax and their create-once rule.
#include "broker/security/scram_store.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "broker/security/scram_admin.h"
#include "protocol/base/base64.h"
#include "storage/env.h"
#include "test/unit/cluster/fake_coordination.h"
#include "test/unit/storage/test_util.h"

namespace strata::broker::security {
namespace {

using protocol::ErrorCode;
using protocol::sasl::ScramClient;
using protocol::sasl::ScramServer;

constexpr int8_t k256 = kScramSha256Type;
constexpr int8_t k512 = kScramSha512Type;

std::string salted(ScramMechanism m, const std::string& password, const std::string& salt,
                   int32_t iterations = 4096) {
  auto s = protocol::sasl::scram_salted_password(m, password, salt, iterations);
  EXPECT_TRUE(s.ok());
  return *s;
}

ScramUpsertionIn upsert(const std::string& user, int8_t mech, const std::string& password,
                        int32_t iterations = 4096) {
  const std::string salt = "salt-of-" + user;
  auto m = scram_mechanism_of_type(mech).value_or(ScramMechanism::sha256);
  return ScramUpsertionIn{user, mech, iterations, salt, salted(m, password, salt, iterations)};
}

// A full SCRAM exchange of `password` against what the store holds for `user`.
bool authenticates(const ScramStore& store, ScramMechanism m, const std::string& user,
                   const std::string& password) {
  ScramServer server(m, [&](const std::string& u) { return store.scram(m, u); });
  ScramClient client(m, user, password);
  auto sf = server.first(client.first());
  if (!sf.ok()) return false;
  auto cf = client.final(*sf);
  if (!cf.ok()) return false;
  auto fin = server.final(*cf);
  return fin.ok() && client.verify(*fin).ok();
}

std::map<std::string, ErrorCode> codes(const std::vector<ScramUserResult>& results) {
  std::map<std::string, ErrorCode> out;
  for (const auto& r : results) {
    EXPECT_FALSE(out.count(r.user)) << "one result per user: " << r.user;
    out[r.user] = r.error;
  }
  return out;
}

template <typename F>
bool eventually(F f) {
  for (int i = 0; i < 500; ++i) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// RFC 7677 section 3: "pencil", this salt, 4096 iterations. The credential the broker derives
// from the client's salted password (what AlterUserScramCredentials carries) is the one
// make_scram_credential derives from the password, and it passes the RFC's exchange byte for byte.
TEST(ScramDerivation, FromSaltedPasswordPassesRfc7677) {
  auto salt = base64_decode("W22ZaJ0SNY7soEsUEjb6gQ==");
  ASSERT_TRUE(salt.ok());
  const std::string sp = salted(ScramMechanism::sha256, "pencil", *salt);
  auto cred = protocol::sasl::scram_credential_from_salted(ScramMechanism::sha256, sp, *salt, 4096);
  auto direct =
      protocol::sasl::make_scram_credential(ScramMechanism::sha256, "pencil", 4096, *salt);
  ASSERT_TRUE(direct.ok());
  EXPECT_EQ(cred, *direct);
  ScramServer server(
      ScramMechanism::sha256,
      [&](const std::string& u) -> std::optional<ScramCredential> {
        if (u == "user") return cred;
        return std::nullopt;
      },
      "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0");
  ASSERT_TRUE(server.first("n,,n=user,r=rOprNGfwEbeRWgbNEkqO").ok());
  auto fin = server.final(
      "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
      "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=");
  ASSERT_TRUE(fin.ok()) << fin.status().to_string();
  EXPECT_EQ(*fin, "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=");
}

TEST(ScramCredentialText, KafkaFormatRoundTripsAndRejectsGarbage) {
  auto c = protocol::sasl::make_scram_credential(ScramMechanism::sha512, "pw", 8192);
  ASSERT_TRUE(c.ok());
  const std::string text = format_scram_credential(*c);
  EXPECT_EQ(text.rfind("salt=", 0), 0u);
  EXPECT_NE(text.find(",iterations=8192"), std::string::npos);
  auto back = parse_scram_credential(text);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, *c);
  for (const char* bad : {"", "salt=AAAA", "salt=AAAA,stored_key=AAAA,server_key=AAAA",
                          "salt=!!,stored_key=AAAA,server_key=AAAA,iterations=4096",
                          "salt=AAAA,stored_key=AAAA,server_key=AAAA,iterations=x"}) {
    EXPECT_FALSE(parse_scram_credential(bad).ok()) << bad;
  }
}

TEST(ScramFileStore, DurableAcrossReopenWithoutSecrets) {
  storage::testing::TempDir dir;
  const auto up = upsert("alice/ops", k512, "correct horse");
  {
    auto store = ScramStore::open_file(storage::default_env(), dir.path());
    ASSERT_TRUE(store.ok());
    EXPECT_TRUE((*store)->all().empty());
    auto r = alter_scram_credentials(**store, {}, {up, upsert("bob", k256, "hunter2")});
    EXPECT_EQ(codes(r), (std::map<std::string, ErrorCode>{{"alice/ops", ErrorCode::none},
                                                          {"bob", ErrorCode::none}}));
    EXPECT_TRUE(authenticates(**store, ScramMechanism::sha512, "alice/ops", "correct horse"));
  }
  std::ifstream f(dir.sub("scram-credentials"));
  std::stringstream text;
  text << f.rdbuf();
  EXPECT_EQ(text.str().find("correct horse"), std::string::npos);
  EXPECT_EQ(text.str().find(base64_encode(up.salted_password)), std::string::npos);
  EXPECT_NE(text.str().find("alice%2Fops\tSCRAM-SHA-512\tsalt="), std::string::npos) << text.str();

  auto store = ScramStore::open_file(storage::default_env(), dir.path());
  ASSERT_TRUE(store.ok());
  EXPECT_TRUE(authenticates(**store, ScramMechanism::sha512, "alice/ops", "correct horse"));
  EXPECT_FALSE(authenticates(**store, ScramMechanism::sha512, "alice/ops", "wrong"));
  EXPECT_TRUE(authenticates(**store, ScramMechanism::sha256, "bob", "hunter2"));
  EXPECT_FALSE(authenticates(**store, ScramMechanism::sha512, "bob", "hunter2"));
  // A deletion is durable too.
  EXPECT_EQ(codes(alter_scram_credentials(**store, {{"bob", k256}}, {}))["bob"], ErrorCode::none);
  store->reset();
  auto again = ScramStore::open_file(storage::default_env(), dir.path());
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE((*again)->has("bob", ScramMechanism::sha256));
  EXPECT_TRUE((*again)->has("alice/ops", ScramMechanism::sha512));

  // A damaged file stops the open (the broker does not start with half its users).
  std::ofstream(dir.sub("scram-credentials"), std::ios::app) << "garbage line\n";
  EXPECT_EQ(ScramStore::open_file(storage::default_env(), dir.path()).status().code(),
            Errc::corruption);
}

TEST(ScramAdmin, AlterFollowsKafkasRules) {
  storage::testing::TempDir dir;
  auto opened = ScramStore::open_file(storage::default_env(), dir.path());
  ASSERT_TRUE(opened.ok());
  ScramStore& store = **opened;
  ASSERT_EQ(codes(alter_scram_credentials(store, {}, {upsert("keep", k256, "k")}))["keep"],
            ErrorCode::none);
  ASSERT_EQ(codes(alter_scram_credentials(store, {}, {upsert("twice", k256, "t")}))["twice"],
            ErrorCode::none);

  auto r = alter_scram_credentials(
      store, {{"keep", 9}, {"ghost", k256}, {"", k256}, {"twice", k256}},
      {upsert("twice", k512, "x"), upsert("few", k256, "x", 4095), upsert("many", k512, "x", 16385),
       upsert("ok-min", k256, "x", 4096), upsert("ok-max", k512, "x", 16384),
       upsert("bad-m", 3, "x"), upsert("both", k256, "a"), upsert("both", k512, "b"),
       upsert("ghost", k512, "g")});
  auto c = codes(r);
  EXPECT_EQ(c["keep"], ErrorCode::unsupported_sasl_mechanism);
  EXPECT_EQ(c["ghost"], ErrorCode::resource_not_found);  // its upsertion is skipped, as Kafka
  EXPECT_EQ(c[""], ErrorCode::unacceptable_credential);
  EXPECT_EQ(c["twice"], ErrorCode::duplicate_resource);  // a valid deletion, then an upsertion
  EXPECT_EQ(c["both"], ErrorCode::duplicate_resource);   // two mechanisms: still one user twice
  EXPECT_EQ(c["few"], ErrorCode::unacceptable_credential);
  EXPECT_EQ(c["many"], ErrorCode::unacceptable_credential);
  EXPECT_EQ(c["bad-m"], ErrorCode::unsupported_sasl_mechanism);
  EXPECT_EQ(c["ok-min"], ErrorCode::none);
  EXPECT_EQ(c["ok-max"], ErrorCode::none);
  EXPECT_EQ(c.size(), 10u);
  // Successes come first; failures carry a message, successes none.
  EXPECT_EQ(r[0].error, ErrorCode::none);
  for (const auto& x : r) EXPECT_EQ(x.message.has_value(), x.error != ErrorCode::none) << x.user;
  // Nothing of a failed user was applied.
  EXPECT_TRUE(store.has("keep", ScramMechanism::sha256));
  EXPECT_TRUE(store.has("twice", ScramMechanism::sha256)) << "its deletion was not applied";
  EXPECT_FALSE(store.has("twice", ScramMechanism::sha512));
  EXPECT_FALSE(store.has("both", ScramMechanism::sha256));
  EXPECT_FALSE(store.has("few", ScramMechanism::sha256));
  EXPECT_FALSE(store.has("ghost", ScramMechanism::sha512));
  EXPECT_TRUE(authenticates(store, ScramMechanism::sha512, "ok-max", "x"));
  // An upsertion replaces the password.
  ASSERT_EQ(codes(alter_scram_credentials(store, {}, {upsert("keep", k256, "new")}))["keep"],
            ErrorCode::none);
  EXPECT_TRUE(authenticates(store, ScramMechanism::sha256, "keep", "new"));
  EXPECT_FALSE(authenticates(store, ScramMechanism::sha256, "keep", "k"));
}

TEST(ScramAdmin, DescribeFollowsKafkasRules) {
  storage::testing::TempDir dir;
  auto opened = ScramStore::open_file(storage::default_env(), dir.path());
  ASSERT_TRUE(opened.ok());
  ScramStore& store = **opened;
  alter_scram_credentials(store, {}, {upsert("b", k256, "x", 5000), upsert("a", k512, "y")});
  alter_scram_credentials(store, {}, {upsert("a", k256, "z", 6000)});

  for (const auto& users : {std::optional<std::vector<std::string>>{},
                            std::optional<std::vector<std::string>>{std::vector<std::string>{}}}) {
    auto all = describe_scram_credentials(store, users);
    ASSERT_EQ(all.size(), 2u);
    EXPECT_EQ(all[0].user.user, "a");
    EXPECT_EQ(all[0].credentials,
              (std::vector<std::pair<int8_t, int32_t>>{{k256, 6000}, {k512, 4096}}));
    EXPECT_EQ(all[1].user.user, "b");
    EXPECT_EQ(all[1].credentials, (std::vector<std::pair<int8_t, int32_t>>{{k256, 5000}}));
  }
  auto some = describe_scram_credentials(store, std::vector<std::string>{"b", "nobody", "b", "a"});
  ASSERT_EQ(some.size(), 3u);
  EXPECT_EQ(some[0].user.user, "b");
  EXPECT_EQ(some[0].user.error, ErrorCode::duplicate_resource);
  EXPECT_TRUE(some[0].credentials.empty());
  EXPECT_EQ(some[1].user.error, ErrorCode::resource_not_found);
  EXPECT_EQ(some[2].user.error, ErrorCode::none);
  EXPECT_FALSE(some[2].user.message.has_value());
}

// What the handlers ask of the authorizer (Kafka's KafkaApis / ControllerApis checks), and Kafka's
// shape of a refused alteration.
TEST(ScramAdmin, AuthorizationAsKafkaChecksIt) {
  struct Recording : Authorizer {
    bool authorize(const std::string& principal, const std::string& host, AclOperation op,
                   ResourceType type, const std::string& name) const override {
      calls.push_back(principal + "|" + host + "|" + std::to_string(static_cast<int>(op)) + "|" +
                      std::to_string(static_cast<int>(type)) + "|" + name);
      return allow;
    }
    bool authorize_any(const std::string&, const std::string&, AclOperation,
                       ResourceType) const override {
      return allow;
    }
    std::vector<AclBinding> acls(const AclFilter&) const override { return {}; }
    Status create(const std::vector<AclBinding>&) override { return Status::Ok(); }
    Result<std::vector<AclBinding>> remove(const AclFilter&) override {
      return std::vector<AclBinding>{};
    }
    bool allow = false;
    mutable std::vector<std::string> calls;
  } authz;
  EXPECT_TRUE(scram_api_allowed(nullptr, "User:anyone", "10.0.0.1", AclOperation::alter));
  EXPECT_FALSE(scram_api_allowed(&authz, "User:bob", "10.0.0.2", AclOperation::alter));
  authz.allow = true;
  EXPECT_TRUE(scram_api_allowed(&authz, "User:admin", "10.0.0.3", AclOperation::describe));
  EXPECT_EQ(authz.calls, (std::vector<std::string>{"User:bob|10.0.0.2|7|4|kafka-cluster",
                                                   "User:admin|10.0.0.3|8|4|kafka-cluster"}));
  auto refused = alter_refused({{"zed", k256}, {"amy", k512}}, {upsert("zed", k512, "x")},
                               ErrorCode::cluster_authorization_failed, "denied");
  ASSERT_EQ(refused.size(), 2u);
  EXPECT_EQ(refused[0].user, "amy");
  EXPECT_EQ(refused[1].user, "zed");
  for (const auto& r : refused) {
    EXPECT_EQ(r.error, ErrorCode::cluster_authorization_failed);
    EXPECT_EQ(r.message, "denied");
  }
}

TEST(ScramClusterStore, ChangesReachEveryBrokerThroughTheWatch) {
  cluster::FakeCoordination co;
  auto a = ScramStore::open_cluster(co, "/strata-test");
  auto b = ScramStore::open_cluster(co, "/strata-test");
  auto other = ScramStore::open_cluster(co, "/other-cluster");
  ASSERT_TRUE(a.ok() && b.ok() && other.ok());
  auto r = alter_scram_credentials(**a, {}, {upsert("carol", k512, "pw")});
  ASSERT_EQ(codes(r)["carol"], ErrorCode::none);
  // Read-your-writes on the broker that answered; the other sees it through its watch.
  EXPECT_TRUE((*a)->has("carol", ScramMechanism::sha512));
  EXPECT_TRUE(eventually([&] { return (*b)->has("carol", ScramMechanism::sha512); }));
  EXPECT_TRUE(authenticates(**b, ScramMechanism::sha512, "carol", "pw"));
  EXPECT_FALSE((*other)->has("carol", ScramMechanism::sha512)) << "another prefix, another cluster";
  auto kvs = co.range("/strata-test/scram/", cluster::prefix_end("/strata-test/scram/"));
  ASSERT_TRUE(kvs.ok());
  ASSERT_EQ(kvs->kvs.size(), 1u);
  EXPECT_EQ(kvs->kvs[0].key, "/strata-test/scram/SCRAM-SHA-512/carol");

  // A deletion through b reaches a; a store opened later reads what is there.
  ASSERT_EQ(codes(alter_scram_credentials(**b, {{"carol", k512}}, {}))["carol"], ErrorCode::none);
  EXPECT_TRUE(eventually([&] { return !(*a)->has("carol", ScramMechanism::sha512); }));
  alter_scram_credentials(**a, {}, {upsert("dave", k256, "d")});
  auto late = ScramStore::open_cluster(co, "/strata-test");
  ASSERT_TRUE(late.ok());
  EXPECT_TRUE((*late)->has("dave", ScramMechanism::sha256));

  // History compacted under a watch: the store re-reads and keeps following.
  ASSERT_TRUE(co.compact(co.revision()).ok());
  alter_scram_credentials(**a, {}, {upsert("erin", k256, "e")});
  EXPECT_TRUE(eventually([&] { return (*b)->has("erin", ScramMechanism::sha256); }));

  // etcd unreachable: the alteration fails with a retriable code and changes nothing.
  co.set_unreachable(true);
  auto down = alter_scram_credentials(**a, {}, {upsert("frank", k256, "f")});
  EXPECT_EQ(codes(down)["frank"], ErrorCode::request_timed_out);
  co.set_unreachable(false);
  EXPECT_FALSE((*a)->has("frank", ScramMechanism::sha256));
}

TEST(ScramBootstrap, KafkaStorageSyntax) {
  auto users = parse_bootstrap_users(
      " SCRAM-SHA-512=[name=admin,password=admin-secret] ; "
      "SCRAM-SHA-256=[name=app,password=\"a,b;c]\",iterations=8192,salt=\"c2FsdA==\"]");
  ASSERT_TRUE(users.ok()) << users.status().to_string();
  ASSERT_EQ(users->size(), 2u);
  EXPECT_EQ((*users)[0].name, "admin");
  EXPECT_EQ((*users)[0].mechanism, ScramMechanism::sha512);
  EXPECT_EQ((*users)[0].password, "admin-secret");
  EXPECT_EQ((*users)[0].iterations, 4096);
  EXPECT_EQ((*users)[1].password, "a,b;c]");
  EXPECT_EQ((*users)[1].iterations, 8192);
  EXPECT_EQ((*users)[1].salt, "salt");
  EXPECT_TRUE(parse_bootstrap_users("").ok());
  EXPECT_TRUE(
      parse_bootstrap_users("SCRAM-SHA-256=[name=x,salt=c2FsdA==,saltedpassword=AAAA]").ok());
  for (const char* bad : {"SCRAM-SHA-1=[name=x,password=y]", "SCRAM-SHA-256=name=x,password=y",
                          "SCRAM-SHA-256=[password=y]", "SCRAM-SHA-256=[name=x]",
                          "SCRAM-SHA-256=[name=x,password=y,saltedpassword=AAAA]",
                          "SCRAM-SHA-256=[name=x,saltedpassword=AAAA]",
                          "SCRAM-SHA-256=[name=x,password=y,iterations=100]",
                          "SCRAM-SHA-256=[name=x,password=y,color=red]"}) {
    auto r = parse_bootstrap_users(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.status().message().find("y,"), std::string::npos) << "no password";
    }
  }
}

TEST(ScramBootstrap, CreatedOnceNeverOverwritten) {
  storage::testing::TempDir dir;
  auto users = parse_bootstrap_users("SCRAM-SHA-512=[name=admin,password=first]");
  ASSERT_TRUE(users.ok());
  {
    auto store = ScramStore::open_file(storage::default_env(), dir.path());
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE(apply_bootstrap_users(**store, *users).ok());
    EXPECT_TRUE(authenticates(**store, ScramMechanism::sha512, "admin", "first"));
    // The operator changes the password afterwards.
    alter_scram_credentials(**store, {}, {upsert("admin", k512, "changed")});
  }
  auto store = ScramStore::open_file(storage::default_env(), dir.path());
  ASSERT_TRUE(store.ok());
  auto second = parse_bootstrap_users("SCRAM-SHA-512=[name=admin,password=first]");
  ASSERT_TRUE(apply_bootstrap_users(**store, *second).ok());  // the next start
  EXPECT_TRUE(authenticates(**store, ScramMechanism::sha512, "admin", "changed"));
  EXPECT_FALSE(authenticates(**store, ScramMechanism::sha512, "admin", "first"));

  // Two brokers of a cluster starting together: one creates it, the other finds it.
  cluster::FakeCoordination co;
  auto a = ScramStore::open_cluster(co, "/c");
  auto b = ScramStore::open_cluster(co, "/c");
  ASSERT_TRUE(a.ok() && b.ok());
  auto created = (*a)->put_if_absent("admin", ScramMechanism::sha512,
                                     *(*store)->scram(ScramMechanism::sha512, "admin"));
  ASSERT_TRUE(created.ok());
  EXPECT_TRUE(*created);
  auto lost = (*b)->put_if_absent(
      "admin", ScramMechanism::sha512,
      *protocol::sasl::make_scram_credential(ScramMechanism::sha512, "other", 4096));
  ASSERT_TRUE(lost.ok());
  EXPECT_FALSE(*lost);
  EXPECT_TRUE(
      eventually([&] { return authenticates(**b, ScramMechanism::sha512, "admin", "changed"); }));
}

}  // namespace
}  // namespace strata::broker::security
