// ScanSessions (broker/scan_sessions.h): idle expiry releases a session's snapshot, the cap evicts
// the least recently used session, find() refreshes the idle clock, close() forgets a session.
#include "broker/scan_sessions.h"

#include <gtest/gtest.h>

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
  std::shared_ptr<ScanSessions::Session> open(ScanSessions& ss, int64_t now) {
    auto snap = state_->open_snapshot();
    EXPECT_TRUE(snap.ok());
    return ss.open("topic", "id", 0, state_, std::move(*snap), now);
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
  ASSERT_NE(ss.find(id, 1099), nullptr);  // refreshes: now idle since 1099
  ASSERT_NE(ss.find(id, 1198), nullptr);
  EXPECT_EQ(ss.find(id, 1298), nullptr);  // 100 ms idle
  EXPECT_EQ(ss.size(), 0u);
  EXPECT_EQ(state_->open_snapshots(), 0u);
  EXPECT_EQ(ss.find(id + 12345, 1300), nullptr);  // unknown
}

TEST_F(ScanSessionsTest, OverTheCapTheLeastRecentlyUsedGoes) {
  ScanSessions ss(io_, 100000, 2);
  auto a = open(ss, 1)->id;
  auto b = open(ss, 2)->id;
  ASSERT_NE(ss.find(a, 3), nullptr);  // b is now the least recently used
  auto c = open(ss, 4)->id;
  EXPECT_EQ(ss.size(), 2u);
  EXPECT_EQ(ss.find(b, 5), nullptr);
  EXPECT_NE(ss.find(a, 5), nullptr);
  EXPECT_NE(ss.find(c, 5), nullptr);
  EXPECT_NE(a, c);
  EXPECT_EQ(state_->open_snapshots(), 2u);
  ss.close(a);
  EXPECT_EQ(ss.find(a, 6), nullptr);
  EXPECT_EQ(state_->open_snapshots(), 1u);
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
