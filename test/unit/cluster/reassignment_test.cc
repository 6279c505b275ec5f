// Partition reassignment and preferred elections (broker/cluster/reassignment.h): by example, and
// by a model in which random reassignments, cancellations, ISR expansions and shrinks, broker
// deaths and returns and controller passes are checked against a simple model of what the
// replica set must be (the original set until a reassignment completes, then exactly the target)
// and against the partition invariants (ISR within the replicas, a leader from the ISR, epochs
// that only grow, completion only once every target replica was in sync).
#include "broker/cluster/reassignment.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

namespace strata::broker::cluster {
namespace {

LiveBrokers live_of(std::set<int32_t> ids) {
  LiveBrokers out;
  for (int32_t id : ids) {
    BrokerRecord b;
    b.id = id;
    out[id] = b;
  }
  return out;
}

PartitionState state(int32_t leader, int32_t epoch, std::vector<int32_t> isr) {
  PartitionState s;
  s.leader = leader;
  s.leader_epoch = epoch;
  s.isr = std::move(isr);
  s.partition_epoch = epoch;
  return s;
}

std::set<int32_t> as_set(const std::vector<int32_t>& v) { return {v.begin(), v.end()}; }

TEST(Reassignment, MovesThroughTheUnionAndCompletesOnceInSync) {
  const auto live = live_of({1, 2, 3});
  const PartitionAssignment start{{1}, state(1, 0, {1})};
  auto moving = start_reassignment(start, {2, 3}, live);
  ASSERT_TRUE(moving.ok());
  EXPECT_EQ(moving->replicas, (std::vector<int32_t>{2, 3, 1}));
  EXPECT_EQ(moving->state.adding_replicas, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(moving->state.removing_replicas, (std::vector<int32_t>{1}));
  EXPECT_EQ(moving->state.leader, 1);  // the old leader keeps serving while they catch up
  EXPECT_EQ(moving->state.partition_epoch, 1);
  EXPECT_FALSE(complete_reassignment(*moving, live)) << "new replicas not in sync yet";

  PartitionAssignment one_in = *moving;
  one_in.state.isr = {1, 2};
  EXPECT_FALSE(complete_reassignment(one_in, live));

  PartitionAssignment all_in = *moving;
  all_in.state.isr = {1, 2, 3};
  auto done = complete_reassignment(all_in, live);
  ASSERT_TRUE(done);
  EXPECT_EQ(done->replicas, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(done->state.isr, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(done->state.leader, 2);
  EXPECT_EQ(done->state.leader_epoch, 1);
  EXPECT_TRUE(done->state.adding_replicas.empty());
  EXPECT_TRUE(done->state.removing_replicas.empty());
  EXPECT_GT(done->state.partition_epoch, all_in.state.partition_epoch);
}

TEST(Reassignment, KeepsALeaderThatStays) {
  const auto live = live_of({1, 2, 3});
  auto moving = start_reassignment({{1, 2}, state(2, 4, {1, 2})}, {2, 3}, live);
  ASSERT_TRUE(moving.ok());
  moving->state.isr = {1, 2, 3};
  auto done = complete_reassignment(*moving, live);
  ASSERT_TRUE(done);
  EXPECT_EQ(done->state.leader, 2);
  EXPECT_EQ(done->state.leader_epoch, 4);
  EXPECT_EQ(done->state.isr, (std::vector<int32_t>{2, 3}));
}

TEST(Reassignment, WaitsWhenNoTargetReplicaMayLead) {
  auto live = live_of({1, 2, 3});
  auto moving = start_reassignment({{1}, state(1, 0, {1})}, {2}, live);
  ASSERT_TRUE(moving.ok());
  moving->state.isr = {1, 2};
  live[2].shutting_down = true;
  EXPECT_FALSE(complete_reassignment(*moving, live));
}

TEST(Reassignment, RejectsBadTargets) {
  const auto live = live_of({1, 2, 3});
  const PartitionAssignment a{{1}, state(1, 0, {1})};
  EXPECT_EQ(start_reassignment(a, {}, live).status().code(), Errc::invalid_argument);
  EXPECT_EQ(start_reassignment(a, {2, 2}, live).status().code(), Errc::invalid_argument);
  EXPECT_EQ(start_reassignment(a, {2, 9}, live).status().code(), Errc::invalid_argument);
}

TEST(Reassignment, ReorderingTakesEffectAtOnce) {
  const auto live = live_of({1, 2, 3});
  const PartitionAssignment a{{1, 2}, state(1, 0, {1, 2})};
  auto r = start_reassignment(a, {2, 1}, live);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->replicas, (std::vector<int32_t>{2, 1}));
  EXPECT_FALSE(reassigning(r->state));
  EXPECT_EQ(r->state, a.state) << "the state itself does not change";
  auto same = start_reassignment(a, {1, 2}, live);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(*same, a);
}

TEST(Reassignment, CancelGoesBackAndDropsTheAddedReplicas) {
  const auto live = live_of({1, 2, 3});
  const PartitionAssignment a{{1}, state(1, 0, {1})};
  EXPECT_EQ(cancel_reassignment(a, live).status().code(), Errc::not_found);
  auto moving = start_reassignment(a, {2, 3}, live);
  ASSERT_TRUE(moving.ok());
  moving->state.isr = {1, 2};
  auto back = cancel_reassignment(*moving, live);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->replicas, (std::vector<int32_t>{1}));
  EXPECT_EQ(back->state.isr, (std::vector<int32_t>{1}));
  EXPECT_FALSE(reassigning(back->state));
}

TEST(Reassignment, ANewTargetReplacesTheOneInProgress) {
  const auto live = live_of({1, 2, 3, 4});
  auto first = start_reassignment({{1, 2}, state(1, 0, {1, 2})}, {3, 4}, live);
  ASSERT_TRUE(first.ok());
  first->state.isr = {1, 2, 3};
  auto second = start_reassignment(*first, {2, 4}, live);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(original_replicas(*second), (std::vector<int32_t>{2, 1}));
  EXPECT_EQ(target_replicas(*second), (std::vector<int32_t>{2, 4}));
  EXPECT_EQ(second->state.isr, (std::vector<int32_t>{1, 2})) << "3 is no longer wanted";
}

TEST(PreferredElection, FirstReplicaWhenAliveAndInSync) {
  auto live = live_of({1, 2, 3});
  PartitionState next;
  EXPECT_EQ(elect_preferred({1, 2, 3}, state(1, 3, {1, 2, 3}), live, &next),
            PreferredElection::not_needed);
  ASSERT_EQ(elect_preferred({1, 2, 3}, state(2, 3, {2, 1}), live, &next),
            PreferredElection::elected);
  EXPECT_EQ(next.leader, 1);
  EXPECT_EQ(next.leader_epoch, 4);
  EXPECT_EQ(next.partition_epoch, 4);
  EXPECT_EQ(elect_preferred({1, 2, 3}, state(2, 3, {2, 3}), live, &next),
            PreferredElection::not_available)
      << "not in sync";
  live.erase(1);
  EXPECT_EQ(elect_preferred({1, 2, 3}, state(2, 3, {2, 1}), live, &next),
            PreferredElection::not_available)
      << "not alive";
}

// The model: random operations, each result checked against what must hold.
TEST(ReassignmentModel, RandomStepsKeepTheInvariants) {
  const std::vector<int32_t> all = {1, 2, 3, 4, 5};
  int completions = 0;
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    std::mt19937 rng(seed);
    auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
    std::set<int32_t> up(all.begin(), all.end());
    PartitionAssignment a{{1, 2}, state(1, 0, {1, 2})};
    // The model: the replica set before any reassignment, and the target in progress.
    std::set<int32_t> original = {1, 2};
    std::optional<std::vector<int32_t>> target;
    for (int step = 0; step < 300; ++step) {
      const PartitionAssignment before = a;
      const LiveBrokers live = live_of(up);
      const int op = static_cast<int>(pick(7));
      bool completed = false;
      if (op == 0) {  // reassign to a random non-empty list of registered brokers
        std::vector<int32_t> t = all;
        std::shuffle(t.begin(), t.end(), rng);
        t.resize(1 + pick(3));
        std::vector<int32_t> registered;
        for (int32_t b : t) {
          if (up.count(b)) registered.push_back(b);
        }
        auto r = start_reassignment(a, t, live);
        if (registered.size() != t.size()) {
          ASSERT_FALSE(r.ok()) << "a target broker is not registered";
        } else if (r.ok()) {
          a = *r;
          if (as_set(t) == original) {
            target.reset();
            ASSERT_EQ(a.replicas, t);
          } else {
            target = t;
          }
        }
      } else if (op == 1) {  // cancel
        auto r = cancel_reassignment(a, live);
        if (!target) {
          ASSERT_FALSE(r.ok());
        } else if (r.ok()) {
          a = *r;
          target.reset();
          ASSERT_EQ(as_set(a.replicas), original);
        }
      } else if (op == 2) {  // the leader lets a caught-up replica in
        if (a.state.leader != -1 && up.count(a.state.leader)) {
          const int32_t r = a.replicas[pick(a.replicas.size())];
          std::vector<int32_t> isr = a.state.isr;
          if (up.count(r) && std::find(isr.begin(), isr.end(), r) == isr.end()) isr.push_back(r);
          if (auto next = change_isr(a.replicas, a.state, isr)) a.state = *next;
        }
      } else if (op == 3) {  // the leader drops a lagging follower
        if (a.state.isr.size() > 1 && a.state.leader != -1) {
          std::vector<int32_t> isr = a.state.isr;
          isr.erase(isr.begin() + static_cast<std::ptrdiff_t>(pick(isr.size())));
          if (auto next = change_isr(a.replicas, a.state, isr)) a.state = *next;
        }
      } else if (op == 4) {  // a broker dies or comes back
        const int32_t b = all[pick(all.size())];
        if (up.count(b)) {
          if (up.size() > 2) up.erase(b);
        } else {
          up.insert(b);
        }
      } else {  // a controller pass
        if (auto done = complete_reassignment(a, live)) {
          ASSERT_TRUE(target);
          for (int32_t r : *target) {
            ASSERT_TRUE(std::count(a.state.isr.begin(), a.state.isr.end(), r))
                << "completed before target replica " << r << " was in sync";
          }
          a = *done;
          ASSERT_EQ(a.replicas, *target);
          original = as_set(a.replicas);
          target.reset();
          completed = true;
          ++completions;
        } else if (auto next = reelect(a.replicas, a.state, live_of(up), false)) {
          a.state = *next;
        }
      }
      // The invariants.
      const auto& s = a.state;
      ASSERT_FALSE(a.replicas.empty());
      ASSERT_EQ(as_set(a.replicas).size(), a.replicas.size()) << "duplicate replica";
      ASSERT_FALSE(s.isr.empty());
      for (int32_t r : s.isr) {
        ASSERT_TRUE(std::count(a.replicas.begin(), a.replicas.end(), r));
      }
      if (s.leader != -1) {
        ASSERT_TRUE(std::count(s.isr.begin(), s.isr.end(), s.leader));
      }
      ASSERT_EQ(reassigning(s), target.has_value());
      if (target) {
        ASSERT_EQ(target_replicas(a), *target);
        ASSERT_EQ(as_set(original_replicas(a)), original);
      } else {
        ASSERT_EQ(as_set(a.replicas), original);
      }
      ASSERT_GE(s.leader_epoch, before.state.leader_epoch);
      if (s.leader != before.state.leader) {
        ASSERT_GT(s.leader_epoch, before.state.leader_epoch);
      }
      if (s != before.state) {
        ASSERT_GT(s.partition_epoch, before.state.partition_epoch);
      }
      if (completed) {
        for (int32_t r : before.state.removing_replicas) {
          ASSERT_FALSE(std::count(s.isr.begin(), s.isr.end(), r)) << "removed replica in the ISR";
        }
      }
    }
  }
  EXPECT_GT(completions, 200) << "the model should finish reassignments, not just start them";
}

}  // namespace
}  // namespace strata::broker::cluster
