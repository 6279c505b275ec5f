// Committed offsets and admin calls: commit/fetch, Java's error codes, group and offset deletion,
// topic deletion, retention.
#include "broker/group/consumer_protocol.h"
#include "test/unit/group/group_test_util.h"

namespace strata::broker::group::testing {
namespace {

CommitPartition cp(const std::string& topic, int32_t p, int64_t offset,
                   std::optional<std::string> md = std::nullopt) {
  CommitPartition c;
  c.topic = topic;
  c.partition = p;
  c.offset = offset;
  c.leader_epoch = 3;
  c.metadata = std::move(md);
  return c;
}

TEST_F(CoordinatorTest, SimpleCommitAndFetchRoundTripMetadata) {
  std::vector<CommitPartition> parts{cp("t1", 0, 42, "hello"), cp("t1", 1, 7)};
  parts = commit("simple", -1, "", parts);
  EXPECT_EQ(parts[0].error, ErrorCode::none);
  EXPECT_EQ(parts[1].error, ErrorCode::none);
  std::vector<FetchedPartition> got;
  std::vector<std::pair<std::string, std::vector<int32_t>>> req{{"t1", {0, 1, 2}}};
  EXPECT_EQ(c_->fetch_offsets("simple", req, got), ErrorCode::none);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].offset, 42);
  EXPECT_EQ(got[0].metadata, "hello");
  EXPECT_EQ(got[0].leader_epoch, 3);
  EXPECT_EQ(got[1].offset, 7);
  EXPECT_EQ(got[1].metadata, "");
  EXPECT_EQ(got[2].offset, -1);
  got.clear();
  EXPECT_EQ(c_->fetch_offsets("simple", std::nullopt, got), ErrorCode::none);
  EXPECT_EQ(got.size(), 2u);
  got.clear();
  EXPECT_EQ(c_->fetch_offsets("unknown", req, got), ErrorCode::none);
  EXPECT_EQ(got[0].offset, -1);
  auto listed = c_->list();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].state, "Empty");
  EXPECT_EQ(listed[0].protocol_type, "");
}

TEST_F(CoordinatorTest, CommitErrors) {
  std::vector<CommitPartition> parts{cp("t1", 0, 1)};
  parts = commit("no-such-group", 3, "m", parts);
  EXPECT_EQ(parts[0].error, ErrorCode::illegal_generation);

  auto [a, gen] = stable_single();
  parts = {cp("t1", 0, 1)};
  parts = commit(group_, gen + 1, a, parts);
  EXPECT_EQ(parts[0].error, ErrorCode::illegal_generation);
  parts = {cp("t1", 0, 1)};
  parts = commit(group_, gen, "stranger", parts);
  EXPECT_EQ(parts[0].error, ErrorCode::unknown_member_id);
  parts = {cp("t1", 0, 1)};
  parts = commit(group_, -1, "", parts);  // not a simple group any more
  EXPECT_EQ(parts[0].error, ErrorCode::unknown_member_id);

  parts = {cp("t1", 0, 1, std::string(cfg_.offset_metadata_max_bytes + 1, 'x')),
           cp("t1", 1, 2, std::string(cfg_.offset_metadata_max_bytes, 'x')), cp("t9", 0, 1)};
  parts[2].error = ErrorCode::unknown_topic_or_partition;  // set by the handler
  parts = commit(group_, gen, a, parts);
  EXPECT_EQ(parts[0].error, ErrorCode::offset_metadata_too_large);
  EXPECT_EQ(parts[1].error, ErrorCode::none);
  EXPECT_EQ(parts[2].error, ErrorCode::unknown_topic_or_partition);

  // CompletingRebalance: commits are refused until the assignment is known.
  auto b = join(params(""));
  join(params(a));
  ASSERT_EQ(c_->state_of(group_), GroupState::completing_rebalance);
  parts = {cp("t1", 0, 1)};
  parts = commit(group_, gen + 1, a, parts);
  EXPECT_EQ(parts[0].error, ErrorCode::rebalance_in_progress);
}

TEST_F(CoordinatorTest, DescribeShowsMembersAndAssignmentsWhenStable) {
  auto [a, gen] = stable_single();
  GroupSummary s = c_->describe(group_);
  EXPECT_EQ(s.state, "Stable");
  EXPECT_EQ(s.protocol_type, "consumer");
  EXPECT_EQ(s.protocol_data, "range");
  ASSERT_EQ(s.members.size(), 1u);
  EXPECT_EQ(s.members[0].member_id, a);
  EXPECT_EQ(s.members[0].client_host, "/127.0.0.1");
  EXPECT_EQ(s.members[0].assignment, Bytes{7});
  EXPECT_EQ(s.members[0].metadata, subscription({"t1"}));
  EXPECT_EQ(c_->describe("nope").state, "Dead");
}

TEST_F(CoordinatorTest, DeleteGroup) {
  EXPECT_EQ(delete_group("nope"), ErrorCode::group_id_not_found);
  auto [a, gen] = stable_single();
  std::vector<CommitPartition> parts{cp("t1", 0, 5)};
  parts = commit(group_, gen, a, parts);
  EXPECT_EQ(delete_group(group_), ErrorCode::non_empty_group);
  c_->leave(group_, {{a, std::nullopt}});
  EXPECT_EQ(delete_group(group_), ErrorCode::none);
  EXPECT_TRUE(c_->list().empty());
  std::vector<FetchedPartition> got;
  c_->fetch_offsets(group_, std::nullopt, got);
  EXPECT_TRUE(got.empty());
}

TEST_F(CoordinatorTest, OffsetDeleteRefusesSubscribedTopics) {
  auto [a, gen] = stable_single();  // subscribed to t1
  std::vector<CommitPartition> parts{cp("t1", 0, 5), cp("t2", 0, 6)};
  parts = commit(group_, gen, a, parts);
  std::vector<TopicPartitionError> del{{"t1", 0, ErrorCode::none}, {"t2", 0, ErrorCode::none}};
  EXPECT_EQ(delete_offsets(group_, del), ErrorCode::none);
  EXPECT_EQ(del[0].error, ErrorCode::group_subscribed_to_topic);
  EXPECT_EQ(del[1].error, ErrorCode::none);
  std::vector<FetchedPartition> got;
  c_->fetch_offsets(group_, std::nullopt, got);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].topic, "t1");
  std::vector<TopicPartitionError> none;
  EXPECT_EQ(delete_offsets("nope", none), ErrorCode::group_id_not_found);
  EXPECT_EQ(delete_offsets("", none), ErrorCode::invalid_group_id);
}

TEST_F(CoordinatorTest, TopicDeletionDropsOffsets) {
  std::vector<CommitPartition> parts{cp("t1", 0, 5), cp("t2", 0, 6)};
  parts = commit("s", -1, "", parts);
  c_->on_topic_deleted("t1");
  std::vector<FetchedPartition> got;
  c_->fetch_offsets("s", std::nullopt, got);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].topic, "t2");
}

TEST_F(CoordinatorTest, RetentionExpiresOffsetsOfEmptyGroupsOnly) {
  cfg_.offsets_retention_ms = 60000;
  cfg_.retention_check_interval_ms = 10000;
  make();
  std::vector<CommitPartition> parts{cp("t1", 0, 5)};
  parts = commit("simple", -1, "", parts);
  auto [a, gen] = stable_single();
  parts = {cp("t1", 0, 9)};
  parts = commit(group_, gen, a, parts);
  for (int i = 0; i < 16; ++i) {  // 80 s, a keeps its session alive
    timers_.advance(5000);
    EXPECT_EQ(heartbeat(a, gen), ErrorCode::none);
  }
  auto listed = c_->list();
  ASSERT_EQ(listed.size(), 1u);  // the simple group expired and disappeared
  EXPECT_EQ(listed[0].group_id, group_);
  std::vector<FetchedPartition> got;
  c_->fetch_offsets(group_, std::nullopt, got);
  EXPECT_EQ(got.size(), 1u);
}

TEST(ConsumerProtocol, ParsesSubscriptionTopics) {
  auto t = parse_subscription_topics(subscription({"a", "bc"}));
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(*t, (std::vector<std::string>{"a", "bc"}));
  EXPECT_FALSE(parse_subscription_topics({0, 0, 0, 0, 0, 5, 0}).has_value());
  EXPECT_FALSE(parse_subscription_topics({}).has_value());
}

}  // namespace
}  // namespace strata::broker::group::testing
