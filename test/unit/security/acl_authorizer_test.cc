// The durable ACL authorizers (broker/security/acl_authorizer.h): a single node's file survives a
// reopen byte for byte, rejects a corrupt line; a cluster's etcd-backed stores (on the in-memory
// coordination) agree across brokers, follow removals, and re-read everything when etcd compacted
// the history a watch needed. Also the text form of bindings, KIP-679's authorize_any, and the
// audit's rate limit (authorize.h).
#include "broker/security/acl_authorizer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "broker/security/acl_text.h"
#include "broker/security/authorize.h"
#include "storage/env.h"
#include "storage/file_util.h"
#include "test/unit/cluster/fake_coordination.h"
#include "test/unit/storage/test_util.h"

namespace strata::broker::security {
namespace {

using storage::testing::TempDir;
constexpr auto T = ResourceType::topic;

AclBinding binding(std::string name, PatternType p, std::string who, AclOperation op,
                   AclPermission perm = AclPermission::allow, std::string host = "*") {
  return {T, std::move(name), p, std::move(who), std::move(host), op, perm};
}

std::unique_ptr<FileAclAuthorizer> open_file(const TempDir& dir, AuthorizerConfig c = {}) {
  auto a = FileAclAuthorizer::open(storage::default_env(), dir.path(), std::move(c));
  EXPECT_TRUE(a.ok()) << a.status().to_string();
  return a.ok() ? std::move(*a) : nullptr;
}

TEST(AclText, RoundTripsOddNames) {
  for (const auto& b :
       {binding("orders", PatternType::literal, "User:alice", AclOperation::read),
        binding("a b/c%d\te", PatternType::prefixed, "User:x y", AclOperation::describe_configs,
                AclPermission::deny, "10.0.0.1"),
        AclBinding{ResourceType::transactional_id, "tx\xc3\xa9", PatternType::literal,
                   "User:CN=a,O=b", "*", AclOperation::write, AclPermission::allow}}) {
    const std::string line = encode_line(b);
    EXPECT_EQ(line.find('/'), std::string::npos) << "flat etcd key: " << line;
    auto back = decode_line(line);
    ASSERT_TRUE(back.has_value()) << line;
    EXPECT_EQ(*back, b);
  }
  EXPECT_FALSE(decode_line("TOPIC\tLITERAL\tt\tUser:a\t*\tREAD").has_value()) << "6 fields";
  EXPECT_FALSE(decode_line("TOPIC\tLITERAL\tt\tnocolon\t*\tREAD\tALLOW").has_value());
  EXPECT_FALSE(decode_line("TOPIC\tANY\tt\tUser:a\t*\tREAD\tALLOW").has_value());
  EXPECT_FALSE(decode_line("TOPIC\tLITERAL\tt%4\tUser:a\t*\tREAD\tALLOW").has_value());
  EXPECT_EQ(parse_operation("describe-configs"), AclOperation::describe_configs);
  EXPECT_EQ(parse_resource_type("transactional_id"), ResourceType::transactional_id);
}

TEST(FileAclAuthorizer, SurvivesReopen) {
  TempDir dir;
  const auto read = binding("orders", PatternType::literal, "User:alice", AclOperation::read);
  const auto pre = binding("pay-", PatternType::prefixed, "User:bob", AclOperation::write);
  const auto no =
      binding("pay-x", PatternType::literal, "User:bob", AclOperation::write, AclPermission::deny);
  {
    auto a = open_file(dir);
    ASSERT_TRUE(a);
    EXPECT_TRUE(a->acls({}).empty());
    ASSERT_TRUE(a->create({read, pre, no}).ok());
    ASSERT_TRUE(a->create({read}).ok()) << "adding a present binding is a no-op";
    EXPECT_EQ(a->acls({}).size(), 3u);
  }
  auto a = open_file(dir);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->acls({}), (std::vector<AclBinding>{read, pre, no}));
  EXPECT_TRUE(a->authorize("User:alice", "h", AclOperation::read, T, "orders"));
  EXPECT_TRUE(a->authorize("User:bob", "h", AclOperation::write, T, "pay-eu"));
  EXPECT_FALSE(a->authorize("User:bob", "h", AclOperation::write, T, "pay-x")) << "DENY wins";
  AclFilter bobs;
  bobs.principal = "User:bob";
  auto removed = a->remove(bobs);
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(removed->size(), 2u);
  a.reset();
  a = open_file(dir);
  EXPECT_EQ(a->acls({}), (std::vector<AclBinding>{read})) << "the removal was durable";
  EXPECT_FALSE(a->authorize("User:bob", "h", AclOperation::write, T, "pay-eu"));
}

TEST(FileAclAuthorizer, RefusesACorruptFile) {
  TempDir dir;
  ASSERT_TRUE(storage::write_file_atomically(storage::default_env(), dir.path() + "/acls",
                                             "# header\nTOPIC\tLITERAL\tt\n")
                  .ok());
  auto a = FileAclAuthorizer::open(storage::default_env(), dir.path(), {});
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), Errc::corruption);
}

TEST(FileAclAuthorizer, SuperUsersAndAllowEveryone) {
  TempDir dir;
  auto a = open_file(dir, {{"User:admin"}, true});
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->authorize("User:x", "h", AclOperation::write, T, "free")) << "no ACL at all";
  ASSERT_TRUE(
      a->create({binding("guarded", PatternType::literal, "User:alice", AclOperation::read)}).ok());
  EXPECT_FALSE(a->authorize("User:x", "h", AclOperation::read, T, "guarded"))
      << "an ACL exists for the resource: only it counts";
  EXPECT_TRUE(a->authorize("User:admin", "h", AclOperation::del, T, "guarded"));
}

TEST(AclStore, AuthorizeAnyAsKip679) {
  AclStore s;
  EXPECT_FALSE(s.authorize_any("User:a", "h", AclOperation::write, T));
  s.add({binding("t1", PatternType::literal, "User:a", AclOperation::write)});
  EXPECT_TRUE(s.authorize_any("User:a", "h", AclOperation::write, T));
  EXPECT_FALSE(s.authorize_any("User:b", "h", AclOperation::write, T));
  EXPECT_FALSE(s.authorize_any("User:a", "h", AclOperation::read, T)) << "no implied ops";
  s.add({binding("t", PatternType::prefixed, "User:a", AclOperation::write, AclPermission::deny)});
  EXPECT_FALSE(s.authorize_any("User:a", "h", AclOperation::write, T))
      << "a DENY prefix covers the only ALLOW";
  s.add({binding("u", PatternType::prefixed, "User:*", AclOperation::all)});
  EXPECT_TRUE(s.authorize_any("User:a", "h", AclOperation::write, T));
  s.add({binding("*", PatternType::literal, "User:a", AclOperation::write, AclPermission::deny)});
  EXPECT_FALSE(s.authorize_any("User:a", "h", AclOperation::write, T)) << "wildcard DENY";
  AclStore super({{"User:root"}, false});
  EXPECT_TRUE(super.authorize_any("User:root", "h", AclOperation::write, T));
  AclStore everyone({{}, true});
  EXPECT_TRUE(everyone.authorize_any("User:a", "h", AclOperation::write, T));
}

TEST(DenialAudit, OneLinePerIntervalWithACount) {
  DenialAudit audit(1000);
  EXPECT_EQ(audit.admit("a", 10'000), 0) << "the first denial is logged";
  EXPECT_EQ(audit.admit("a", 10'100), -1);
  EXPECT_EQ(audit.admit("a", 10'900), -1);
  EXPECT_EQ(audit.admit("b", 10'900), 0) << "per key";
  EXPECT_EQ(audit.admit("a", 11'000), 2) << "the next line counts what it stood for";
  EXPECT_EQ(audit.admit("a", 11'500), -1);
  EXPECT_EQ(audit.admit("a", 20'000), 1);
}

// Polls `pred` for up to 5 s (watch delivery is asynchronous on another broker).
template <typename Pred>
bool eventually(Pred pred) {
  for (int i = 0; i < 500; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pred();
}

TEST(ClusterAclAuthorizer, BrokersAgreeThroughEtcd) {
  cluster::FakeCoordination etcd;
  auto one = ClusterAclAuthorizer::open(etcd, "/strata", {});
  auto two = ClusterAclAuthorizer::open(etcd, "/strata/", {});
  ASSERT_TRUE(one.ok() && two.ok());
  const auto b = binding("orders", PatternType::literal, "User:alice", AclOperation::read);
  ASSERT_TRUE((*one)->create({b}).ok());
  EXPECT_TRUE((*one)->authorize("User:alice", "h", AclOperation::read, T, "orders"))
      << "read-your-writes on the broker that created it";
  EXPECT_TRUE(eventually(
      [&] { return (*two)->authorize("User:alice", "h", AclOperation::read, T, "orders"); }));
  auto keys = etcd.range("/strata/acls/", cluster::prefix_end("/strata/acls/"));
  ASSERT_TRUE(keys.ok());
  ASSERT_EQ(keys->kvs.size(), 1u);
  EXPECT_EQ(keys->kvs[0].key, (*one)->key_of(b));
  // A third broker started later reads what exists.
  auto three = ClusterAclAuthorizer::open(etcd, "/strata", {});
  ASSERT_TRUE(three.ok());
  EXPECT_EQ((*three)->acls({}), (std::vector<AclBinding>{b}));
  auto removed = (*two)->remove({});
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(removed->size(), 1u);
  EXPECT_TRUE(eventually([&] { return (*one)->acls({}).empty() && (*three)->acls({}).empty(); }));
  EXPECT_FALSE((*one)->authorize("User:alice", "h", AclOperation::read, T, "orders"));
  // Another cluster's prefix is not ours.
  auto other = ClusterAclAuthorizer::open(etcd, "/other", {});
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE((*other)->create({b}).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE((*one)->acls({}).empty());
}

// A Coordination whose first watch() finds its start revision compacted away (two bindings were
// written meanwhile), as a watch resuming after a long etcd outage would.
class CompactBeforeFirstWatch : public cluster::Coordination {
 public:
  CompactBeforeFirstWatch(cluster::FakeCoordination& fake, std::vector<std::string> keys)
      : fake_(fake), keys_(std::move(keys)) {}
  Result<cluster::RangeResult> range(const std::string& k, const std::string& e) override {
    return fake_.range(k, e);
  }
  Result<int64_t> put(const std::string& k, const std::string& v, int64_t lease) override {
    return fake_.put(k, v, lease);
  }
  Result<int64_t> delete_range(const std::string& k, const std::string& e) override {
    return fake_.delete_range(k, e);
  }
  Result<cluster::TxnResult> txn(const std::vector<cluster::Compare>& c,
                                 const std::vector<cluster::TxnOp>& s,
                                 const std::vector<cluster::TxnOp>& f) override {
    return fake_.txn(c, s, f);
  }
  Result<int64_t> grant_lease(int64_t ttl) override { return fake_.grant_lease(ttl); }
  Status keep_alive(int64_t lease) override { return fake_.keep_alive(lease); }
  Status revoke_lease(int64_t lease) override { return fake_.revoke_lease(lease); }
  Result<std::unique_ptr<cluster::Watch>> watch(const std::string& k, const std::string& e,
                                                int64_t start, WatchFn fn) override {
    if (watches_++ == 0) {
      int64_t rev = 0;
      for (const auto& key : keys_) rev = *fake_.put(key, "{}");
      EXPECT_TRUE(fake_.compact(rev).ok());
    }
    return fake_.watch(k, e, start, std::move(fn));
  }
  int watches() const { return watches_; }

 private:
  cluster::FakeCoordination& fake_;
  const std::vector<std::string> keys_;
  std::atomic<int> watches_{0};
};

TEST(ClusterAclAuthorizer, ReReadsWhenTheWatchedHistoryWasCompacted) {
  cluster::FakeCoordination etcd;
  const auto a = binding("a", PatternType::literal, "User:a", AclOperation::read);
  const auto b = binding("b", PatternType::prefixed, "User:b", AclOperation::write);
  CompactBeforeFirstWatch coordination(etcd,
                                       {"/strata/acls/" + ClusterAclAuthorizer::encode_key(a),
                                        "/strata/acls/" + ClusterAclAuthorizer::encode_key(b)});
  auto authorizer = ClusterAclAuthorizer::open(coordination, "/strata", {});
  ASSERT_TRUE(authorizer.ok());
  EXPECT_TRUE(eventually([&] { return (*authorizer)->acls({}).size() == 2; }))
      << "the compaction ended the first watch: everything is read again";
  EXPECT_GE(coordination.watches(), 2);
  EXPECT_TRUE((*authorizer)->authorize("User:b", "h", AclOperation::write, T, "bx"));
  // And it keeps following: a change after the re-read arrives through the new watch.
  auto writer = ClusterAclAuthorizer::open(etcd, "/strata", {});
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->remove({}).ok());
  EXPECT_TRUE(eventually([&] { return (*authorizer)->acls({}).empty(); }));
}

}  // namespace
}  // namespace strata::broker::security
