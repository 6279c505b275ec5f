// Group state machine: handshake, generations, protocol selection, timeouts, static members.
#include "test/unit/group/group_test_util.h"

namespace strata::broker::group::testing {
namespace {

TEST_F(CoordinatorTest, MemberIdRequiredHandshakeThenStable) {
  auto first = join(params("", std::nullopt, /*v4=*/true));
  ASSERT_TRUE(first->has_value());
  EXPECT_EQ((*first)->error, ErrorCode::member_id_required);
  const std::string id = (*first)->member_id;
  EXPECT_TRUE(id.rfind("client-", 0) == 0) << id;
  EXPECT_FALSE(c_->state_of(group_) == GroupState::preparing_rebalance);

  JoinResult r = join_now(params(id, std::nullopt, true));
  EXPECT_EQ(r.error, ErrorCode::none);
  EXPECT_EQ(r.generation, 1);
  EXPECT_EQ(r.member_id, id);
  EXPECT_EQ(r.leader, id);
  EXPECT_EQ(r.protocol_name, "range");
  ASSERT_EQ(r.members.size(), 1u);
  EXPECT_EQ(r.members[0].metadata, subscription({"t1"}));
  EXPECT_EQ(c_->state_of(group_), GroupState::completing_rebalance);

  EXPECT_EQ(heartbeat(id, 1),
            ErrorCode::none);  // heartbeats are fine while the leader computes assignments
  auto s = sync(id, 1, {{id, {1, 2, 3}}});
  ASSERT_TRUE(s->has_value());
  EXPECT_EQ((*s)->error, ErrorCode::none);
  EXPECT_EQ((*s)->assignment, (Bytes{1, 2, 3}));
  EXPECT_EQ(c_->state_of(group_), GroupState::stable);
}

TEST_F(CoordinatorTest, PendingMemberThatNeverRejoinsExpires) {
  auto first = join(params("", std::nullopt, true));
  EXPECT_EQ((*first)->error, ErrorCode::member_id_required);
  timers_.advance(6000);
  // The pending id is forgotten: rejoining with it is an unknown member.
  auto again = join(params((*first)->member_id, std::nullopt, true));
  ASSERT_TRUE(again->has_value());
  EXPECT_EQ((*again)->error, ErrorCode::unknown_member_id);
}

TEST_F(CoordinatorTest, SecondMemberTriggersRebalanceAndFollowerWaitsForLeader) {
  auto [a, gen] = stable_single();
  auto b = join(params(""));
  timers_.advance(0);
  EXPECT_FALSE(b->has_value());  // waits for a to rejoin
  EXPECT_EQ(c_->state_of(group_), GroupState::preparing_rebalance);
  EXPECT_EQ(heartbeat(a, gen), ErrorCode::rebalance_in_progress);
  // Commits are still allowed while preparing (Kafka 2.5+).
  std::vector<CommitPartition> parts{{"t1", 0, 5, -1, std::nullopt, ErrorCode::none}};
  parts = commit(group_, gen, a, parts);
  EXPECT_EQ(parts[0].error, ErrorCode::none);

  auto ra = join(params(a));
  ASSERT_TRUE(ra->has_value());
  ASSERT_TRUE(b->has_value());
  EXPECT_EQ((*ra)->generation, gen + 1);
  EXPECT_EQ((*b)->generation, gen + 1);
  EXPECT_EQ((*ra)->leader, a);
  EXPECT_EQ((*ra)->members.size(), 2u);
  EXPECT_TRUE((*b)->members.empty());
  const std::string bid = (*b)->member_id;

  auto sb = sync(bid, gen + 1);
  EXPECT_FALSE(sb->has_value());           // follower waits for the leader's assignment
  auto sa = sync(a, gen + 1, {{a, {1}}});  // b gets nothing: an empty but present assignment
  ASSERT_TRUE(sb->has_value());
  EXPECT_EQ((*sb)->error, ErrorCode::none);
  EXPECT_TRUE((*sb)->assignment.empty());
  EXPECT_EQ((*sa)->assignment, Bytes{1});
  EXPECT_EQ(c_->state_of(group_), GroupState::stable);
}

TEST_F(CoordinatorTest, SessionTimeoutRemovesSilentMember) {
  auto [a, gen] = stable_single();
  auto b = join(params(""));
  join(params(a));
  ASSERT_TRUE(b->has_value());
  const std::string bid = (*b)->member_id;
  sync(a, gen + 1, {{a, {1}}, {bid, {2}}});
  sync(bid, gen + 1);
  // Only a heartbeats.
  timers_.advance(3000);
  EXPECT_EQ(heartbeat(a, gen + 1), ErrorCode::none);
  timers_.advance(2999);
  EXPECT_EQ(heartbeat(a, gen + 1), ErrorCode::none);
  EXPECT_EQ(c_->state_of(group_), GroupState::stable);
  timers_.advance(2);  // b's 6 s session (armed at its SyncGroup) ends
  EXPECT_EQ(c_->state_of(group_), GroupState::preparing_rebalance);
  EXPECT_EQ(heartbeat(bid, gen + 1), ErrorCode::unknown_member_id);
  EXPECT_EQ(heartbeat(a, gen + 1), ErrorCode::rebalance_in_progress);
  JoinResult r = join_now(params(a));
  EXPECT_EQ(r.generation, gen + 2);
  EXPECT_EQ(r.members.size(), 1u);
}

TEST_F(CoordinatorTest, RebalanceTimeoutDropsMembersThatDoNotRejoin) {
  auto [a, gen] = stable_single();
  auto pb = params("");
  pb.session_timeout_ms = 30000;
  auto b = join(pb);
  join(params(a));
  const std::string bid = (*b)->member_id;
  sync(a, gen + 1, {{a, {1}}, {bid, {2}}});
  // a (the leader) rejoins; b keeps heartbeating but never rejoins.
  auto ra = join(params(a));
  EXPECT_FALSE(ra->has_value());
  timers_.advance(5000);
  EXPECT_EQ(heartbeat(bid, gen + 1), ErrorCode::rebalance_in_progress);
  EXPECT_FALSE(ra->has_value());
  timers_.advance(5000);  // rebalance timeout (10 s) reached
  ASSERT_TRUE(ra->has_value());
  EXPECT_EQ((*ra)->generation, gen + 2);
  EXPECT_EQ((*ra)->members.size(), 1u);
  EXPECT_EQ(heartbeat(bid, gen + 2), ErrorCode::unknown_member_id);
}

TEST_F(CoordinatorTest, ErrorsWhereJavaReturnsThem) {
  auto [a, gen] = stable_single();
  EXPECT_EQ(heartbeat(a, gen + 5), ErrorCode::illegal_generation);
  EXPECT_EQ(heartbeat("nobody", gen), ErrorCode::unknown_member_id);
  auto s = sync(a, gen - 1);
  EXPECT_EQ((*s)->error, ErrorCode::illegal_generation);
  s = sync("nobody", gen);
  EXPECT_EQ((*s)->error, ErrorCode::unknown_member_id);

  auto p = params("");
  p.session_timeout_ms = 100;
  EXPECT_EQ((*join(p))->error, ErrorCode::invalid_session_timeout);
  p = params("");
  p.protocol_type = "connect";
  EXPECT_EQ((*join(p))->error, ErrorCode::inconsistent_group_protocol);
  p = params("");
  p.protocols = {{"sticky", {}}};
  EXPECT_EQ((*join(p))->error, ErrorCode::inconsistent_group_protocol);
  p = params("");
  p.group_id = "";
  EXPECT_EQ((*join(p))->error, ErrorCode::invalid_group_id);
  p = params("someone");
  p.group_id = "no-such-group";
  EXPECT_EQ((*join(p))->error, ErrorCode::unknown_member_id);
  EXPECT_EQ(c_->heartbeat("no-such-group", "x", std::nullopt, 1), ErrorCode::unknown_member_id);
}

TEST_F(CoordinatorTest, ProtocolSelectedByVotesAmongCommonProtocols) {
  auto pa = params("");
  pa.protocols = {{"roundrobin", {1}}, {"range", {2}}};
  auto a = join(pa);
  auto pb = params("");
  pb.protocols = {{"range", {3}}, {"roundrobin", {4}}};
  auto b = join(pb);
  auto pc = params("");
  pc.protocols = {{"roundrobin", {5}}, {"range", {6}}};
  auto c = join(pc);
  timers_.advance(0);
  // a finished generation 1 alone; b and c made a rebalance that a must rejoin.
  ASSERT_TRUE(a->has_value());
  auto ra = join([&] {
    auto p = pa;
    p.member_id = (*a)->member_id;
    return p;
  }());
  ASSERT_TRUE(ra->has_value());
  EXPECT_EQ((*ra)->protocol_name, "roundrobin");  // 2 votes to 1
  for (const auto& m : (*ra)->members) EXPECT_EQ(m.metadata.size(), 1u);
}

TEST_F(CoordinatorTest, LeaveRebalancesAndLastLeaveEmptiesGroup) {
  auto [a, gen] = stable_single();
  auto b = join(params(""));
  join(params(a));
  const std::string bid = (*b)->member_id;
  sync(a, gen + 1, {{a, {1}}, {bid, {2}}});
  LeaveResult lr = c_->leave(group_, {{bid, std::nullopt}, {"ghost", std::nullopt}});
  EXPECT_EQ(lr.error, ErrorCode::none);
  EXPECT_EQ(lr.member_errors,
            (std::vector<ErrorCode>{ErrorCode::none, ErrorCode::unknown_member_id}));
  EXPECT_EQ(c_->state_of(group_), GroupState::preparing_rebalance);
  JoinResult r = join_now(params(a));
  EXPECT_EQ(r.generation, gen + 2);
  sync(a, gen + 2, {{a, {1, 2}}});
  c_->leave(group_, {{a, std::nullopt}});
  EXPECT_EQ(c_->state_of(group_), GroupState::empty);
  EXPECT_EQ(c_->generation_of(group_), gen + 3);
}

TEST_F(CoordinatorTest, InitialDelayWaitsForMoreMembers) {
  cfg_.initial_rebalance_delay_ms = 3000;
  make();
  auto a = join(params(""));
  timers_.advance(1000);
  auto b = join(params(""));
  timers_.advance(2000);  // first delay over, but b arrived during it: extend
  EXPECT_FALSE(a->has_value());
  timers_.advance(3000);
  ASSERT_TRUE(a->has_value());
  ASSERT_TRUE(b->has_value());
  EXPECT_EQ((*a)->generation, 1);
  EXPECT_EQ((*b)->generation, 1);
  EXPECT_EQ((*a)->members.size() + (*b)->members.size(), 2u);
}

TEST_F(CoordinatorTest, StaticMemberRestartKeepsAssignmentWithoutRebalance) {
  auto a = join(params("", std::string("inst-a")));
  timers_.advance(0);
  const std::string aid = (*a)->member_id;
  auto b = join(params(""));
  auto ra = join(params(aid, std::string("inst-a")));
  ASSERT_TRUE(b->has_value());
  const int32_t gen = (*ra)->generation;
  const std::string bid = (*b)->member_id;
  sync(aid, gen, {{aid, {0xA}}, {bid, {0xB}}});
  sync(bid, gen);
  ASSERT_EQ(c_->state_of(group_), GroupState::stable);

  // a's process restarts (no LeaveGroup) and joins again with its instance id.
  auto again = join(params("", std::string("inst-a")));
  ASSERT_TRUE(again->has_value());
  EXPECT_EQ((*again)->error, ErrorCode::none);
  EXPECT_EQ((*again)->generation, gen);
  const std::string new_id = (*again)->member_id;
  EXPECT_NE(new_id, aid);
  EXPECT_EQ(c_->state_of(group_), GroupState::stable);
  auto s = sync(new_id, gen);
  EXPECT_EQ((*s)->assignment, Bytes{0xA});
  EXPECT_EQ(heartbeat(bid, gen), ErrorCode::none);  // b never saw a rebalance
  EXPECT_EQ(c_->heartbeat(group_, aid, std::string("inst-a"), gen), ErrorCode::fenced_instance_id);
  auto old = join(params(aid, std::string("inst-a")));
  EXPECT_EQ((*old)->error, ErrorCode::fenced_instance_id);
}

TEST_F(CoordinatorTest, StaticMemberLeavesByInstanceId) {
  auto a = join(params("", std::string("inst-a")));
  timers_.advance(0);
  sync((*a)->member_id, (*a)->generation, {});
  LeaveResult lr = c_->leave(group_, {{"", std::string("inst-a")}, {"", std::string("inst-z")}});
  EXPECT_EQ(lr.member_errors,
            (std::vector<ErrorCode>{ErrorCode::none, ErrorCode::unknown_member_id}));
  EXPECT_EQ(c_->state_of(group_), GroupState::empty);
}

TEST_F(CoordinatorTest, ShutdownAnswersWaitingJoins) {
  auto [a, gen] = stable_single();
  auto b = join(params(""));
  EXPECT_FALSE(b->has_value());
  c_->shutdown();
  ASSERT_TRUE(b->has_value());
  EXPECT_EQ((*b)->error, ErrorCode::not_coordinator);
  EXPECT_EQ(timers_.pending(), 0u);
}

}  // namespace
}  // namespace strata::broker::group::testing
