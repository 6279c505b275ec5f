// Brokers, views and controllers of a three-broker cluster in one process on the in-memory
// coordination: one controller at a time, topics created by any broker, leaders moved off a lost
// broker and off a broker shutting down, a controller's successor with a higher epoch, and a
// broker that lost its lease registering again.
#include "broker/cluster/controller.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "broker/cluster/membership.h"
#include "broker/cluster/metadata_view.h"
#include "broker/cluster/topic_admin.h"
#include "test/unit/cluster/fake_coordination.h"

namespace strata::broker::cluster {
namespace {

using namespace std::chrono_literals;

bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds limit = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return pred();
}

struct Node {
  Node(FakeCoordination& c, const Layout& layout, int32_t id) : view(c, layout) {
    BrokerRecord self;
    self.id = id;
    self.host = "127.0.0.1";
    self.port = 9000 + id;
    Membership::Options mo;
    mo.lease_ttl_seconds = 1;
    mo.on_lost = [this] { ++lost; };
    membership = std::make_unique<Membership>(c, layout, self, mo);
    Controller::Options co;
    co.lease = [this] { return membership->lease(); };
    controller = std::make_unique<Controller>(c, layout, view, id, co);
  }
  Status start() {
    STRATA_RETURN_IF_ERROR(view.start());
    STRATA_RETURN_IF_ERROR(membership->join());
    controller->start();
    return Status::Ok();
  }
  ~Node() {
    controller->stop();
    membership->leave();
    view.stop();
  }
  MetadataView view;
  std::unique_ptr<Membership> membership;
  std::unique_ptr<Controller> controller;
  std::atomic<int> lost{0};
};

class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int32_t id = 1; id <= 3; ++id) {
      nodes_[id] = std::make_unique<Node>(coord_, layout_, id);
      ASSERT_TRUE(nodes_[id]->start().ok());
    }
    ASSERT_TRUE(eventually([&] { return active_controllers() == 1; }));
    // Every broker's view, not only the first's: a test may create a topic through any of them,
    // and placing 3 replicas needs 3 registered brokers in that view.
    for (int32_t id = 1; id <= 3; ++id) {
      ASSERT_TRUE(eventually([&] { return view(id)->brokers.size() == 3; }));
    }
  }
  std::shared_ptr<const ClusterSnapshot> view(int32_t via = 0) {
    for (auto& [id, n] : nodes_) {
      if (n && (via == 0 || via == id)) return n->view.snapshot();
    }
    return nullptr;
  }
  int active_controllers() {
    int n = 0;
    for (auto& [id, node] : nodes_) n += node && node->controller->active();
    return n;
  }
  int32_t controller_id() {
    for (auto& [id, node] : nodes_) {
      if (node && node->controller->active()) return id;
    }
    return -1;
  }
  // Soon, every partition of `topic` satisfies `pred` in every live broker's view.
  bool all_partitions(const std::string& topic,
                      const std::function<bool(const PartitionState&)>& pred) {
    return eventually([&] { return all_partitions_now(topic, pred); });
  }
  bool all_partitions_now(const std::string& topic,
                          const std::function<bool(const PartitionState&)>& pred) {
    for (auto& [id, n] : nodes_) {
      if (!n) continue;
      auto s = n->view.snapshot();
      auto t = s->topics.find(topic);
      if (t == s->topics.end()) return false;
      for (size_t p = 0; p < t->second.replicas.size(); ++p) {
        auto* vp = s->partition(topic, static_cast<int32_t>(p));
        if (!vp || !pred(vp->state)) return false;
      }
    }
    return true;
  }
  static bool in(const std::vector<int32_t>& v, int32_t x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  }

  FakeCoordination coord_;
  Layout layout_{"/strata/test"};
  std::map<int32_t, std::unique_ptr<Node>> nodes_;
};

TEST_F(ClusterTest, OneControllerAndTopicsFromAnyBroker) {
  EXPECT_EQ(view()->controller->epoch, 1);
  NewTopic t{"orders", "AAAAAAAAAAAAAAAAAAAAAQ", 6, 3, {}, {{"retention.ms", "1000"}}};
  auto created = create_topic(coord_, layout_, *view(2), t);
  ASSERT_TRUE(created.ok()) << created.status().to_string();
  ASSERT_TRUE(all_partitions("orders", [](const PartitionState& s) {
    return s.leader != -1 && s.isr.size() == 3 && s.leader_epoch == 0;
  }));
  EXPECT_EQ(view(3)->topics.at("orders").configs.at("retention.ms"), "1000");
  // A second create of the same name loses, from any broker.
  ASSERT_TRUE(eventually([&] { return view(1)->topics.count("orders") == 1; }));
  EXPECT_EQ(create_topic(coord_, layout_, *view(1), t).status().code(), Errc::already_exists);
  NewTopic too_big{"big", "AAAAAAAAAAAAAAAAAAAAAg", 1, 4, {}, {}};
  EXPECT_EQ(create_topic(coord_, layout_, *view(1), too_big).status().code(),
            Errc::invalid_argument);

  auto grown = add_partitions(coord_, layout_, *view(1), "orders", 8);
  ASSERT_TRUE(grown.ok()) << grown.status().to_string();
  ASSERT_TRUE(eventually([&] { return view(3)->topics.at("orders").replicas.size() == 8; }));
  ASSERT_TRUE(all_partitions("orders", [](const PartitionState& s) { return s.leader != -1; }));

  ASSERT_TRUE(delete_topic(coord_, layout_, *view(3), "orders").ok());
  ASSERT_TRUE(eventually([&] {
    return view(1)->topics.empty() && view(1)->partitions.empty() && view(2)->topics.empty();
  }));
  EXPECT_EQ(delete_topic(coord_, layout_, *view(3), "orders").code(), Errc::not_found);
}

TEST_F(ClusterTest, LostBrokerLosesLeadershipAndIsrControllerMovesOn) {
  ASSERT_TRUE(
      create_topic(coord_, layout_, *view(), {"t", "AAAAAAAAAAAAAAAAAAAAAQ", 9, 3, {}, {}}).ok());
  ASSERT_TRUE(all_partitions("t", [](const PartitionState& s) { return s.isr.size() == 3; }));
  const int32_t victim = controller_id();
  ASSERT_NE(victim, -1);
  nodes_.erase(victim);  // its lease goes; it was the controller and led a third of "t"
  ASSERT_TRUE(eventually([&] { return active_controllers() == 1; }));
  EXPECT_NE(controller_id(), victim);
  ASSERT_TRUE(eventually([&] { return view()->controller && view()->controller->epoch == 2; }));
  ASSERT_TRUE(all_partitions("t", [&](const PartitionState& s) {
    return s.leader != -1 && s.leader != victim && !in(s.isr, victim) && s.isr.size() == 2;
  }));
  // The partitions it led got a new leader epoch; the others kept theirs.
  int bumped = 0;
  auto s = view();
  for (int32_t p = 0; p < 9; ++p) bumped += s->partition("t", p)->state.leader_epoch == 1;
  EXPECT_EQ(bumped, 3);

  // The last in-sync replicas go: offline, ISR remembered; one comes back and leads again.
  ASSERT_TRUE(
      create_topic(coord_, layout_, *view(), {"solo", "AAAAAAAAAAAAAAAAAAAAAg", 1, 1, {}, {}})
          .ok());
  ASSERT_TRUE(all_partitions("solo", [](const PartitionState& s) { return s.leader != -1; }));
  const int32_t solo_leader = view()->partition("solo", 0)->state.leader;
  const int32_t other =
      solo_leader == 1 ? (victim == 2 ? 3 : 2) : (victim == 1 ? (solo_leader == 2 ? 3 : 2) : 1);
  ASSERT_NE(other, solo_leader);
  nodes_.erase(solo_leader);
  ASSERT_TRUE(eventually([&] {
    const auto snap = nodes_.at(other)->view.snapshot();  // vp points into it
    auto* vp = snap->partition("solo", 0);
    return vp && vp->state.leader == -1 && vp->state.isr == std::vector<int32_t>{solo_leader};
  }));
  nodes_[solo_leader] = std::make_unique<Node>(coord_, layout_, solo_leader);
  ASSERT_TRUE(nodes_[solo_leader]->start().ok());
  ASSERT_TRUE(
      all_partitions("solo", [&](const PartitionState& s) { return s.leader == solo_leader; }));
}

TEST_F(ClusterTest, CleanShutdownMovesLeadershipFirst) {
  ASSERT_TRUE(
      create_topic(coord_, layout_, *view(), {"t", "AAAAAAAAAAAAAAAAAAAAAQ", 6, 3, {}, {}}).ok());
  ASSERT_TRUE(all_partitions("t", [](const PartitionState& s) { return s.isr.size() == 3; }));
  ASSERT_TRUE(nodes_[2]->membership->begin_shutdown().ok());
  ASSERT_TRUE(all_partitions("t", [](const PartitionState& s) {
    return s.leader != 2 && s.leader != -1 && !in(s.isr, 2);
  }));
  // Still registered (it keeps serving reads until it leaves).
  EXPECT_TRUE(view(1)->brokers.at(2).shutting_down);
}

TEST_F(ClusterTest, BrokerThatLostItsLeaseRegistersAgain) {
  const int64_t lease = nodes_[3]->membership->lease();
  ASSERT_TRUE(coord_.revoke_lease(lease).ok());  // as if etcd expired it during a pause
  ASSERT_TRUE(eventually([&] { return nodes_[3]->lost.load() == 1; }));
  ASSERT_TRUE(eventually(
      [&] { return nodes_[3]->membership->lease() != lease && view(1)->brokers.count(3) == 1; }));
  // Only one broker can hold an id.
  Node dup(coord_, layout_, 3);
  ASSERT_TRUE(dup.view.start().ok());
  EXPECT_EQ(dup.membership->join().code(), Errc::already_exists);
}

}  // namespace
}  // namespace strata::broker::cluster
