// The broker's side of authentication: JAAS text, ssl.principal.mapping.rules, the listener and
// security keys of the config (protocol map, per-listener overrides), and SaslAuthenticator's
// PLAIN and SCRAM exchanges against JAAS users and an in-memory credential store.
#include <gtest/gtest.h>

#include <atomic>
#include <latch>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "broker/config/config.h"
#include "broker/config/security_config.h"
#include "broker/security/password_check.h"
#include "broker/security/sasl_authenticator.h"
#include "broker/security/ssl_principal.h"
#include "protocol/sasl/jaas.h"
#include "protocol/sasl/scram.h"

namespace strata::broker::security {
namespace {

namespace sasl = protocol::sasl;

TEST(Jaas, ParsesKafkasPlainLoginModule) {
  auto j = sasl::parse_jaas(
      "org.apache.kafka.common.security.plain.PlainLoginModule required\n"
      "  username=\"admin\" password=\"admin-secret\" user_admin=\"admin-secret\"\n"
      "  user_alice=\"a \\\"quoted\\\" secret\" bare=word;");
  ASSERT_TRUE(j.ok()) << j.status().message();
  EXPECT_EQ(j->login_module, "org.apache.kafka.common.security.plain.PlainLoginModule");
  EXPECT_EQ(j->flag, "required");
  EXPECT_EQ(j->option("username"), "admin");
  EXPECT_EQ(j->plain_password("alice"), std::optional<std::string>("a \"quoted\" secret"));
  EXPECT_EQ(j->plain_password("admin"), std::optional<std::string>("admin-secret"));
  EXPECT_EQ(j->plain_password("bob"), std::nullopt);
  EXPECT_EQ(j->option("bare"), "word");
}

TEST(Jaas, RefusesMalformedText) {
  for (const char* bad : {"", "Module", "Module required user_a=\"x\"", "Module sometimes;",
                          "Module required user_a=\"x;", "Module required a=\"1\" a=\"2\";",
                          "Module required =\"x\";", "M required; M required;"}) {
    EXPECT_FALSE(sasl::parse_jaas(bad).ok()) << bad;
  }
}

TEST(SslPrincipal, DefaultAndRulesInOrder) {
  auto d = SslPrincipalMapper::parse("DEFAULT");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d->map("CN=alice,OU=eng,O=Strata"), "CN=alice,OU=eng,O=Strata");

  auto r = SslPrincipalMapper::parse(
      "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/, RULE:^CN=(.*?),OU=(.*?),O=.*$/$1@$2/L, DEFAULT");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r->map("CN=svc,OU=ServiceUsers,O=Strata"), "svc");
  EXPECT_EQ(*r->map("CN=Alice,OU=ENG,O=Strata"), "alice@eng");
  EXPECT_EQ(*r->map("CN=x"), "CN=x");  // DEFAULT

  auto upper = SslPrincipalMapper::parse("RULE:^CN=([^,]*).*$/$1/U");
  ASSERT_TRUE(upper.ok());
  EXPECT_EQ(*upper->map("CN=bob,O=x"), "BOB");
  EXPECT_FALSE(upper->map("O=x").ok());  // no rule matches: refused, as Kafka

  auto slash = SslPrincipalMapper::parse("RULE:^CN=a\\/b$/ab/");
  ASSERT_TRUE(slash.ok());
  EXPECT_EQ(*slash->map("CN=a/b"), "ab");

  for (const char* bad : {"", "RULE:x", "RULE:(/y/", "NOPE", "DEFAULT DEFAULT"}) {
    EXPECT_FALSE(SslPrincipalMapper::parse(bad).ok()) << bad;
  }
}

Result<BrokerConfig> config(std::vector<std::string> lines) { return parse_config("", lines); }

TEST(SecurityConfig, ListenersGetTheirProtocolFromTheMap) {
  auto c = config({"listeners=PLAINTEXT://127.0.0.1:0,CLIENT://127.0.0.1:0,SASL_SSL://:0",
                   "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CLIENT:SASL_PLAINTEXT,"
                   "SASL_SSL:SASL_SSL"});
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_EQ(c->listeners.size(), 3u);
  EXPECT_EQ(c->listeners[0].protocol, SecurityProtocol::plaintext);
  EXPECT_EQ(c->listeners[1].protocol, SecurityProtocol::sasl_plaintext);
  EXPECT_EQ(c->listeners[2].protocol, SecurityProtocol::sasl_ssl);

  auto unmapped = config({"listeners=INTERNAL://127.0.0.1:0"});
  ASSERT_FALSE(unmapped.ok());
  EXPECT_NE(unmapped.status().message().find("listener.security.protocol.map"), std::string::npos);
  EXPECT_FALSE(config({"listener.security.protocol.map=A:TLS"}).ok());
  EXPECT_FALSE(config({"inter.broker.listener.name=NOPE"}).ok());
}

TEST(SecurityConfig, PerListenerOverridesWinAndAreChecked) {
  auto c = config({"listeners=SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0", "ssl.client.auth=none",
                   "listener.name.ssl.ssl.client.auth=required",
                   "listener.name.sasl_ssl.plain.sasl.jaas.config=M required user_a=\"b\";",
                   "sasl.enabled.mechanisms=PLAIN",
                   "listener.name.sasl_ssl.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512"});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(listener_value(*c, "SSL", "ssl.client.auth"), "required");
  EXPECT_EQ(listener_value(*c, "SASL_SSL", "ssl.client.auth"), "none");
  EXPECT_EQ(listener_mechanisms(*c, "SASL_SSL"),
            (std::vector<std::string>{"PLAIN", "SCRAM-SHA-512"}));
  EXPECT_EQ(listener_mechanisms(*c, "SSL"), (std::vector<std::string>{"PLAIN"}));

  EXPECT_FALSE(config({"listener.name.ssl.ssl.client.auth=always"}).ok());
  EXPECT_FALSE(config({"listener.name.ssl.log.dirs=/tmp"}).ok());  // not a per-listener key
  EXPECT_FALSE(config({"listener.name.x.plain.sasl.jaas.config=broken"}).ok());
  EXPECT_FALSE(config({"sasl.enabled.mechanisms=GSSAPI"}).ok());
  EXPECT_FALSE(config({"ssl.keystore.type=JKS"}).ok());
}

TEST(SecurityConfig, MetricsEndpointKeys) {
  auto c = config({"metrics.ssl.enabled=true", "metrics.ssl.client.auth=requested",
                   "metrics.basic.auth.user=prom", "metrics.basic.auth.password=p:w"});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->metrics_ssl_enabled);
  EXPECT_EQ(c->metrics_basic_auth_user, "prom");
  EXPECT_EQ(c->metrics_basic_auth_password, "p:w");
  EXPECT_FALSE(config({}).value().metrics_ssl_enabled);

  // Basic auth takes both or neither; a user cannot hold the ':' that ends it (RFC 7617).
  auto only_user = config({"metrics.basic.auth.user=prom"});
  ASSERT_FALSE(only_user.ok());
  EXPECT_NE(only_user.status().message().find("config metrics.basic.auth.password"),
            std::string::npos)
      << only_user.status().message();
  auto only_password = config({"metrics.basic.auth.password=secret"});
  ASSERT_FALSE(only_password.ok());
  EXPECT_NE(only_password.status().message().find("config metrics.basic.auth.user"),
            std::string::npos);
  EXPECT_EQ(only_password.status().message().find("secret"), std::string::npos);
  EXPECT_FALSE(config({"metrics.basic.auth.user=a:b", "metrics.basic.auth.password=c"}).ok());
  EXPECT_FALSE(config({"metrics.ssl.client.auth=always"}).ok());
  EXPECT_FALSE(config({"metrics.ssl.enabled=yes"}).ok());

  // Secrets are never described (DescribeConfigs returns no value for sensitive keys).
  for (const char* k : {"metrics.basic.auth.user", "metrics.basic.auth.password",
                        "metrics.ssl.keystore.key", "metrics.ssl.key.password"}) {
    const BrokerKeyDef* d = find_broker_key(k);
    ASSERT_NE(d, nullptr) << k;
    EXPECT_TRUE(d->sensitive()) << k;
  }
  EXPECT_FALSE(find_broker_key("metrics.ssl.keystore.location")->sensitive());
}

class MapCredentials : public CredentialStore {
 public:
  std::optional<sasl::ScramCredential> scram(sasl::ScramMechanism m,
                                             const std::string& user) const override {
    auto it = creds.find({m, user});
    if (it == creds.end()) return std::nullopt;
    return it->second;
  }
  std::map<std::pair<sasl::ScramMechanism, std::string>, sasl::ScramCredential> creds;
};

std::unique_ptr<SaslAuthenticator> authenticator(const CredentialStore* creds) {
  auto c = config({"listeners=SASL_PLAINTEXT://127.0.0.1:0",
                   "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
                   "sasl.jaas.config=M required user_alice=\"alice-secret\";",
                   "connections.max.reauth.ms=60000"});
  EXPECT_TRUE(c.ok()) << c.status().message();
  auto a = SaslAuthenticator::create(*c, creds);
  EXPECT_TRUE(a.ok());
  return std::move(*a);
}

SaslStep plain(const SaslAuthenticator& a, std::string_view token) {
  auto ex = a.start("SASL_PLAINTEXT", "PLAIN");
  return a.step(*ex, token);
}

TEST(SaslAuthenticator, PlainAgainstJaasUsersThenScramCredentials) {
  MapCredentials creds;
  creds.creds[{sasl::ScramMechanism::sha256, "carol"}] =
      *sasl::make_scram_credential(sasl::ScramMechanism::sha256, "carol-pw", 4096);
  auto a = authenticator(&creds);
  EXPECT_EQ(a->max_reauth_ms("SASL_PLAINTEXT"), 60000);
  EXPECT_TRUE(a->enabled("SASL_PLAINTEXT", "SCRAM-SHA-512"));
  EXPECT_FALSE(a->enabled("SASL_PLAINTEXT", "GSSAPI"));
  EXPECT_EQ(a->start("SASL_PLAINTEXT", "GSSAPI"), nullptr);

  auto ok = plain(*a, std::string_view("\0alice\0alice-secret", 19));
  EXPECT_TRUE(ok.complete);
  EXPECT_FALSE(ok.failed);
  EXPECT_EQ(ok.user, "alice");
  EXPECT_TRUE(plain(*a, std::string_view("\0alice\0alice-secreT", 19)).failed);
  EXPECT_TRUE(plain(*a, std::string_view("\0mallory\0x", 10)).failed);
  EXPECT_TRUE(plain(*a, "garbage").failed);
  // A user the JAAS config does not know: checked against its SCRAM credential.
  auto carol = plain(*a, std::string_view("\0carol\0carol-pw", 15));
  EXPECT_TRUE(carol.complete) << "PLAIN with a SCRAM user's password";
  EXPECT_TRUE(plain(*a, std::string_view("\0carol\0carol-px", 15)).failed);

  // One token per PLAIN exchange.
  auto ex = a->start("SASL_PLAINTEXT", "PLAIN");
  EXPECT_TRUE(a->step(*ex, std::string_view("\0alice\0alice-secret", 19)).complete);
  EXPECT_TRUE(a->step(*ex, std::string_view("\0alice\0alice-secret", 19)).failed);
}

TEST(SaslAuthenticator, ScramExchangeWithTheClient) {
  MapCredentials creds;
  for (auto m : {sasl::ScramMechanism::sha256, sasl::ScramMechanism::sha512}) {
    creds.creds[{m, "dave"}] = *sasl::make_scram_credential(m, "dave-pw", 4096);
  }
  auto a = authenticator(&creds);
  for (auto [name, m] : {std::pair{"SCRAM-SHA-256", sasl::ScramMechanism::sha256},
                         std::pair{"SCRAM-SHA-512", sasl::ScramMechanism::sha512}}) {
    for (const char* pw : {"dave-pw", "wrong"}) {
      sasl::ScramClient client(m, "dave", pw);
      auto ex = a->start("SASL_PLAINTEXT", name);
      ASSERT_NE(ex, nullptr);
      auto first = a->step(*ex, client.first());
      ASSERT_FALSE(first.failed);
      EXPECT_FALSE(first.complete);
      auto final_msg = client.final(first.response);
      ASSERT_TRUE(final_msg.ok());
      auto last = a->step(*ex, *final_msg);
      if (std::string(pw) == "dave-pw") {
        ASSERT_TRUE(last.complete) << name;
        EXPECT_EQ(last.user, "dave");
        EXPECT_TRUE(client.verify(last.response).ok());
      } else {
        EXPECT_TRUE(last.failed) << name;
      }
    }
  }
  // No store at all: every SCRAM user is unknown.
  auto none = authenticator(nullptr);
  sasl::ScramClient client(sasl::ScramMechanism::sha256, "dave", "dave-pw");
  auto ex = none->start("SASL_PLAINTEXT", "SCRAM-SHA-256");
  EXPECT_TRUE(none->step(*ex, client.first()).failed);
}

TEST(PasswordCheck, MatchesScramUsersAndRemembersOnlyMatchesWhileTheCredentialStands) {
  MapCredentials creds;
  creds.creds[{sasl::ScramMechanism::sha256, "erin"}] =
      *sasl::make_scram_credential(sasl::ScramMechanism::sha256, "erin:pw", 4096);
  PasswordCheck check(&creds);
  EXPECT_EQ(check.remembered("erin", "erin:pw"), std::nullopt) << "a first login derives";
  EXPECT_TRUE(check.matches("erin", "erin:pw"));  // a password may hold ':'
  EXPECT_EQ(check.derivations(), 1u);
  EXPECT_EQ(check.remembered("erin", "erin:pw"), true);
  EXPECT_TRUE(check.matches("erin", "erin:pw"));
  EXPECT_EQ(check.derivations(), 1u) << "a remembered match derives nothing";
  // Only remembered matches are at hand: a guess or an unknown user needs the derivation.
  EXPECT_EQ(check.remembered("erin", "erin:px"), std::nullopt);
  EXPECT_EQ(check.remembered("nobody", "erin:pw"), std::nullopt);
  // Failures are never remembered: every guess pays the derivation.
  EXPECT_FALSE(check.matches("erin", "erin:px"));
  EXPECT_FALSE(check.matches("erin", "erin:px"));
  EXPECT_EQ(check.derivations(), 3u);
  EXPECT_FALSE(check.matches("nobody", "erin:pw"));
  EXPECT_FALSE(check.matches("", ""));
  EXPECT_EQ(check.derivations(), 5u) << "an unknown user costs a derivation too";
  // The password changes (same salt and iterations, as a client-side salted upsertion may
  // keep them): the remembered match no longer counts.
  const auto old = creds.creds[{sasl::ScramMechanism::sha256, "erin"}];
  creds.creds[{sasl::ScramMechanism::sha256, "erin"}] =
      *sasl::make_scram_credential(sasl::ScramMechanism::sha256, "new", 4096, old.salt);
  EXPECT_EQ(check.remembered("erin", "erin:pw"), false) << "remembered for the old key";
  EXPECT_FALSE(check.matches("erin", "erin:pw"));
  EXPECT_TRUE(check.matches("erin", "new"));
  // Deleted: nothing matches.
  creds.creds.clear();
  EXPECT_FALSE(check.matches("erin", "new"));
  // SHA-512's credential decides when the user has both.
  creds.creds[{sasl::ScramMechanism::sha512, "fay"}] =
      *sasl::make_scram_credential(sasl::ScramMechanism::sha512, "five-twelve", 4096);
  creds.creds[{sasl::ScramMechanism::sha256, "fay"}] =
      *sasl::make_scram_credential(sasl::ScramMechanism::sha256, "two-five-six", 4096);
  EXPECT_TRUE(check.matches("fay", "five-twelve"));
  EXPECT_FALSE(check.matches("fay", "two-five-six"));
  EXPECT_FALSE(PasswordCheck(nullptr).matches("fay", "five-twelve"));
}

TEST(PasswordCheck, AFloodOfWrongPasswordsWaitsInABoundedQueueAndRememberedMatchesPassIt) {
  MapCredentials creds;
  creds.creds[{sasl::ScramMechanism::sha512, "gus"}] =
      *sasl::make_scram_credential(sasl::ScramMechanism::sha512, "right", 8192);
  PasswordCheck check(&creds, /*max_waiting=*/2);
  ASSERT_TRUE(check.matches("gus", "right"));  // remembered from now on
  ASSERT_EQ(check.derivations(), 1u);
  // 12 threads of wrong passwords at once, several rounds: one derives at a time, two wait,
  // the others are refused without a derivation.
  constexpr int kThreads = 12, kRounds = 4;
  std::atomic<int> matched{0};
  std::atomic<bool> flooding{true};
  std::vector<std::thread> flood;
  std::latch start(kThreads + 1);
  for (int t = 0; t < kThreads; ++t) {
    flood.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int r = 0; r < kRounds; ++r) {
        if (check.matches(t % 2 ? "gus" : "nobody", "wrong-" + std::to_string(t))) ++matched;
      }
    });
  }
  // Meanwhile the remembered login passes without waiting for a turn.
  std::thread remembered([&] {
    start.arrive_and_wait();
    while (flooding.load()) {
      if (!check.matches("gus", "right")) ADD_FAILURE() << "a remembered match was refused";
    }
  });
  for (auto& t : flood) t.join();
  flooding = false;
  remembered.join();
  EXPECT_EQ(matched.load(), 0);
  const size_t attempts = kThreads * kRounds;
  EXPECT_GT(check.busy_refusals(), 0u) << "12 concurrent checks, at most 3 may queue";
  EXPECT_EQ(check.derivations() - 1 + check.busy_refusals(), attempts)
      << "a refused check runs no derivation";
  EXPECT_GE(check.derivations() - 1, 3u) << "the queue admits the running check and 2 waiting";
  // After the flood every turn is free again: the next checks derive, none is refused.
  const size_t refused = check.busy_refusals(), derived = check.derivations();
  EXPECT_FALSE(check.matches("gus", "wrong"));
  EXPECT_FALSE(check.matches("nobody", "wrong"));
  EXPECT_EQ(check.derivations(), derived + 2);
  EXPECT_EQ(check.busy_refusals(), refused);
  // Another check (the SASL authenticator's beside the registry's) takes the same turn.
  PasswordCheck other(&creds);
  EXPECT_TRUE(other.matches("gus", "right"));
}

}  // namespace
}  // namespace strata::broker::security
