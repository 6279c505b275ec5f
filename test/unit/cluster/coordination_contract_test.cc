// The Coordination contract, run against the in-memory fake and a real etcd (one process for the
// binary): revisions and versions, prefix ranges, compare-and-swap, leases, watches from a
// revision and compaction. A random-operation test applies the same sequence to both and
// compares every answer, so the fake other unit tests rely on behaves like etcd.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

#include "broker/cluster/etcd_client.h"
#include "test/unit/cluster/etcd_process.h"
#include "test/unit/cluster/fake_coordination.h"

namespace strata::broker::cluster {
namespace {

using namespace std::chrono_literals;

testing::EtcdProcess* g_etcd = nullptr;

std::unique_ptr<EtcdClient> etcd_client(std::vector<std::string> endpoints) {
  EtcdOptions o;
  for (const auto& e : endpoints) o.endpoints.push_back(*parse_etcd_endpoint(e));
  o.request_timeout_ms = 5000;
  return std::make_unique<EtcdClient>(o);
}

class EtcdEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    g_etcd = new testing::EtcdProcess();
    ASSERT_TRUE(g_etcd->start()) << "cannot start " << g_etcd->binary()
                                 << " (tools/setup.sh installs etcd-server)";
  }
  void TearDown() override {
    delete g_etcd;
    g_etcd = nullptr;
  }
};

// Collects watch batches; waits for a count of events.
class Collector {
 public:
  Coordination::WatchFn fn() {
    return [this](const WatchBatch& b) {
      std::lock_guard lk(mu_);
      if (b.compact_revision > 0) compacted_ = b.compact_revision;
      for (const auto& e : b.events) events_.push_back(e);
      cv_.notify_all();
    };
  }
  std::vector<WatchEvent> wait_events(size_t n, std::chrono::milliseconds limit = 5s) {
    std::unique_lock lk(mu_);
    cv_.wait_for(lk, limit, [&] { return events_.size() >= n; });
    return events_;
  }
  int64_t wait_compacted(std::chrono::milliseconds limit = 5s) {
    std::unique_lock lk(mu_);
    cv_.wait_for(lk, limit, [&] { return compacted_ > 0; });
    return compacted_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<WatchEvent> events_;
  int64_t compacted_ = 0;
};

enum class Kind { fake, etcd };

class Contract : public ::testing::TestWithParam<Kind> {
 protected:
  void SetUp() override {
    if (GetParam() == Kind::fake) {
      auto f = std::make_unique<FakeCoordination>();
      fake_ = f.get();
      c_ = std::move(f);
    } else {
      auto e = etcd_client({g_etcd->endpoint()});
      etcd_ = e.get();
      c_ = std::move(e);
    }
    // Tests share one etcd: each gets its own key prefix.
    p_ = std::string("/t/") + ::testing::UnitTest::GetInstance()->current_test_info()->name() + "/";
    for (auto& ch : p_) ch = ch == '\0' ? '_' : ch;
    ASSERT_TRUE(c_->delete_range(p_, prefix_end(p_)).ok());
  }
  Status compact(int64_t rev) { return fake_ ? fake_->compact(rev) : etcd_->compact(rev); }

  std::unique_ptr<Coordination> c_;
  FakeCoordination* fake_ = nullptr;
  EtcdClient* etcd_ = nullptr;
  std::string p_;
};

TEST_P(Contract, PutRangeRevisionsAndVersions) {
  auto r1 = c_->put(p_ + "a", "1");
  ASSERT_TRUE(r1.ok()) << r1.status().to_string();
  auto r2 = c_->put(p_ + "a", "2");
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(*r2, *r1 + 1);
  ASSERT_TRUE(c_->put(p_ + "b", std::string("\0\xff bytes", 8)).ok());
  ASSERT_TRUE(c_->put(p_ + "c/x", "3").ok());
  ASSERT_TRUE(c_->put(p_.substr(0, p_.size() - 1) + "0", "outside").ok());  // sorts after p_

  auto one = c_->range(p_ + "a");
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->kvs.size(), 1u);
  EXPECT_EQ(one->kvs[0].value, "2");
  EXPECT_EQ(one->kvs[0].version, 2);
  EXPECT_EQ(one->kvs[0].create_revision, *r1);
  EXPECT_EQ(one->kvs[0].mod_revision, *r2);
  EXPECT_GE(one->revision, *r2 + 2);

  auto all = c_->range(p_, prefix_end(p_));
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->kvs.size(), 3u);
  EXPECT_EQ(all->kvs[0].key, p_ + "a");
  EXPECT_EQ(all->kvs[1].key, p_ + "b");
  EXPECT_EQ(all->kvs[1].value, std::string("\0\xff bytes", 8));
  EXPECT_EQ(all->kvs[2].key, p_ + "c/x");

  auto none = c_->range(p_ + "missing");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->kvs.empty());
  ASSERT_TRUE(c_->delete_range(p_.substr(0, p_.size() - 1) + "0").ok());
}

TEST_P(Contract, DeleteRangeCountsKeys) {
  ASSERT_TRUE(c_->put(p_ + "a", "1").ok());
  ASSERT_TRUE(c_->put(p_ + "b", "1").ok());
  auto n = c_->delete_range(p_, prefix_end(p_));
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 2);
  auto again = c_->delete_range(p_ + "a");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, 0);
  // A recreated key starts over at version 1.
  ASSERT_TRUE(c_->put(p_ + "a", "x").ok());
  EXPECT_EQ(c_->range(p_ + "a")->kvs.at(0).version, 1);
}

TEST_P(Contract, CompareAndSwap) {
  const std::string k = p_ + "leader";
  auto first = c_->txn({Compare::absent(k)}, {TxnOp::put(k, "node-1")}, {TxnOp::get(k)});
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_TRUE(first->succeeded);
  auto second = c_->txn({Compare::absent(k)}, {TxnOp::put(k, "node-2")}, {TxnOp::get(k)});
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(second->succeeded);
  ASSERT_EQ(second->ranges.size(), 1u);
  ASSERT_EQ(second->ranges[0].kvs.size(), 1u);
  EXPECT_EQ(second->ranges[0].kvs[0].value, "node-1");
  const int64_t mod = second->ranges[0].kvs[0].mod_revision;

  // Stale mod_revision loses; the current one wins, and the two puts share one revision.
  auto stale = c_->txn({Compare::mod_revision_is(k, mod - 1)}, {TxnOp::put(k, "x")}, {});
  ASSERT_TRUE(stale.ok());
  EXPECT_FALSE(stale->succeeded);
  auto fresh = c_->txn({Compare::mod_revision_is(k, mod)},
                       {TxnOp::put(k, "node-3"), TxnOp::put(p_ + "epoch", "2")}, {});
  ASSERT_TRUE(fresh.ok());
  EXPECT_TRUE(fresh->succeeded);
  auto now = c_->range(p_, prefix_end(p_));
  ASSERT_EQ(now->kvs.size(), 2u);
  EXPECT_EQ(now->kvs[0].mod_revision, now->kvs[1].mod_revision);
  EXPECT_EQ(now->kvs[1].value, "node-3");

  // Value and version compares; a value compare on an absent key fails (etcd's rule).
  Compare by_value{k, Compare::Target::value, Compare::Op::equal, 0, "node-3"};
  EXPECT_TRUE(c_->txn({by_value}, {}, {})->succeeded);
  Compare absent_value{p_ + "nope", Compare::Target::value, Compare::Op::equal, 0, ""};
  EXPECT_FALSE(c_->txn({absent_value}, {}, {})->succeeded);
  Compare version_gt{k, Compare::Target::version, Compare::Op::greater, 1, {}};
  EXPECT_TRUE(c_->txn({version_gt}, {}, {})->succeeded);
  Compare version_lt{k, Compare::Target::version, Compare::Op::less, 2, {}};
  EXPECT_FALSE(c_->txn({version_lt}, {}, {})->succeeded);
}

TEST_P(Contract, LeaseRevokeDeletesItsKeys) {
  auto lease = c_->grant_lease(10);
  ASSERT_TRUE(lease.ok()) << lease.status().to_string();
  ASSERT_TRUE(c_->put(p_ + "broker/1", "alive", *lease).ok());
  ASSERT_TRUE(c_->put(p_ + "other", "stays").ok());
  EXPECT_EQ(c_->range(p_ + "broker/1")->kvs.at(0).lease, *lease);
  EXPECT_TRUE(c_->keep_alive(*lease).ok());
  Compare bound{p_ + "broker/1", Compare::Target::lease, Compare::Op::equal, *lease, {}};
  EXPECT_TRUE(c_->txn({bound}, {}, {})->succeeded);

  ASSERT_TRUE(c_->revoke_lease(*lease).ok());
  EXPECT_TRUE(c_->range(p_ + "broker/1")->kvs.empty());
  EXPECT_EQ(c_->range(p_ + "other")->kvs.size(), 1u);
  EXPECT_EQ(c_->keep_alive(*lease).code(), Errc::not_found);
  EXPECT_EQ(c_->put(p_ + "late", "x", *lease).status().code(), Errc::not_found);
  EXPECT_EQ(c_->revoke_lease(*lease).code(), Errc::not_found);
}

TEST_P(Contract, LeaseExpiresWithoutKeepAlive) {
  auto lease = c_->grant_lease(2);  // etcd's minimum at its default election timeout
  ASSERT_TRUE(lease.ok());
  ASSERT_TRUE(c_->put(p_ + "broker/2", "alive", *lease).ok());
  Collector seen;
  auto w = c_->watch(p_, prefix_end(p_), 0, seen.fn());
  ASSERT_TRUE(w.ok());
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {  // up to 10 s
    std::this_thread::sleep_for(100ms);
    gone = c_->range(p_ + "broker/2")->kvs.empty();
  }
  EXPECT_TRUE(gone);
  EXPECT_EQ(c_->keep_alive(*lease).code(), Errc::not_found);
  auto events = seen.wait_events(1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, WatchEvent::Type::del);
  EXPECT_EQ(events[0].kv.key, p_ + "broker/2");
  (*w)->cancel();
}

TEST_P(Contract, WatchFromRevisionReplaysThenFollows) {
  auto first = c_->put(p_ + "t/a", "1");
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(c_->put(p_ + "t/b", "2").ok());
  ASSERT_TRUE(c_->put(p_ + "elsewhere", "x").ok());
  Collector from_start, from_now;
  auto w1 = c_->watch(p_ + "t/", prefix_end(p_ + "t/"), *first, from_start.fn());
  ASSERT_TRUE(w1.ok());
  auto w2 = c_->watch(p_ + "t/", prefix_end(p_ + "t/"), 0, from_now.fn());
  ASSERT_TRUE(w2.ok());
  std::this_thread::sleep_for(200ms);  // the from-now watch is registered
  ASSERT_TRUE(c_->put(p_ + "t/a", "3").ok());
  ASSERT_TRUE(c_->delete_range(p_ + "t/b").ok());

  auto all = from_start.wait_events(4);
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0].kv.key, p_ + "t/a");
  EXPECT_EQ(all[0].kv.value, "1");
  EXPECT_EQ(all[0].kv.mod_revision, *first);
  EXPECT_EQ(all[1].kv.key, p_ + "t/b");
  EXPECT_EQ(all[2].kv.value, "3");
  EXPECT_EQ(all[2].kv.version, 2);
  EXPECT_EQ(all[3].type, WatchEvent::Type::del);
  EXPECT_EQ(all[3].kv.key, p_ + "t/b");
  for (size_t i = 1; i < all.size(); ++i)
    EXPECT_GT(all[i].kv.mod_revision, all[i - 1].kv.mod_revision);

  auto recent = from_now.wait_events(2);
  ASSERT_EQ(recent.size(), 2u);
  EXPECT_EQ(recent[0].kv.value, "3");
  EXPECT_EQ(recent[1].type, WatchEvent::Type::del);
  (*w1)->cancel();
  (*w2)->cancel();
  (*w1)->cancel();  // twice is fine
}

TEST_P(Contract, WatchFromCompactedRevisionEnds) {
  auto r1 = c_->put(p_ + "k", "1");
  ASSERT_TRUE(r1.ok());
  ASSERT_TRUE(c_->put(p_ + "k", "2").ok());
  auto r3 = c_->put(p_ + "k", "3");
  ASSERT_TRUE(r3.ok());
  ASSERT_TRUE(compact(*r3).ok());
  Collector seen;
  auto w = c_->watch(p_, prefix_end(p_), *r1, seen.fn());
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(seen.wait_compacted(), *r3);
  EXPECT_TRUE(seen.wait_events(1, 300ms).empty());
  // Re-read and watch again from the range's revision + 1: nothing is missed.
  auto now = c_->range(p_, prefix_end(p_));
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(now->kvs.at(0).value, "3");
  Collector again;
  auto w2 = c_->watch(p_, prefix_end(p_), now->revision + 1, again.fn());
  ASSERT_TRUE(w2.ok());
  ASSERT_TRUE(c_->put(p_ + "k", "4").ok());
  auto ev = again.wait_events(1);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kv.value, "4");
  (*w)->cancel();
  (*w2)->cancel();
}

// The same random operations on the fake and on etcd give the same answers (values, versions,
// revision deltas, CAS outcomes).
TEST(ContractModel, FakeMatchesEtcdOnRandomOperations) {
  auto etcd = etcd_client({g_etcd->endpoint()});
  FakeCoordination fake;
  const std::string p = "/t/model/";
  ASSERT_TRUE(etcd->delete_range(p, prefix_end(p)).ok());
  std::mt19937 rng(20261201);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  const int64_t etcd_base = etcd->range(p)->revision;
  const int64_t fake_base = fake.range(p)->revision;
  for (int step = 0; step < 300; ++step) {
    const std::string k = p + std::string(1, static_cast<char>('a' + pick(5)));
    const std::string v = std::to_string(pick(3));
    SCOPED_TRACE("step " + std::to_string(step) + " key " + k);
    switch (pick(4)) {
      case 0: {
        auto a = etcd->put(k, v), b = fake.put(k, v);
        ASSERT_TRUE(a.ok() && b.ok());
        EXPECT_EQ(*a - etcd_base, *b - fake_base);
        break;
      }
      case 1: {
        auto a = etcd->delete_range(k), b = fake.delete_range(k);
        ASSERT_TRUE(a.ok() && b.ok());
        EXPECT_EQ(*a, *b);
        break;
      }
      case 2: {
        Compare c{k, Compare::Target::version, Compare::Op::equal, pick(3), {}};
        auto a = etcd->txn({c}, {TxnOp::put(k, v)}, {TxnOp::get(p, prefix_end(p))});
        auto b = fake.txn({c}, {TxnOp::put(k, v)}, {TxnOp::get(p, prefix_end(p))});
        ASSERT_TRUE(a.ok() && b.ok());
        EXPECT_EQ(a->succeeded, b->succeeded);
        EXPECT_EQ(a->ranges.size(), b->ranges.size());
        break;
      }
      default: {
        Compare c{k, Compare::Target::value, Compare::Op::equal, 0, v};
        auto a = etcd->txn({c}, {TxnOp::del(k)}, {TxnOp::put(k, v + "x")});
        auto b = fake.txn({c}, {TxnOp::del(k)}, {TxnOp::put(k, v + "x")});
        ASSERT_TRUE(a.ok() && b.ok());
        EXPECT_EQ(a->succeeded, b->succeeded);
        break;
      }
    }
    auto a = etcd->range(p, prefix_end(p));
    auto b = fake.range(p, prefix_end(p));
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_EQ(a->kvs.size(), b->kvs.size());
    EXPECT_EQ(a->revision - etcd_base, b->revision - fake_base);
    for (size_t i = 0; i < a->kvs.size(); ++i) {
      EXPECT_EQ(a->kvs[i].key, b->kvs[i].key);
      EXPECT_EQ(a->kvs[i].value, b->kvs[i].value);
      EXPECT_EQ(a->kvs[i].version, b->kvs[i].version);
      EXPECT_EQ(a->kvs[i].mod_revision - etcd_base, b->kvs[i].mod_revision - fake_base);
      EXPECT_EQ(a->kvs[i].create_revision - etcd_base, b->kvs[i].create_revision - fake_base);
    }
  }
}

TEST(EtcdClient, ParsesEndpoints) {
  auto a = parse_etcd_endpoint("http://127.0.0.1:2379/");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, "2379");
  auto b = parse_etcd_endpoint("[::1]:2379");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->host, "::1");
  EXPECT_FALSE(parse_etcd_endpoint("localhost").ok());
  EXPECT_FALSE(parse_etcd_endpoint("host:port").ok());
  EXPECT_EQ(parse_etcd_endpoint("https://h:1").status().code(), Errc::unsupported);
}

// A member that refuses connections is skipped; no endpoint answering is an io_error.
TEST(EtcdClient, MovesPastAnUnreachableMember) {
  const std::string dead = "127.0.0.1:" + std::to_string(testing::free_port());
  auto c = etcd_client({dead, g_etcd->endpoint()});
  auto put = c->put("/t/failover/k", "v");
  ASSERT_TRUE(put.ok()) << put.status().to_string();
  EXPECT_EQ(c->range("/t/failover/k")->kvs.at(0).value, "v");
  auto none = etcd_client({dead});
  EXPECT_EQ(none->range("/t/failover/k").status().code(), Errc::io_error);
}

// A watch outlives its member's restart: it resumes from the last revision + 1, losing nothing.
// (Restarts the shared etcd; the other tests connect per call and do not mind.)
TEST(EtcdClient, WatchResumesAfterEtcdRestart) {
  auto c = etcd_client({g_etcd->endpoint()});
  const std::string p = "/t/resume/";
  ASSERT_TRUE(c->delete_range(p, prefix_end(p)).ok());
  Collector seen;
  auto w = c->watch(p, prefix_end(p), 0, seen.fn());
  ASSERT_TRUE(w.ok());
  std::this_thread::sleep_for(200ms);
  ASSERT_TRUE(c->put(p + "1", "before").ok());
  ASSERT_EQ(seen.wait_events(1).size(), 1u);
  g_etcd->stop();  // kill -9
  ASSERT_TRUE(g_etcd->start());
  ASSERT_TRUE(c->put(p + "2", "after").ok());
  ASSERT_TRUE(c->put(p + "3", "after").ok());
  auto events = seen.wait_events(3, 10s);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[1].kv.key, p + "2");
  EXPECT_EQ(events[2].kv.key, p + "3");
  (*w)->cancel();
}

// Three members, and the one a client and a watch use is killed: calls move to another member,
// the watch resumes there from the last revision + 1, and the restarted member rejoins.
TEST(EtcdClient, ThreeMembersOneKilled) {
  testing::EtcdCluster three(3);
  ASSERT_TRUE(three.start());
  auto c = etcd_client(three.endpoints());
  // The members elect a leader first; until then they answer UNAVAILABLE.
  Result<int64_t> first = Status(Errc::io_error, "not tried");
  for (int i = 0; i < 100 && !first.ok(); ++i) {
    first = c->put("/t/three/a", "1");
    if (!first.ok()) std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  Collector seen;
  auto w = c->watch("/t/three/", prefix_end("/t/three/"), *first + 1, seen.fn());
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(c->put("/t/three/b", "2").ok());
  ASSERT_EQ(seen.wait_events(1).size(), 1u);
  three.stop(0);  // the first endpoint: where both the calls and the watch went
  Result<int64_t> after = Status(Errc::io_error, "not tried");
  for (int i = 0; i < 100 && !after.ok(); ++i) {
    after = c->put("/t/three/c", "3");
    if (!after.ok()) std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(after.ok()) << after.status().to_string();
  auto events = seen.wait_events(2, 10s);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].kv.key, "/t/three/c");
  ASSERT_TRUE(three.restart(0));
  EXPECT_EQ(c->range("/t/three/", prefix_end("/t/three/"))->kvs.size(), 3u);
  (*w)->cancel();
}

INSTANTIATE_TEST_SUITE_P(Both, Contract, ::testing::Values(Kind::fake, Kind::etcd),
                         [](const auto& info) {
                           return std::string(info.param == Kind::fake ? "Fake" : "Etcd");
                         });

}  // namespace
}  // namespace strata::broker::cluster

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new strata::broker::cluster::EtcdEnvironment());
  return RUN_ALL_TESTS();
}
