// Partition roles from a snapshot and what changed between two (broker/cluster/roles.h).
#include "broker/cluster/roles.h"

#include <gtest/gtest.h>

namespace strata::broker::cluster {
namespace {

ClusterSnapshot snapshot(
    std::vector<std::tuple<std::string, std::string, std::vector<std::vector<int32_t>>,
                           std::vector<PartitionState>>>
        topics) {
  ClusterSnapshot s;
  for (auto& [name, id, replicas, states] : topics) {
    s.topics[name] = TopicRecord{name, id, replicas, {}};
    for (size_t p = 0; p < states.size(); ++p) {
      s.partitions[name][static_cast<int32_t>(p)] = VersionedPartition{states[p], 1};
    }
  }
  return s;
}

TEST(Roles, RolesOfABroker) {
  auto s = snapshot({{"t",
                      "A",
                      {{1, 2}, {2, 3}, {3, 1}},
                      {{1, 0, {1, 2}, 0}, {2, 0, {2, 3}, 0}, {-1, 3, {3}, 4}}}});
  auto r = roles_of(s, 1);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r.at({"t", 0}).kind, PartitionRole::Kind::leader);
  EXPECT_EQ(r.at({"t", 2}).kind, PartitionRole::Kind::offline);
  EXPECT_EQ(roles_of(s, 2).at({"t", 0}).kind, PartitionRole::Kind::follower);
  EXPECT_TRUE(roles_of(s, 9).empty());
}

TEST(Roles, ChangesBetweenSnapshots) {
  auto a = snapshot({{"t", "A", {{1, 2}, {2, 1}}, {{1, 0, {1, 2}, 0}, {2, 0, {2, 1}, 0}}},
                     {"gone", "G", {{1}}, {{1, 0, {1}, 0}}},
                     {"moved", "M", {{1, 2}}, {{2, 0, {2, 1}, 0}}}});
  auto b = snapshot({{"t", "A", {{1, 2}, {2, 1}}, {{1, 0, {1}, 1}, {1, 1, {1}, 1}}},
                     {"moved", "M", {{2, 3}}, {{2, 0, {2, 3}, 1}}},
                     {"new", "N", {{3, 1}}, {{3, 0, {3, 1}, 0}}}});
  auto changes = diff_roles(roles_of(a, 1), roles_of(b, 1), b);
  ASSERT_EQ(changes.update.size(), 1u);  // t-0: still leader, smaller ISR
  EXPECT_EQ(changes.update[0].first, (TopicPartitionKey{"t", 0}));
  ASSERT_EQ(changes.lead.size(), 1u);  // t-1: took over from 2
  EXPECT_EQ(changes.lead[0].first, (TopicPartitionKey{"t", 1}));
  EXPECT_EQ(changes.lead[0].second.leader_epoch, 1);
  ASSERT_EQ(changes.follow.size(), 1u);  // new-0: follows 3
  EXPECT_EQ(changes.follow[0].second.leader, 3);
  ASSERT_EQ(changes.stop.size(), 1u);  // moved-0: reassigned away
  EXPECT_EQ(changes.stop[0], (TopicPartitionKey{"moved", 0}));
  EXPECT_EQ(changes.deleted_topics, std::vector<std::string>{"gone"});
  EXPECT_TRUE(diff_roles(roles_of(b, 1), roles_of(b, 1), b).lead.empty());
}

TEST(Roles, RecreatedTopicIsDeletedThenNew) {
  auto a = snapshot({{"t", "A", {{1}}, {{1, 0, {1}, 0}}}});
  auto b = snapshot({{"t", "B", {{1}}, {{1, 0, {1}, 0}}}});
  auto changes = diff_roles(roles_of(a, 1), roles_of(b, 1), b);
  EXPECT_EQ(changes.deleted_topics, std::vector<std::string>{"t"});
  ASSERT_EQ(changes.lead.size(), 1u);
  EXPECT_EQ(changes.lead[0].second.topic_id, "B");
}

}  // namespace
}  // namespace strata::broker::cluster
