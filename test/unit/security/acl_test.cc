// Kafka's ACL rules (broker/security/acl.h): by example, and against a reference that reads the
// rules straight off the spec and scans every binding, on random ACL sets and requests.
#include "broker/security/acl.h"

#include <gtest/gtest.h>

#include <random>

namespace strata::broker::security {
namespace {

AclBinding allow(ResourceType t, std::string name, PatternType p, std::string who, AclOperation op,
                 std::string host = "*") {
  return {t, std::move(name), p, std::move(who), std::move(host), op, AclPermission::allow};
}
AclBinding deny(ResourceType t, std::string name, PatternType p, std::string who, AclOperation op,
                std::string host = "*") {
  return {t, std::move(name), p, std::move(who), std::move(host), op, AclPermission::deny};
}

constexpr auto T = ResourceType::topic;
constexpr auto L = PatternType::literal;
constexpr auto P = PatternType::prefixed;

TEST(Acl, ByExample) {
  AclStore s({{"User:admin"}, false});
  s.add({allow(T, "orders", L, "User:alice", AclOperation::read),
         allow(T, "pay-", P, "User:bob", AclOperation::write),
         deny(T, "pay-secret", L, "User:bob", AclOperation::write),
         allow(T, "*", L, "User:carol", AclOperation::describe),
         allow(ResourceType::group, "g", L, "User:*", AclOperation::read, "10.0.0.1")});
  EXPECT_TRUE(s.authorize("User:alice", "1.2.3.4", AclOperation::read, T, "orders"));
  EXPECT_TRUE(s.authorize("User:alice", "1.2.3.4", AclOperation::describe, T, "orders"))
      << "READ implies DESCRIBE";
  EXPECT_FALSE(s.authorize("User:alice", "1.2.3.4", AclOperation::write, T, "orders"));
  EXPECT_TRUE(s.authorize("User:bob", "h", AclOperation::write, T, "pay-eu"));
  EXPECT_FALSE(s.authorize("User:bob", "h", AclOperation::write, T, "pay-secret")) << "DENY wins";
  EXPECT_TRUE(s.authorize("User:bob", "h", AclOperation::describe, T, "pay-secret"))
      << "a DENY of WRITE does not deny DESCRIBE";
  EXPECT_TRUE(s.authorize("User:carol", "h", AclOperation::describe, T, "anything"));
  EXPECT_FALSE(s.authorize("User:carol", "h", AclOperation::read, T, "anything"));
  EXPECT_TRUE(s.authorize("User:zed", "10.0.0.1", AclOperation::read, ResourceType::group, "g"));
  EXPECT_FALSE(s.authorize("User:zed", "10.0.0.2", AclOperation::read, ResourceType::group, "g"));
  EXPECT_TRUE(s.authorize("User:admin", "h", AclOperation::del, T, "orders")) << "super user";
  EXPECT_FALSE(
      s.authorize("User:alice", "h", AclOperation::read, ResourceType::cluster, kClusterName))
      << "no ACL and allow.everyone.if.no.acl.found=false";

  AclStore open({{}, true});
  open.add({allow(T, "orders", L, "User:alice", AclOperation::read)});
  EXPECT_TRUE(open.authorize("User:x", "h", AclOperation::write, T, "other")) << "no ACL found";
  EXPECT_FALSE(open.authorize("User:x", "h", AclOperation::read, T, "orders"))
      << "an ACL exists for the resource";
}

TEST(Acl, FiltersListAndRemove) {
  AclStore s;
  EXPECT_EQ(s.add({allow(T, "a", L, "User:x", AclOperation::read),
                   allow(T, "a", L, "User:x", AclOperation::read),
                   allow(T, "ab", P, "User:y", AclOperation::write),
                   allow(T, "*", L, "User:z", AclOperation::read)}),
            3u);
  AclFilter match;
  match.resource_type = T;
  match.resource_name = "abc";
  match.pattern = PatternType::match;
  EXPECT_EQ(s.list(match).size(), 2u) << "the prefix and the wildcard";
  AclFilter by_user;
  by_user.principal = "User:x";
  EXPECT_EQ(s.remove(by_user).size(), 1u);
  EXPECT_EQ(s.size(), 2u);
  EXPECT_EQ(s.list({}).size(), 2u);
  EXPECT_FALSE(valid_binding(allow(T, "*", P, "User:x", AclOperation::read)));
  EXPECT_FALSE(valid_binding(allow(T, "a", L, "alice", AclOperation::read)));
  EXPECT_FALSE(valid_binding(allow(T, "a", PatternType::match, "User:a", AclOperation::read)));
  EXPECT_TRUE(valid_binding(allow(T, "a", L, "User:a", AclOperation::read)));
}

// The reference: the spec, one binding at a time.
bool reference(const std::vector<AclBinding>& acls, const AuthorizerConfig& c,
               const std::string& who, const std::string& host, AclOperation op, ResourceType t,
               const std::string& name) {
  if (c.super_users.count(who)) return true;
  bool any = false, denied = false, allowed = false;
  for (const auto& b : acls) {
    const bool res =
        b.resource_type == t &&
        (b.pattern == PatternType::literal ? (b.resource_name == name || b.resource_name == "*")
                                           : name.rfind(b.resource_name, 0) == 0);
    if (!res) continue;
    any = true;
    if (!((b.principal == who || b.principal == "User:*") && (b.host == host || b.host == "*"))) {
      continue;
    }
    const bool exact = b.operation == op || b.operation == AclOperation::all;
    std::set<AclOperation> implied;
    if (op == AclOperation::describe) {
      implied = {AclOperation::read, AclOperation::write, AclOperation::del, AclOperation::alter};
    }
    if (op == AclOperation::describe_configs) implied = {AclOperation::alter_configs};
    if (b.permission == AclPermission::deny && exact) denied = true;
    if (b.permission == AclPermission::allow && (exact || implied.count(b.operation))) {
      allowed = true;
    }
  }
  return !denied && (allowed || (!any && c.allow_everyone_if_no_acl_found));
}

TEST(AclModel, MatchesTheSpecOnRandomAclSets) {
  const std::vector<std::string> names = {"a", "ab", "abc", "b", "*"};
  const std::vector<std::string> prefixes = {"a", "ab", "b"};
  const std::vector<std::string> users = {"User:alice", "User:bob", "User:*"};
  const std::vector<std::string> hosts = {"*", "10.0.0.1"};
  std::mt19937 rng(679);
  auto pick = [&](const auto& v) { return v[rng() % v.size()]; };
  int permitted = 0, refused = 0;
  for (int round = 0; round < 300; ++round) {
    AuthorizerConfig config;
    config.allow_everyone_if_no_acl_found = rng() % 2;
    if (rng() % 4 == 0) config.super_users = {"User:bob"};
    AclStore store(config);
    std::vector<AclBinding> acls;
    for (int i = 0, n = static_cast<int>(rng() % 8); i < n; ++i) {
      AclBinding b;
      b.resource_type = rng() % 2 ? ResourceType::topic : ResourceType::group;
      b.pattern = rng() % 3 == 0 ? PatternType::prefixed : PatternType::literal;
      b.resource_name = b.pattern == PatternType::prefixed ? pick(prefixes) : pick(names);
      b.principal = pick(users);
      b.host = pick(hosts);
      b.operation = static_cast<AclOperation>(2 + rng() % 11);
      b.permission = rng() % 3 == 0 ? AclPermission::deny : AclPermission::allow;
      if (std::find(acls.begin(), acls.end(), b) == acls.end()) acls.push_back(b);
      store.add({b});
    }
    for (int q = 0; q < 50; ++q) {
      const std::string who = rng() % 5 == 0 ? "User:carol" : pick(users);
      const std::string host = rng() % 2 ? "10.0.0.1" : "10.0.0.2";
      const auto op = static_cast<AclOperation>(3 + rng() % 10);
      const auto type = rng() % 2 ? ResourceType::topic : ResourceType::group;
      const std::string name = pick(names) == "*" ? "zzz" : pick(names);
      const bool want = reference(acls, config, who, host, op, type, name);
      ASSERT_EQ(store.authorize(who, host, op, type, name), want)
          << who << "@" << host << " op " << int(op) << " on " << name << " round " << round;
      (want ? permitted : refused)++;
    }
  }
  EXPECT_GT(permitted, 1000);
  EXPECT_GT(refused, 1000);
}

}  // namespace
}  // namespace strata::broker::security
