// ReplicaManager on the in-memory coordination and real (replicated) partition logs: local topics
// follow the view under the cluster's topic id, a leader's high watermark is the minimum over the
// ISR, leadership checks answer Kafka's codes, a lagging follower leaves the ISR and a caught-up
// one joins it again (both written to etcd by compare-and-swap), a deleted topic goes.
#include "broker/cluster/replica_manager.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "broker/config/config.h"
#include "broker/topics/topic_registry.h"
#include "protocol/wire/uuid.h"
#include "storage/log_manager.h"
#include "test/unit/cluster/fake_coordination.h"
#include "test/unit/storage/test_util.h"

namespace strata::broker::cluster {
namespace {

using namespace std::chrono_literals;
using protocol::ErrorCode;

bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds limit = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return pred();
}

// One broker (id 1) with its logs and a replica manager; the test plays etcd's view.
struct Fixture {
  explicit Fixture(int64_t lag_ms = 60000) : layout("/t") {
    auto listeners = std::make_shared<storage::PartitionLog::Listeners>();
    listeners->log_end = [this](const storage::PartitionLog& log, int64_t) {
      if (auto* m = manager.load()) m->on_log_end(log);
    };
    auto l = storage::LogManager::open(
        storage::default_env(), {dir.sub("d")}, 1,
        [](const storage::TopicMeta&) {
          storage::LogConfig c;
          c.replicated = true;
          return c;
        },
        listeners);
    EXPECT_TRUE(l.ok()) << l.status().to_string();
    logs = std::move(*l);
    topics = std::make_unique<TopicRegistry>(*logs, config);
    EXPECT_TRUE(topics->load().ok());
    ReplicaManager::Options o;
    o.self = 1;
    o.replica_lag_time_max_ms = lag_ms;
    o.fetch_backoff_ms = 50;
    o.after_delete = [this](const std::string&) { ++deleted; };
    owned = std::make_unique<ReplicaManager>(coordination, layout, *topics, o);
    manager = owned.get();
  }
  ~Fixture() {
    owned->stop();
    manager = nullptr;
  }

  // A topic record plus partition states, written to the fake etcd (so compare-and-swap works)
  // and returned as the snapshot the view would publish.
  std::shared_ptr<const ClusterSnapshot> view(const std::string& name, const std::string& id,
                                              const std::vector<int32_t>& replicas,
                                              const PartitionState& state) {
    auto s = std::make_shared<ClusterSnapshot>(snapshot);
    TopicRecord t;
    t.name = name;
    t.topic_id = id;
    t.replicas = {replicas};
    auto put = coordination.put(layout.partition(name, 0), encode(state));
    EXPECT_TRUE(put.ok());
    s->topics[name] = t;
    s->partitions[name][0] = VersionedPartition{state, *put};
    s->revision = *put;
    for (int32_t b : {1, 2, 3}) s->brokers[b] = BrokerRecord{b, "127.0.0.1", 1, "", false, {}};
    snapshot = *s;
    return s;
  }
  PartitionState stored(const std::string& name) {
    auto r = coordination.range(layout.partition(name, 0));
    EXPECT_TRUE(r.ok() && !r->kvs.empty());
    auto st = decode_partition(r->kvs.front().value);
    EXPECT_TRUE(st.ok());
    return *st;
  }
  std::shared_ptr<storage::PartitionLog> log(const std::string& name) {
    auto t = topics->find(name);
    return t ? t->partitions[0] : nullptr;
  }

  storage::testing::TempDir dir;
  FakeCoordination coordination;
  Layout layout;
  BrokerConfig config;
  std::unique_ptr<storage::LogManager> logs;
  std::unique_ptr<TopicRegistry> topics;
  std::unique_ptr<ReplicaManager> owned;
  std::atomic<ReplicaManager*> manager{nullptr};
  std::atomic<int> deleted{0};
  ClusterSnapshot snapshot;
};

const std::string kId = protocol::Uuid::random().to_string();

TEST(ReplicaManager, LeaderHighWatermarkIsTheMinimumOverTheIsr) {
  Fixture f;
  f.owned->start(f.view("t", kId, {1, 2}, PartitionState{1, 3, {1, 2}, 5}));
  auto log = f.log("t");
  ASSERT_TRUE(log) << "local topic created from the view";
  EXPECT_EQ(f.topics->find("t")->id.to_string(), kId);
  EXPECT_EQ(f.manager.load()->leader_check("t", 0, -1), ErrorCode::none);
  EXPECT_EQ(f.manager.load()->leader_check("t", 0, 3), ErrorCode::none);
  EXPECT_EQ(f.manager.load()->leader_check("t", 0, 2), ErrorCode::fenced_leader_epoch);
  EXPECT_EQ(f.manager.load()->leader_check("t", 0, 4), ErrorCode::unknown_leader_epoch);
  EXPECT_EQ(f.manager.load()->leader_check("t", 1, -1), ErrorCode::unknown_topic_or_partition);
  EXPECT_EQ(f.manager.load()->leader_check("other", 0, -1), ErrorCode::unknown_topic_or_partition);
  EXPECT_EQ(f.manager.load()->min_isr_check("t", 0, 2), ErrorCode::none);
  EXPECT_EQ(f.manager.load()->min_isr_check("t", 0, 3), ErrorCode::not_enough_replicas);

  for (int i = 0; i < 3; ++i) {
    auto batch = storage::testing::make_batch_n(10);
    ASSERT_TRUE(log->append(batch, 1000).ok());
  }
  EXPECT_EQ(log->log_end_offset(), 30);
  EXPECT_EQ(log->latest_epoch(), 3) << "appends are stamped with the epoch from etcd";
  EXPECT_EQ(log->high_watermark(), 0) << "follower 2 is in the ISR and has fetched nothing";
  auto st = f.manager.load()->stats();
  ASSERT_EQ(st.leading.size(), 1u);
  EXPECT_EQ(st.leading[0].lag, (std::vector<std::pair<int32_t, int64_t>>{{2, -1}}))
      << "no fetch from broker 2 yet";
  f.manager.load()->on_follower_fetch("t", 0, 2, 10, log->log_end_offset());
  EXPECT_EQ(log->high_watermark(), 10);
  st = f.manager.load()->stats();
  EXPECT_EQ(st.leading[0].lag, (std::vector<std::pair<int32_t, int64_t>>{{2, 20}}));
  EXPECT_EQ(st.leader_elections, 1u);
  EXPECT_EQ(st.leading[0].isr, 2u);
  f.manager.load()->on_follower_fetch("t", 0, 3, 30, log->log_end_offset());
  EXPECT_EQ(log->high_watermark(), 10) << "broker 3 is not a replica: its fetch counts for nothing";
  f.manager.load()->on_follower_fetch("t", 0, 2, 30, log->log_end_offset());
  EXPECT_EQ(log->high_watermark(), 30);
}

TEST(ReplicaManager, RfOneLeaderCommitsAtItsOwnDurableEnd) {
  Fixture f;
  f.owned->start(f.view("solo", kId, {1}, PartitionState{1, 1, {1}, 1}));
  auto log = f.log("solo");
  ASSERT_TRUE(log);
  auto batch = storage::testing::make_batch_n(4);
  ASSERT_TRUE(log->append(batch, 1000).ok());
  EXPECT_EQ(log->high_watermark(), 4);
}

TEST(ReplicaManager, LaggingFollowerLeavesTheIsrAndRejoinsOnceCaughtUp) {
  Fixture f(/*lag_ms=*/200);
  f.owned->start(f.view("t", kId, {1, 2}, PartitionState{1, 1, {1, 2}, 1}));
  auto log = f.log("t");
  ASSERT_TRUE(log);
  auto batch = storage::testing::make_batch_n(5);
  ASSERT_TRUE(log->append(batch, 1000).ok());
  EXPECT_EQ(log->high_watermark(), 0);
  // Broker 2 never fetches: after the lag time the leader writes ISR [1] to etcd.
  ASSERT_TRUE(eventually([&] { return f.stored("t").isr == std::vector<int32_t>{1}; }));
  PartitionState shrunk = f.stored("t");
  EXPECT_EQ(shrunk.leader, 1);
  EXPECT_EQ(shrunk.leader_epoch, 1) << "an ISR change is not a new term";
  EXPECT_EQ(shrunk.partition_epoch, 2);
  EXPECT_TRUE(eventually([&] { return log->high_watermark() == 5; }))
      << "without the lagging follower the leader alone commits";
  EXPECT_EQ(f.manager.load()->min_isr_check("t", 0, 2), ErrorCode::not_enough_replicas);

  // Broker 2 catches up to the high watermark: it joins again.
  f.manager.load()->on_follower_fetch("t", 0, 2, 5, log->log_end_offset());
  ASSERT_TRUE(eventually([&] { return f.stored("t").isr == std::vector<int32_t>{1, 2}; }));
  EXPECT_EQ(f.stored("t").partition_epoch, 3);
  EXPECT_TRUE(eventually([&] { return f.manager.load()->isr("t", 0).size() == 2; }));
  // The counters move just after the ISR they count is visible: wait for them too.
  EXPECT_TRUE(eventually([&] {
    const auto st = f.manager.load()->stats();
    return st.isr_shrinks == 1u && st.isr_expands == 1u;
  })) << "shrinks "
      << f.manager.load()->stats().isr_shrinks << ", expands "
      << f.manager.load()->stats().isr_expands;
  EXPECT_EQ(f.manager.load()->stats().isr_write_conflicts, 0u);
}

TEST(ReplicaManager, ReplicaAddedByAReassignmentJoinsTheIsrAndTheReassignmentStays) {
  Fixture f(/*lag_ms=*/5000);
  f.owned->start(f.view("t", kId, {1}, PartitionState{1, 1, {1}, 1}));
  auto log = f.log("t");
  ASSERT_TRUE(log);
  auto batch = storage::testing::make_batch_n(3);
  ASSERT_TRUE(log->append(batch, 1000).ok());
  ASSERT_TRUE(eventually([&] { return log->high_watermark() == 3; }));
  // A reassignment from [1] to [1, 2]: same leader and epoch, one replica more.
  PartitionState moving{1, 1, {1}, 2};
  moving.adding_replicas = {2};
  f.manager.load()->on_view(f.view("t", kId, {1, 2}, moving));
  // The new replica catches up: the leader (which now tracks it) lets it into the ISR.
  ASSERT_TRUE(eventually([&] {
    f.manager.load()->on_follower_fetch("t", 0, 2, 3, log->log_end_offset());
    return f.stored("t").isr == std::vector<int32_t>{1, 2};
  }));
  EXPECT_EQ(f.stored("t").adding_replicas, std::vector<int32_t>{2})
      << "the ISR write keeps the reassignment for the controller to finish";
}

TEST(ReplicaManager, IsrWriteLosesToAConcurrentChange) {
  Fixture f(/*lag_ms=*/200);
  f.owned->start(f.view("t", kId, {1, 2}, PartitionState{1, 1, {1, 2}, 1}));
  // The controller moved leadership to 2 behind the manager's back (no view delivered yet).
  ASSERT_TRUE(
      f.coordination.put(f.layout.partition("t", 0), encode(PartitionState{2, 2, {2}, 2})).ok());
  std::this_thread::sleep_for(600ms);  // several ISR checks: each shrink must lose the CAS
  EXPECT_EQ(f.stored("t"), (PartitionState{2, 2, {2}, 2}));
  EXPECT_GE(f.manager.load()->stats().isr_write_conflicts, 2u);
}

TEST(ReplicaManager, NewLeaderEpochAndFollowingAndDeletion) {
  Fixture f;
  f.owned->start(f.view("t", kId, {1, 2}, PartitionState{1, 1, {1, 2}, 1}));
  ASSERT_TRUE(f.log("t"));
  // Leadership moves to broker 2: this broker follows (its fetcher retries an address that does
  // not answer), and no longer accepts writes.
  f.manager.load()->on_view(f.view("t", kId, {1, 2}, PartitionState{2, 2, {2, 1}, 2}));
  // The change is applied in steps (writes refused first, then the fetcher and the epoch):
  // wait for the last one.
  EXPECT_TRUE(eventually([&] {
    return f.manager.load()->leader_check("t", 0, -1) == ErrorCode::not_leader_or_follower &&
           f.manager.load()->stats().following == 1u &&
           f.manager.load()->leader_check("t", 0, 1) == ErrorCode::fenced_leader_epoch;
  }));
  EXPECT_EQ(f.manager.load()->stats().following, 1u);
  EXPECT_TRUE(f.manager.load()->stats().leading.empty());
  EXPECT_EQ(f.manager.load()->leader_check("t", 0, 1), ErrorCode::fenced_leader_epoch);
  // And back, in epoch 3.
  f.manager.load()->on_view(f.view("t", kId, {1, 2}, PartitionState{1, 3, {1, 2}, 3}));
  EXPECT_TRUE(
      eventually([&] { return f.manager.load()->leader_check("t", 0, 3) == ErrorCode::none; }));
  EXPECT_EQ(f.log("t")->latest_epoch(), 3);
  // Deleted from the cluster: the local replica goes.
  auto s = std::make_shared<ClusterSnapshot>(f.snapshot);
  s->topics.clear();
  s->partitions.clear();
  s->revision += 1;
  f.manager.load()->on_view(s);
  // The local topic goes, then the hook runs, then the view is published: wait for the last.
  EXPECT_TRUE(eventually([&] {
    return f.manager.load()->leader_check("t", 0, -1) == ErrorCode::unknown_topic_or_partition;
  }));
  EXPECT_EQ(f.topics->find("t"), nullptr);
  EXPECT_EQ(f.deleted.load(), 1);
}

TEST(ReplicaManager, TopicCreatedAgainUnderANewIdReplacesTheLocalOne) {
  Fixture f;
  f.owned->start(f.view("t", kId, {1}, PartitionState{1, 1, {1}, 1}));
  auto old_log = f.log("t");
  auto batch = storage::testing::make_batch_n(3);
  ASSERT_TRUE(old_log->append(batch, 1000).ok());
  const std::string id2 = protocol::Uuid::random().to_string();
  f.manager.load()->on_view(f.view("t", id2, {1}, PartitionState{1, 1, {1}, 1}));
  ASSERT_TRUE(eventually([&] {
    auto t = f.topics->find("t");
    return t && t->id.to_string() == id2;
  }));
  EXPECT_EQ(f.log("t")->log_end_offset(), 0) << "the new topic starts empty";
  EXPECT_TRUE(
      eventually([&] { return f.manager.load()->leader_check("t", 0, 1) == ErrorCode::none; }));
}

}  // namespace
}  // namespace strata::broker::cluster
