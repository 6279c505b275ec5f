// The leader's follower tracking (broker/cluster/leader_state.h): by example, and against a model
// in which random appends, follower fetches, pauses and ISR changes must keep the high watermark
// monotonic, at the minimum durable end over the ISR, and the ISR changes within Kafka's rules.
#include "broker/cluster/leader_state.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace strata::broker::cluster {
namespace {

TEST(LeaderState, HighWatermarkIsTheSlowestInSyncReplica) {
  LeaderState s(1, {1, 2, 3}, {1, 2, 3}, 10, 10, 0);
  s.on_leader_durable_end(20);
  EXPECT_EQ(s.high_watermark(), 10) << "no follower heard from yet";
  s.on_follower_fetch(2, 15, 20, 1);
  EXPECT_EQ(s.high_watermark(), 10);
  s.on_follower_fetch(3, 18, 20, 1);
  EXPECT_EQ(s.high_watermark(), 15);
  s.on_follower_fetch(2, 20, 20, 2);
  EXPECT_EQ(s.high_watermark(), 18);
  s.on_follower_fetch(3, 20, 20, 2);
  EXPECT_EQ(s.high_watermark(), 20);
  EXPECT_EQ(*s.position(2), 20);
  EXPECT_FALSE(s.position(4));
}

TEST(LeaderState, ShrinkAfterLagTimeExpandAtHighWatermark) {
  LeaderState s(1, {1, 2, 3}, {1, 2, 3}, 0, 0, 1000);
  s.on_leader_durable_end(100);
  s.on_follower_fetch(2, 100, 100, 1100);
  s.on_follower_fetch(3, 10, 100, 1100);  // behind
  EXPECT_FALSE(s.shrink_candidate(1500, 1000)) << "within the lag time";
  auto shrink = s.shrink_candidate(2050, 1000);
  ASSERT_TRUE(shrink);
  EXPECT_EQ(*shrink, (std::vector<int32_t>{1, 2}));
  s.set_isr(*shrink);
  EXPECT_EQ(s.high_watermark(), 100) << "the laggard no longer holds it back";
  s.on_follower_fetch(3, 90, 100, 2200);
  EXPECT_FALSE(s.expand_candidate()) << "below the high watermark";
  s.on_follower_fetch(3, 100, 100, 2300);
  auto expand = s.expand_candidate();
  ASSERT_TRUE(expand);
  EXPECT_EQ(*expand, (std::vector<int32_t>{1, 2, 3}));
}

TEST(LeaderState, CaughtUpToThePreviousFetchsLogEndCounts) {
  // Kafka's lastCaughtUpTime: a follower that keeps reaching where the leader was at its last
  // fetch is in sync under a steady stream of appends.
  LeaderState s(1, {1, 2}, {1, 2}, 0, 0, 0);
  int64_t end = 0;
  for (int64_t t = 100; t <= 5000; t += 100) {
    const int64_t previous_end = end;
    end += 10;
    s.on_leader_durable_end(end);
    s.on_follower_fetch(2, previous_end, end, t);
  }
  EXPECT_FALSE(s.shrink_candidate(5000, 1000));
}

TEST(LeaderState, NewLeaderWaitsForFollowersOfItsEpoch) {
  // A follower must reach this epoch's start before it may join, even above the HW.
  LeaderState s(2, {1, 2, 3}, {2}, 50, 40, 0);
  s.on_leader_durable_end(60);
  EXPECT_EQ(s.high_watermark(), 60) << "alone in the ISR";
  s.on_follower_fetch(3, 45, 60, 1);
  EXPECT_FALSE(s.expand_candidate());
  s.on_follower_fetch(3, 60, 60, 2);
  EXPECT_TRUE(s.expand_candidate());
}

TEST(LeaderState, AFollowerWhosePrimaryKeyStateIsPendingStaysOutOfTheIsr) {
  // A new replica copying the leader's checkpoint: its log is complete, its state is not.
  LeaderState s(1, {1, 2}, {1}, 0, 100, 0);
  s.on_leader_durable_end(100);
  s.on_follower_fetch(2, 100, 100, 10, /*state_pending=*/true);
  EXPECT_FALSE(s.expand_candidate()) << "at the log end, but its state is not open";
  EXPECT_EQ(*s.position(2), 100);
  s.on_follower_fetch(2, 100, 100, 20, /*state_pending=*/false);
  auto expand = s.expand_candidate();
  ASSERT_TRUE(expand);
  EXPECT_EQ(*expand, (std::vector<int32_t>{1, 2}));
  s.set_isr(*expand);

  // In the ISR, then its state is pending again: it leaves at once, log caught up or not.
  for (int64_t t = 100; t <= 400; t += 100) s.on_follower_fetch(2, 100, 100, t, false);
  EXPECT_FALSE(s.shrink_candidate(450, 1000));
  s.on_follower_fetch(2, 100, 100, 500, /*state_pending=*/true);
  auto shrink = s.shrink_candidate(510, 1000);
  ASSERT_TRUE(shrink);
  EXPECT_EQ(*shrink, (std::vector<int32_t>{1}));
}

TEST(LeaderState, AFetchAfterAPendingOneDoesNotInheritItsCaughtUpTime) {
  // Kafka's previous-fetch rule: reaching the leader's end at the previous fetch counts as caught
  // up at that fetch's time — not when the previous fetch had its state pending.
  LeaderState s(1, {1, 2}, {1, 2}, 0, 0, 0);
  s.on_leader_durable_end(100);
  s.on_follower_fetch(2, 100, 100, 100, false);  // caught up at 100
  s.on_follower_fetch(2, 100, 120, 900, /*state_pending=*/true);
  s.on_leader_durable_end(140);
  // At 120 = the leader's end at the previous fetch: would count as caught up at 900.
  s.on_follower_fetch(2, 120, 140, 1500, false);
  auto shrink = s.shrink_candidate(1500, 1000);
  ASSERT_TRUE(shrink) << "last caught up at 100, not 900";
  EXPECT_EQ(*shrink, (std::vector<int32_t>{1}));
}

TEST(LeaderStateModel, RandomWalk) {
  for (uint32_t seed = 1; seed <= 100; ++seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return static_cast<int64_t>(rng() % static_cast<unsigned>(n)); };
    const std::vector<int32_t> replicas = {1, 2, 3, 4};
    LeaderState s(1, replicas, replicas, 0, 0, 0);
    std::map<int32_t, int64_t> pos;                       // model positions (-1 = no fetch)
    std::map<int32_t, int64_t> caught;                    // model last caught-up time
    std::map<int32_t, std::pair<int64_t, int64_t>> last;  // (time, leader end) of last fetch
    std::map<int32_t, bool> pending;                      // its PK state pending at that fetch
    for (int32_t r : {2, 3, 4}) {
      pos[r] = -1;
      caught[r] = 0;
      last[r] = {0, -1};
      pending[r] = false;
    }
    int64_t end = 0, now = 0, hw = 0;
    const int64_t lag = 500;
    for (int step = 0; step < 400; ++step) {
      now += pick(100);
      switch (pick(4)) {
        case 0:
          end += pick(20);
          s.on_leader_durable_end(end);
          break;
        case 1:
        case 2: {
          const int32_t r = static_cast<int32_t>(2 + pick(3));
          if (r == 4 && seed % 2 == 0) break;  // a stuck follower in half the runs
          const int64_t at = std::min(end, std::max<int64_t>(pos[r], 0) + pick(30));
          // Replica 3's state is pending at some of its fetches (a checkpoint copy).
          const bool state_pending = r == 3 && pick(3) == 0;
          if (state_pending) {
            last[r] = {now, -1};
          } else {
            if (at >= end) {
              caught[r] = now;
            } else if (last[r].second >= 0 && at >= last[r].second) {
              caught[r] = std::max(caught[r], last[r].first);
            }
            last[r] = {now, end};
          }
          pending[r] = state_pending;
          pos[r] = at;
          s.on_follower_fetch(r, at, end, now, state_pending);
          break;
        }
        default:
          if (auto shrink = s.shrink_candidate(now, lag)) {
            for (int32_t r : s.isr()) {
              const bool kept = std::find(shrink->begin(), shrink->end(), r) != shrink->end();
              if (r != 1) {
                EXPECT_EQ(!kept, pending[r] || now - caught[r] > lag) << "seed " << seed;
              }
            }
            s.set_isr(*shrink);
          } else {
            // Exactly the followers outside the ISR at or past the high watermark whose state
            // was open at their latest fetch join.
            std::vector<int32_t> want = s.isr();
            for (int32_t r : {2, 3, 4}) {
              const bool in = std::find(want.begin(), want.end(), r) != want.end();
              if (!in && pos[r] >= 0 && pos[r] >= s.high_watermark() && !pending[r]) {
                want.push_back(r);
              }
            }
            auto expand = s.expand_candidate();
            if (want.size() == s.isr().size()) {
              EXPECT_FALSE(expand) << "seed " << seed;
            } else if (expand) {
              EXPECT_EQ(*expand, want) << "seed " << seed;
              s.set_isr(*expand);
            } else {
              ADD_FAILURE() << "seed " << seed << ": no expansion";
            }
          }
      }
      // The high watermark: monotonic, never past any in-sync replica, exact once all reported.
      EXPECT_GE(s.high_watermark(), hw);
      hw = s.high_watermark();
      int64_t floor = end;
      bool all_heard = true;
      for (int32_t r : s.isr()) {
        if (r == 1) continue;
        if (pos[r] < 0) {
          all_heard = false;
          continue;
        }
        floor = std::min(floor, pos[r]);
        EXPECT_LE(hw, pos[r]) << "seed " << seed << " replica " << r;
      }
      EXPECT_LE(hw, end);
      if (all_heard) {
        EXPECT_EQ(hw, std::max(floor, hw)) << "seed " << seed;
      }
      if (::testing::Test::HasFailure()) return;
    }
  }
}

}  // namespace
}  // namespace strata::broker::cluster
