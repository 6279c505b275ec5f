// Helpers for the group coordinator unit tests: a coordinator on FakeTimers and synchronous-looking
// wrappers that capture JoinGroup/SyncGroup callbacks. Single-threaded.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <optional>

#include "broker/group/group_coordinator.h"
#include "protocol/wire/errors.h"
#include "test/unit/group/fake_journal.h"
#include "test/unit/group/fake_timers.h"

namespace strata::broker::group::testing {

using protocol::ErrorCode;

// ConsumerProtocolSubscription v0 for `topics`.
inline Bytes subscription(const std::vector<std::string>& topics) {
  Bytes b = {0, 0, 0, 0, 0, static_cast<uint8_t>(topics.size())};
  for (const auto& t : topics) {
    b.push_back(0);
    b.push_back(static_cast<uint8_t>(t.size()));
    b.insert(b.end(), t.begin(), t.end());
  }
  b.insert(b.end(), {0, 0, 0, 0});  // user data length 0
  return b;
}

struct Pending {
  std::shared_ptr<std::optional<JoinResult>> join = std::make_shared<std::optional<JoinResult>>();
  std::shared_ptr<std::optional<SyncResult>> sync = std::make_shared<std::optional<SyncResult>>();
};

class CoordinatorTest : public ::testing::Test {
 protected:
  // A coordinator over `journal` (null = no durability) that owns and has loaded every partition.
  void make(FakeJournal* journal = nullptr) {
    journal_ = journal;
    c_ = std::make_unique<GroupCoordinator>(cfg_, timers_, journal);
    ASSERT_TRUE(c_->start().ok());
    ASSERT_TRUE(c_->own_all_now().ok());
  }
  // Commits and waits for the journal; returns the partitions with their errors.
  std::vector<CommitPartition> commit(const std::string& group, int32_t generation,
                                      const std::string& member, std::vector<CommitPartition> parts,
                                      int64_t retention_ms = -1) {
    std::optional<std::vector<CommitPartition>> out;
    c_->commit(group, generation, member, std::nullopt, retention_ms, std::move(parts),
               [&out](std::vector<CommitPartition> r) { out = std::move(r); });
    if (journal_) journal_->drain();
    EXPECT_TRUE(out.has_value());
    return out.value_or(std::vector<CommitPartition>{});
  }
  // Deletes and waits for the journal; returns the answer.
  ErrorCode delete_group(const std::string& group) {
    std::optional<ErrorCode> out;
    c_->delete_group(group, [&out](ErrorCode e) { out = e; });
    if (journal_) journal_->drain();
    EXPECT_TRUE(out.has_value());
    return out.value_or(ErrorCode::unknown_server_error);
  }
  // As delete_group; `parts` gets the partitions' answers.
  ErrorCode delete_offsets(const std::string& group, std::vector<TopicPartitionError>& parts) {
    std::optional<ErrorCode> out;
    c_->delete_offsets(group, parts, [&](ErrorCode e, std::vector<TopicPartitionError> r) {
      out = e;
      parts = std::move(r);
    });
    if (journal_) journal_->drain();
    EXPECT_TRUE(out.has_value());
    return out.value_or(ErrorCode::unknown_server_error);
  }
  void SetUp() override {
    cfg_.initial_rebalance_delay_ms = 0;
    make();
  }

  JoinParams params(const std::string& member_id,
                    std::optional<std::string> instance = std::nullopt, bool v4 = false) {
    JoinParams p;
    p.group_id = group_;
    p.member_id = member_id;
    p.instance_id = std::move(instance);
    p.client_id = "client";
    p.client_host = "/127.0.0.1";
    p.session_timeout_ms = 6000;
    p.rebalance_timeout_ms = 10000;
    p.protocol_type = "consumer";
    p.protocols = {{"range", subscription({"t1"})}, {"roundrobin", subscription({"t1"})}};
    p.require_known_member_id = v4;
    return p;
  }

  std::shared_ptr<std::optional<JoinResult>> join(JoinParams p) {
    auto out = std::make_shared<std::optional<JoinResult>>();
    c_->join(std::move(p), [out](JoinResult r) { *out = std::move(r); });
    return out;
  }
  // Joins and lets a zero-delay timer fire; returns the result.
  JoinResult join_now(JoinParams p) {
    auto r = join(std::move(p));
    timers_.advance(0);
    EXPECT_TRUE(r->has_value());
    return r->value_or(JoinResult{});
  }
  std::shared_ptr<std::optional<SyncResult>> sync(
      const std::string& member, int32_t generation,
      std::vector<std::pair<std::string, Bytes>> a = {}) {
    SyncParams p;
    p.group_id = group_;
    p.member_id = member;
    p.generation = generation;
    p.assignments = std::move(a);
    auto out = std::make_shared<std::optional<SyncResult>>();
    c_->sync(std::move(p), [out](SyncResult r) { *out = std::move(r); });
    return out;
  }
  ErrorCode heartbeat(const std::string& member, int32_t generation) {
    return c_->heartbeat(group_, member, std::nullopt, generation);
  }
  // One member alone in a Stable group; returns its member id and generation.
  std::pair<std::string, int32_t> stable_single() {
    JoinResult r = join_now(params(""));
    EXPECT_EQ(r.error, ErrorCode::none);
    auto s = sync(r.member_id, r.generation, {{r.member_id, {7}}});
    if (journal_) journal_->drain();  // the leader's sync waits for its record
    EXPECT_TRUE(s->has_value());
    return {r.member_id, r.generation};
  }

  std::string group_ = "g1";
  CoordinatorConfig cfg_;
  FakeTimers timers_;
  FakeJournal* journal_ = nullptr;
  std::unique_ptr<GroupCoordinator> c_;
};

}  // namespace strata::broker::group::testing
