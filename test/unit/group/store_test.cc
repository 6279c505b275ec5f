// GroupStore: groups and offsets survive a reopen; a restored Stable group keeps serving its
// members and rebalances normally when their sessions expire. Also reports the cost of sync writes.
#include <chrono>
#include <filesystem>

#include "test/unit/group/group_test_util.h"

namespace strata::broker::group::testing {
namespace {

class StoreTest : public CoordinatorTest {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("strata-group-store-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    cfg_.initial_rebalance_delay_ms = 0;
    reopen();
  }
  void TearDown() override {
    c_.reset();
    std::filesystem::remove_all(dir_);
  }
  void reopen() {
    c_.reset();
    auto store = GroupStore::open(dir_.string());
    ASSERT_TRUE(store.ok()) << store.status().to_string();
    make(std::move(store.value()));
  }
  std::filesystem::path dir_;
};

TEST_F(StoreTest, GroupAndOffsetsSurviveRestart) {
  auto [a, gen] = stable_single();
  std::vector<CommitPartition> parts{{"t1", 0, 123, 4, std::string("md-✓"), ErrorCode::none}};
  c_->commit(group_, gen, a, std::nullopt, -1, parts);
  std::vector<CommitPartition> simple{{"t2", 3, 9, -1, std::nullopt, ErrorCode::none}};
  c_->commit("simple", -1, "", std::nullopt, -1, simple);
  reopen();

  EXPECT_EQ(c_->state_of(group_), GroupState::stable);
  EXPECT_EQ(c_->generation_of(group_), gen);
  EXPECT_EQ(heartbeat(a, gen), ErrorCode::none);  // the member carries on after the restart
  GroupSummary s = c_->describe(group_);
  ASSERT_EQ(s.members.size(), 1u);
  EXPECT_EQ(s.members[0].assignment, Bytes{7});
  std::vector<FetchedPartition> got;
  c_->fetch_offsets(group_, std::nullopt, got);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].offset, 123);
  EXPECT_EQ(got[0].leader_epoch, 4);
  EXPECT_EQ(got[0].metadata, "md-✓");
  got.clear();
  c_->fetch_offsets("simple", std::nullopt, got);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].partition, 3);

  // No heartbeats: the restored member's session ends and the group empties.
  timers_.advance(6001);
  EXPECT_EQ(c_->state_of(group_), GroupState::empty);
  EXPECT_EQ(c_->generation_of(group_), gen + 1);
  reopen();
  EXPECT_EQ(c_->state_of(group_), GroupState::empty);
  EXPECT_EQ(c_->generation_of(group_), gen + 1);
}

TEST_F(StoreTest, DeletedGroupAndTopicStayDeleted) {
  std::vector<CommitPartition> parts{{"t1", 0, 1, -1, std::nullopt, ErrorCode::none},
                                     {"t2", 0, 2, -1, std::nullopt, ErrorCode::none}};
  c_->commit("s1", -1, "", std::nullopt, -1, parts);
  c_->commit("s2", -1, "", std::nullopt, -1, parts);
  EXPECT_EQ(c_->delete_group("s1"), ErrorCode::none);
  c_->on_topic_deleted("t1");
  reopen();
  std::vector<FetchedPartition> got;
  c_->fetch_offsets("s1", std::nullopt, got);
  EXPECT_TRUE(got.empty());
  c_->fetch_offsets("s2", std::nullopt, got);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].topic, "t2");
}

// Not an assertion on speed: prints what fsync-per-commit costs on this machine.
TEST_F(StoreTest, SyncWriteCost) {
  c_.reset();
  for (bool sync : {false, true}) {
    std::filesystem::remove_all(dir_);
    auto store = GroupStore::open(dir_.string(), sync);
    ASSERT_TRUE(store.ok());
    constexpr int kN = 200;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kN; ++i) {
      OffsetEntry e;
      e.offset = i;
      ASSERT_TRUE((*store)->put_offsets("g", {{OffsetKey{"g", "t", i % 6}, e}}).ok());
    }
    auto us =
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    std::printf("group store: %d commits with sync=%s: %.1f us/commit\n", kN,
                sync ? "true" : "false", static_cast<double>(us) / kN);
  }
}

}  // namespace
}  // namespace strata::broker::group::testing
