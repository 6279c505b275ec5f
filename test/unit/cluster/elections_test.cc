// The controller's rules (broker/cluster/elections.h): placement, first state, re-election and
// the leader's ISR changes — by example, and by a model of Kafka's replication in which random
// appends, follower fetches, ISR shrinks/expands, broker deaths, returns and clean shutdowns are
// checked against the property the rules exist for: with unclean election off, every record
// that was committed (below the high watermark) is on every later leader.
#include "broker/cluster/elections.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

namespace strata::broker::cluster {
namespace {

LiveBrokers brokers(std::vector<std::pair<int32_t, std::string>> ids_racks) {
  LiveBrokers out;
  for (auto& [id, rack] : ids_racks) {
    BrokerRecord b;
    b.id = id;
    b.rack = rack;
    out[id] = b;
  }
  return out;
}

TEST(Elections, AssignmentSpreadsLeadersAndRacks) {
  auto live = brokers({{1, "a"}, {2, "a"}, {3, "b"}, {4, "b"}, {5, "c"}, {6, "c"}});
  auto r = assign_replicas(live, 12, 3);
  ASSERT_TRUE(r.ok());
  std::map<int32_t, int> leaders;
  for (const auto& replicas : *r) {
    ASSERT_EQ(replicas.size(), 3u);
    std::set<int32_t> distinct(replicas.begin(), replicas.end());
    EXPECT_EQ(distinct.size(), 3u);
    std::set<std::string> racks;
    for (int32_t b : replicas) racks.insert(live[b].rack);
    EXPECT_EQ(racks.size(), 3u) << "replicas on distinct racks";
    ++leaders[replicas.front()];
  }
  for (const auto& [b, n] : leaders) EXPECT_EQ(n, 2) << "broker " << b << " leads its share";
  EXPECT_EQ(leaders.size(), 6u);

  EXPECT_EQ(assign_replicas(live, 1, 7).status().code(), Errc::invalid_argument);
  EXPECT_EQ(assign_replicas(live, 1, 0).status().code(), Errc::invalid_argument);
  // Brokers shutting down get no new replicas.
  live[1].shutting_down = true;
  auto without = assign_replicas(live, 10, 5);
  ASSERT_TRUE(without.ok());
  for (const auto& replicas : *without)
    EXPECT_EQ(std::count(replicas.begin(), replicas.end(), 1), 0);
  // Added partitions continue the rotation instead of piling on the first brokers.
  auto more = assign_replicas(brokers({{1, ""}, {2, ""}, {3, ""}}), 1, 1, 4);
  ASSERT_TRUE(more.ok());
  EXPECT_EQ(more->at(0).front(), 2);
}

TEST(Elections, InitialStateLeadsWithFirstLiveReplica) {
  auto live = brokers({{2, ""}, {3, ""}});
  PartitionState s = initial_state({1, 2, 3}, live);
  EXPECT_EQ(s.leader, 2);
  EXPECT_EQ(s.isr, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(s.leader_epoch, 0);
  PartitionState none = initial_state({1, 4}, live);
  EXPECT_EQ(none.leader, -1);
  EXPECT_EQ(none.isr, (std::vector<int32_t>{1, 4}));
}

TEST(Elections, ReelectByExample) {
  const std::vector<int32_t> replicas = {1, 2, 3};
  PartitionState s{1, 4, {1, 2, 3}, 9};
  auto all = brokers({{1, ""}, {2, ""}, {3, ""}});
  EXPECT_FALSE(reelect(replicas, s, all, false).has_value()) << "nothing to do";

  // Leader lost: the next in-sync replica in preferred order leads, the dead one leaves the ISR.
  auto no1 = brokers({{2, ""}, {3, ""}});
  auto a = reelect(replicas, s, no1, false);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->leader, 2);
  EXPECT_EQ(a->leader_epoch, 5);
  EXPECT_EQ(a->isr, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(a->partition_epoch, 10);

  // A follower lost: same leader and epoch, smaller ISR.
  auto no3 = brokers({{1, ""}, {2, ""}});
  auto b = reelect(replicas, s, no3, false);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->leader, 1);
  EXPECT_EQ(b->leader_epoch, 4);
  EXPECT_EQ(b->isr, (std::vector<int32_t>{1, 2}));

  // Every in-sync replica lost: offline, the ISR is kept; the first of them back leads again.
  PartitionState lone{1, 4, {1}, 9};
  auto only2 = brokers({{2, ""}});
  auto c = reelect(replicas, lone, only2, false);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->leader, -1);
  EXPECT_EQ(c->isr, (std::vector<int32_t>{1}));
  auto d = reelect(replicas, *c, brokers({{1, ""}, {2, ""}}), false);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->leader, 1);
  EXPECT_EQ(d->leader_epoch, 6);
  // ...unless unclean election is on: then an out-of-sync live replica takes it, alone in the ISR.
  auto e = reelect(replicas, lone, only2, true);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->leader, 2);
  EXPECT_EQ(e->isr, (std::vector<int32_t>{2}));

  // Clean shutdown of the leader: another in-sync replica leads, the leaver leaves the ISR...
  auto shutting1 = all;
  shutting1[1].shutting_down = true;
  auto f = reelect(replicas, s, shutting1, false);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->leader, 2);
  EXPECT_EQ(f->isr, (std::vector<int32_t>{2, 3}));
  // ...but it keeps leading where it is the only in-sync replica.
  auto g = reelect(replicas, lone, shutting1, false);
  EXPECT_FALSE(g.has_value());
}

TEST(Elections, LeaderIsrChanges) {
  const std::vector<int32_t> replicas = {1, 2, 3};
  PartitionState s{1, 4, {1, 2, 3}, 9};
  auto shrink = change_isr(replicas, s, {1, 3});
  ASSERT_TRUE(shrink);
  EXPECT_EQ(shrink->leader_epoch, 4);
  EXPECT_EQ(shrink->partition_epoch, 10);
  EXPECT_FALSE(change_isr(replicas, s, {2, 3})) << "without the leader";
  EXPECT_FALSE(change_isr(replicas, s, {})) << "empty";
  EXPECT_FALSE(change_isr(replicas, s, {1, 4})) << "not a replica";
  EXPECT_FALSE(change_isr(replicas, s, {1, 1})) << "duplicate";
  EXPECT_FALSE(change_isr(replicas, s, {1, 2, 3})) << "no change";
}

// --- model ------------------------------------------------------------------------------------

struct Replica {
  std::vector<int> log;  // record ids
  bool alive = true;
  bool shutting = false;
  int64_t fetched = -1;  // position last reported to the current leader (-1: not yet)
};

class Model {
 public:
  explicit Model(uint32_t seed) : rng_(seed) {
    for (int32_t id : replicas_) nodes_[id] = Replica{};
    state_ = initial_state(replicas_, live());
  }

  void step() {
    switch (pick(9)) {
      case 0:
      case 1:
      case 2:
        append();
        break;
      case 3:
      case 4:
        fetch(replicas_[pick(3)]);
        break;
      case 5:
        shrink();
        break;
      case 6:
        expand();
        break;
      case 7:
        kill_or_revive(replicas_[pick(3)]);
        break;
      default:
        begin_shutdown(replicas_[pick(3)]);
        break;
    }
    check();
  }

  int leader_changes = 0;
  int offline_steps = 0;

 private:
  int pick(int n) { return static_cast<int>(rng_() % static_cast<unsigned>(n)); }

  LiveBrokers live() const {
    LiveBrokers out;
    for (const auto& [id, r] : nodes_) {
      if (!r.alive) continue;
      BrokerRecord b;
      b.id = id;
      b.shutting_down = r.shutting;
      out[id] = b;
    }
    return out;
  }

  Replica& leader() { return nodes_.at(state_.leader); }

  void append() {
    if (state_.leader == -1) return;
    leader().log.push_back(next_id_++);
    advance_hw();
  }

  // A follower fetch: truncate to the common prefix with the leader (the divergence point
  // OffsetForLeaderEpoch finds), copy some records, report the position.
  void fetch(int32_t f) {
    if (state_.leader == -1 || f == state_.leader || !nodes_[f].alive) return;
    auto& mine = nodes_[f].log;
    const auto& theirs = leader().log;
    size_t common = 0;
    while (common < mine.size() && common < theirs.size() && mine[common] == theirs[common]) {
      ++common;
    }
    mine.resize(common);
    const size_t more = std::min(theirs.size() - common, static_cast<size_t>(pick(4)));
    mine.insert(mine.end(), theirs.begin() + static_cast<long>(common),
                theirs.begin() + static_cast<long>(common + more));
    nodes_[f].fetched = static_cast<int64_t>(mine.size());
    advance_hw();
  }

  // HW = min over the ISR of the leader's log end and each follower's reported position.
  void advance_hw() {
    if (state_.leader == -1) return;
    int64_t hw = static_cast<int64_t>(leader().log.size());
    for (int32_t r : state_.isr) {
      if (r != state_.leader) hw = std::min(hw, nodes_[r].fetched);
    }
    for (int64_t i = 0; i < hw; ++i) committed_.insert(leader().log[static_cast<size_t>(i)]);
    hw_ = std::max(hw_, hw);
  }

  void apply(const std::optional<PartitionState>& next) {
    if (!next) return;
    EXPECT_GT(next->partition_epoch, state_.partition_epoch);
    EXPECT_GE(next->leader_epoch, state_.leader_epoch);
    if (next->leader != state_.leader) {
      EXPECT_GT(next->leader_epoch, state_.leader_epoch);
      if (next->leader != -1) {
        ++leader_changes;
        for (auto& [id, r] : nodes_) r.fetched = -1;  // a new leader knows no follower yet
        // The property: the new leader has every committed record.
        std::set<int> has(nodes_[next->leader].log.begin(), nodes_[next->leader].log.end());
        for (int id : committed_) {
          ASSERT_TRUE(has.count(id))
              << "committed record " << id << " lost by electing " << next->leader;
        }
      }
    }
    state_ = *next;
  }

  void shrink() {
    if (state_.leader == -1) return;
    std::vector<int32_t> isr;
    for (int32_t r : state_.isr) {
      const bool lagging =
          r != state_.leader && nodes_[r].fetched < static_cast<int64_t>(leader().log.size());
      if (!lagging || pick(2) == 0) isr.push_back(r);
    }
    apply(change_isr(replicas_, state_, isr));
  }

  // Kafka's rule: a follower joins once its reported position reaches the high watermark.
  void expand() {
    if (state_.leader == -1) return;
    std::vector<int32_t> isr = state_.isr;
    for (int32_t r : replicas_) {
      const bool in = std::find(isr.begin(), isr.end(), r) != isr.end();
      if (!in && nodes_[r].alive && !nodes_[r].shutting && nodes_[r].fetched >= hw_in_epoch()) {
        isr.push_back(r);
      }
    }
    apply(change_isr(replicas_, state_, isr));
  }

  int64_t hw_in_epoch() {
    int64_t hw = static_cast<int64_t>(leader().log.size());
    for (int32_t r : state_.isr) {
      if (r != state_.leader) hw = std::min(hw, nodes_[r].fetched);
    }
    return std::max<int64_t>(hw, 0);
  }

  void kill_or_revive(int32_t b) {
    auto& r = nodes_[b];
    r.alive = !r.alive;
    r.shutting = false;
    if (r.alive) r.fetched = -1;
    apply(reelect(replicas_, state_, live(), false));
  }

  void begin_shutdown(int32_t b) {
    if (!nodes_[b].alive) return;
    nodes_[b].shutting = true;
    apply(reelect(replicas_, state_, live(), false));
  }

  void check() {
    if (state_.leader == -1) {
      ++offline_steps;
      return;
    }
    EXPECT_NE(std::find(state_.isr.begin(), state_.isr.end(), state_.leader), state_.isr.end())
        << "the leader is in the ISR";
    EXPECT_TRUE(nodes_[state_.leader].alive) << "a dead broker leads";
  }

  std::mt19937 rng_;
  const std::vector<int32_t> replicas_ = {1, 2, 3};
  std::map<int32_t, Replica> nodes_;
  PartitionState state_;
  std::set<int> committed_;
  int64_t hw_ = 0;
  int next_id_ = 1;
};

TEST(ElectionsModel, CommittedRecordsSurviveEveryCleanElection) {
  int changes = 0, offline = 0;
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    Model m(seed);
    for (int i = 0; i < 300; ++i) {
      m.step();
      if (::testing::Test::HasFatalFailure()) return;
    }
    changes += m.leader_changes;
    offline += m.offline_steps;
  }
  // The walk must really exercise elections and offline partitions.
  EXPECT_GT(changes, 1000);
  EXPECT_GT(offline, 100);
}

}  // namespace
}  // namespace strata::broker::cluster
