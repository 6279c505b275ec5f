// Follower fetch (broker/cluster/replica_fetch.h): by example, and a model in which leaders change
// at random — each new leader keeps whatever log it has, as after an unclean or uncommitted
// failover — while followers fetch from the current one. Every append a follower makes must
// extend a prefix of the leader's log, and once leadership settles every follower's log equals
// the leader's, record for record and epoch for epoch.
#include "broker/cluster/replica_fetch.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <vector>

namespace strata::broker::cluster {
namespace {

struct Rec {
  int32_t epoch;
  int64_t id;
  bool operator==(const Rec&) const = default;
};

// An in-memory replica; "batches" on the wire are packed Recs.
class MemLog : public ReplicaLog {
 public:
  std::vector<Rec> recs;
  int64_t start = 0;  // offset of recs[0]
  int64_t hw = 0;

  int64_t log_end() const override { return start + static_cast<int64_t>(recs.size()); }
  int32_t latest_epoch() const override { return recs.empty() ? -1 : recs.back().epoch; }
  EpochEnd end_offset_for_epoch(int32_t epoch) const override {
    // Largest epoch <= `epoch` and where it ends (start of the next epoch, or the log end).
    int32_t best = -1;
    for (const auto& r : recs) {
      if (r.epoch <= epoch) best = std::max(best, r.epoch);
    }
    if (best < 0) return {-1, -1};
    for (size_t i = 0; i < recs.size(); ++i) {
      if (recs[i].epoch > best) return {best, start + static_cast<int64_t>(i)};
    }
    return {best, log_end()};
  }
  Status truncate_to(int64_t offset) override {
    if (offset < start) return reset_to(offset);
    recs.resize(static_cast<size_t>(std::min(offset, log_end()) - start));
    hw = std::min(hw, log_end());
    return Status::Ok();
  }
  Status reset_to(int64_t offset) override {
    recs.clear();
    start = offset;
    hw = offset;
    return Status::Ok();
  }
  Status append(std::span<const uint8_t> batches) override {
    if (batches.size() % sizeof(Rec) != 0) return Status(Errc::corruption, "torn batch");
    for (size_t i = 0; i < batches.size(); i += sizeof(Rec)) {
      Rec r;
      std::memcpy(&r, batches.data() + i, sizeof(Rec));
      recs.push_back(r);
    }
    return Status::Ok();
  }
  void set_high_watermark(int64_t h) override { hw = std::max(hw, h); }

  Rec at(int64_t offset) const { return recs[static_cast<size_t>(offset - start)]; }
};

// The leader's side of one fetch.
FetchedPartition serve(const MemLog& leader, const FollowerPartition::Position& pos,
                       std::vector<uint8_t>& buffer, int64_t max_records) {
  FetchedPartition out;
  out.high_watermark = leader.log_end();
  out.log_start_offset = leader.start;
  out.leader_log_end = leader.log_end();
  if (pos.fetch_offset > leader.log_end() || pos.fetch_offset < leader.start) {
    out.error = FetchedPartition::Error::offset_out_of_range;
    return out;
  }
  out.diverging = diverging_epoch([&](int32_t e) { return leader.end_offset_for_epoch(e); },
                                  pos.fetch_offset, pos.last_fetched_epoch);
  if (out.diverging) return out;
  buffer.clear();
  for (int64_t o = pos.fetch_offset; o < std::min(leader.log_end(), pos.fetch_offset + max_records);
       ++o) {
    Rec r = leader.at(o);
    const auto* p = reinterpret_cast<const uint8_t*>(&r);
    buffer.insert(buffer.end(), p, p + sizeof(Rec));
  }
  out.records = buffer;
  return out;
}

TEST(ReplicaFetch, DivergingEpochByExample) {
  MemLog leader, follower;
  // Both had epoch 1 up to offset 3; the old leader (now follower) wrote 2 more in epoch 2 that
  // never replicated; the new leader started epoch 3 at offset 3.
  leader.recs = {{1, 1}, {1, 2}, {1, 3}, {3, 10}, {3, 11}};
  follower.recs = {{1, 1}, {1, 2}, {1, 3}, {2, 4}, {2, 5}};
  FollowerPartition fp(follower, 3);
  std::vector<uint8_t> buf;
  auto first = serve(leader, fp.position(), buf, 10);
  ASSERT_TRUE(first.diverging);
  EXPECT_EQ(*first.diverging, (EpochEnd{1, 3}));
  ASSERT_EQ(*fp.on_response(first), FollowerPartition::Next::fetch);
  EXPECT_EQ(follower.log_end(), 3);
  auto second = serve(leader, fp.position(), buf, 10);
  EXPECT_FALSE(second.diverging);
  ASSERT_TRUE(fp.on_response(second).ok());
  EXPECT_EQ(follower.recs, leader.recs);
  EXPECT_EQ(follower.hw, 5);
  EXPECT_EQ(fp.truncations(), 1u);
}

TEST(ReplicaFetch, ErrorsByExample) {
  MemLog log;
  log.recs = {{1, 1}, {1, 2}};
  FollowerPartition fp(log, 4);
  FetchedPartition p;
  p.error = FetchedPartition::Error::fenced_leader_epoch;
  EXPECT_EQ(*fp.on_response(p), FollowerPartition::Next::wait_for_leader_change);
  p.error = FetchedPartition::Error::not_leader;
  EXPECT_EQ(*fp.on_response(p), FollowerPartition::Next::wait_for_leader_change);
  p.error = FetchedPartition::Error::unknown_leader_epoch;
  EXPECT_EQ(*fp.on_response(p), FollowerPartition::Next::backoff);
  // The leader's log start passed our end (retention): start over empty there.
  p.error = FetchedPartition::Error::offset_out_of_range;
  p.log_start_offset = 50;
  p.leader_log_end = 60;
  EXPECT_EQ(*fp.on_response(p), FollowerPartition::Next::fetch);
  EXPECT_EQ(log.log_end(), 50);
  EXPECT_TRUE(log.recs.empty());
  // No common history at all: the leader has no epoch at or below ours.
  MemLog other;
  other.recs = {{5, 1}};
  auto d = diverging_epoch([&](int32_t e) { return other.end_offset_for_epoch(e); }, 3, 2);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->epoch, -1);
  EXPECT_FALSE(diverging_epoch([&](int32_t e) { return other.end_offset_for_epoch(e); }, 0, -1));
}

TEST(ReplicaFetchModel, FollowersConvergeToWhateverLeads) {
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
    std::map<int, MemLog> logs = {{1, {}}, {2, {}}, {3, {}}};
    int leader = 1;
    int32_t epoch = 0;
    int64_t next_id = 1;
    std::map<int, std::unique_ptr<FollowerPartition>> fps;
    auto reset_followers = [&] {
      fps.clear();
      for (auto& [id, log] : logs) {
        if (id != leader) fps[id] = std::make_unique<FollowerPartition>(log, epoch);
      }
    };
    reset_followers();
    std::vector<uint8_t> buf;
    for (int step = 0; step < 200; ++step) {
      const int what = pick(10);
      if (what < 3) {
        for (int i = 0, n = 1 + pick(3); i < n; ++i)
          logs[leader].recs.push_back({epoch, next_id++});
      } else if (what < 9) {
        const int f = 1 + pick(3);
        if (f == leader) continue;
        MemLog& mine = logs[f];
        const auto before = mine.recs;
        auto resp = serve(logs[leader], fps[f]->position(), buf, 1 + pick(4));
        auto next = fps[f]->on_response(resp);
        ASSERT_TRUE(next.ok());
        if (!resp.records.empty()) {
          // It appended: its whole log must now be a prefix of the leader's.
          ASSERT_LE(mine.log_end(), logs[leader].log_end()) << "seed " << seed;
          for (int64_t o = mine.start; o < mine.log_end(); ++o) {
            ASSERT_EQ(mine.at(o), logs[leader].at(o)) << "seed " << seed << " offset " << o;
          }
        }
      } else {
        leader = 1 + pick(3);  // keeps its log as is: uncommitted or unclean history diverges
        ++epoch;
        reset_followers();
      }
    }
    // Leadership settles: a bounded number of fetches makes every follower equal the leader.
    for (int round = 0; round < 200; ++round) {
      for (auto& [f, fp] : fps) {
        auto resp = serve(logs[leader], fp->position(), buf, 50);
        ASSERT_TRUE(fp->on_response(resp).ok());
      }
    }
    for (auto& [f, fp] : fps) {
      EXPECT_EQ(logs[f].recs, logs[leader].recs) << "seed " << seed << " follower " << f;
    }
    if (::testing::Test::HasFailure()) return;
  }
}

}  // namespace
}  // namespace strata::broker::cluster
