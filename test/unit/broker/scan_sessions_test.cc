// ScanSessions (broker/pk/scan_sessions.h): idle expiry releases a session's snapshot, the cap
// evicts the least recently used session, find() refreshes the idle clock, close() forgets a
// session, ids are random 128-bit values, and a session is found only from the connection that
// opened it.
#include "broker/pk/scan_sessions.h"

#include <gtest/gtest.h>

#include <set>

#include "storage/partition_log.h"
#include "test/unit/storage/test_util.h"

namespace strata::broker {
namespace {

class ScanSessionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto log = storage::PartitionLog::open(storage::default_env(), tmp_.sub("t-0"), {}, 1);
    ASSERT_TRUE(log.ok());
    log_ = std::move(*log);
    auto s = pkindex::PkState::open(env_, *log_, {});
    ASSERT_TRUE(s.ok());
    state_ = std::move(*s);
  }
  static constexpr uint64_t kConn = 7;  // the connection id most tests open sessions on

  std::shared_ptr<ScanSessions::Session> open(ScanSessions& ss, int64_t now,
                                              uint64_t connection = kConn) {
    auto snap = state_->open_snapshot();
    EXPECT_TRUE(snap.ok());
    return ss.open("topic", "id", 0, state_, std::move(*snap), connection, now);
  }

  storage::testing::TempDir tmp_;
  pkindex::PkEnvironment env_;
  std::unique_ptr<storage::PartitionLog> log_;
  std::shared_ptr<pkindex::PkState> state_;
  boost::asio::io_context io_;
};

TEST_F(ScanSessionsTest, IdleSessionsExpireAndReleaseTheirSnapshot) {
  ScanSessions ss(io_, /*timeout_ms=*/100, 10);
  auto id = open(ss, 1000)->id;
  EXPECT_EQ(state_->open_snapshots(), 1u);
  ASSERT_NE(ss.find(id, kConn, 1099), nullptr);  // refreshes: now idle since 1099
  ASSERT_NE(ss.find(id, kConn, 1198), nullptr);
  EXPECT_EQ(ss.find(id, kConn, 1298), nullptr);  // 100 ms idle
  EXPECT_EQ(ss.size(), 0u);
  EXPECT_EQ(state_->open_snapshots(), 0u);
  auto unknown = id;
  unknown[15] ^= 1;
  EXPECT_EQ(ss.find(unknown, kConn, 1300), nullptr);
}

TEST_F(ScanSessionsTest, OverTheCapTheLeastRecentlyUsedGoes) {
  ScanSessions ss(io_, 100000, 2);
  auto a = open(ss, 1)->id;
  auto b = open(ss, 2)->id;
  ASSERT_NE(ss.find(a, kConn, 3), nullptr);  // b is now the least recently used
  auto c = open(ss, 4)->id;
  EXPECT_EQ(ss.size(), 2u);
  EXPECT_EQ(ss.find(b, kConn, 5), nullptr);
  EXPECT_NE(ss.find(a, kConn, 5), nullptr);
  EXPECT_NE(ss.find(c, kConn, 5), nullptr);
  EXPECT_NE(a, c);
  EXPECT_EQ(state_->open_snapshots(), 2u);
  ss.close(a);
  EXPECT_EQ(ss.find(a, kConn, 6), nullptr);
  EXPECT_EQ(state_->open_snapshots(), 1u);
}

TEST_F(ScanSessionsTest, IdsAreRandom128BitValues) {
  // Sequential or counter-derived ids would share most bytes; CSPRNG ids differ everywhere. With
  // 200 ids, every byte position takes many distinct values and no two ids are equal.
  ScanSessions ss(io_, 100000, 1000);
  std::set<ScanSessions::SessionId> ids;
  std::array<std::set<uint8_t>, 16> by_position;
  for (int i = 0; i < 200; ++i) {
    auto id = open(ss, i)->id;
    EXPECT_TRUE(ids.insert(id).second);
    for (size_t b = 0; b < id.size(); ++b) by_position[b].insert(id[b]);
  }
  for (size_t b = 0; b < by_position.size(); ++b) {
    EXPECT_GT(by_position[b].size(), 64u) << "byte " << b << " barely varies";
  }
  EXPECT_NE(ScanSessions::random_id(), ScanSessions::random_id());
}

TEST_F(ScanSessionsTest, OnlyTheOpeningConnectionFindsASession) {
  ScanSessions ss(io_, /*timeout_ms=*/100, 2);
  auto a = open(ss, 1000, /*connection=*/1)->id;
  EXPECT_EQ(ss.find(a, 2, 1010), nullptr);  // another connection: "not found"
  EXPECT_EQ(ss.size(), 1u);                 // ... but the session is untouched
  ASSERT_NE(ss.find(a, 1, 1020), nullptr);
  EXPECT_EQ(ss.find(a, 1, 1020)->connection, 1u);
  // A foreign find neither restarts the idle clock (idle since 1020 → gone at 1120) ...
  EXPECT_EQ(ss.find(a, 2, 1110), nullptr);
  EXPECT_EQ(ss.find(a, 1, 1120), nullptr);
  EXPECT_EQ(state_->open_snapshots(), 0u);
  // ... nor moves the session in the LRU order: c is evicted, not b, after a foreign find of b.
  auto b = open(ss, 2000, 1)->id;
  auto c = open(ss, 2001, 1)->id;
  ASSERT_NE(ss.find(b, 1, 2002), nullptr);  // c is now the least recently used
  EXPECT_EQ(ss.find(c, 2, 2003), nullptr);  // a foreign find must not refresh c
  open(ss, 2004, 3);                        // over the cap of 2: the LRU one (c) goes
  EXPECT_EQ(ss.find(c, 1, 2005), nullptr);
  EXPECT_NE(ss.find(b, 1, 2005), nullptr);
}

TEST_F(ScanSessionsTest, SweepTimerExpiresWithoutRequests) {
  ScanSessions ss(io_, 1, 10);
  open(ss, 0);  // long idle by the (steady) idle clock
  ss.start();
  io_.run_for(std::chrono::milliseconds(1500));
  EXPECT_EQ(ss.size(), 0u);
  EXPECT_EQ(state_->open_snapshots(), 0u);
  ss.stop();
}

}  // namespace
}  // namespace strata::broker
