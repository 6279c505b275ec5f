// GroupCoordinator: Kafka's classic group protocol for every group this broker coordinates —
// membership (JoinGroup/SyncGroup/Heartbeat/LeaveGroup, static members, the MEMBER_ID_REQUIRED
// handshake), rebalance and session timeouts, committed offsets, and the group admin calls. The
// error codes follow Kafka's GroupCoordinator. Owned by Broker; every public method is thread-safe
// (one mutex). JoinGroup/SyncGroup complete through callbacks, possibly later and from a timer
// thread; callbacks always run with the lock released.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "broker/group/group.h"
#include "broker/group/group_store.h"
#include "broker/group/timers.h"

namespace strata::broker::group {

struct CoordinatorConfig {
  int32_t initial_rebalance_delay_ms = 3000;
  int32_t min_session_timeout_ms = 6000;
  int32_t max_session_timeout_ms = 1800000;
  int32_t offset_metadata_max_bytes = 4096;
  int64_t offsets_retention_ms = 10080LL * 60 * 1000;
  int64_t retention_check_interval_ms = 600000;
};

struct JoinParams {
  std::string group_id;
  std::string member_id;
  std::optional<std::string> instance_id;
  std::string client_id;
  std::string client_host;
  int32_t session_timeout_ms = 0;
  int32_t rebalance_timeout_ms = 0;
  std::string protocol_type;
  std::vector<std::pair<std::string, Bytes>> protocols;
  bool require_known_member_id = false;   // JoinGroup v4+
  bool supports_skip_assignment = false;  // JoinGroup v9+
};

struct SyncParams {
  std::string group_id;
  int32_t generation = -1;
  std::string member_id;
  std::optional<std::string> instance_id;
  std::optional<std::string> protocol_type;
  std::optional<std::string> protocol_name;
  std::vector<std::pair<std::string, Bytes>> assignments;
};

struct LeaveRequestMember {
  std::string member_id;
  std::optional<std::string> instance_id;
};

struct LeaveResult {
  protocol::ErrorCode error = protocol::ErrorCode::none;  // group-level
  std::vector<protocol::ErrorCode> member_errors;
};

// One partition of an OffsetCommit; `error` is pre-set by the handler (unknown topic) and filled
// in by commit().
struct CommitPartition {
  std::string topic;
  int32_t partition = 0;
  int64_t offset = 0;
  int32_t leader_epoch = -1;
  std::optional<std::string> metadata;
  protocol::ErrorCode error = protocol::ErrorCode::none;
};

struct FetchedPartition {
  std::string topic;
  int32_t partition = 0;
  int64_t offset = -1;
  int32_t leader_epoch = -1;
  std::string metadata;
  protocol::ErrorCode error = protocol::ErrorCode::none;
};

struct MemberSummary {
  std::string member_id;
  std::optional<std::string> instance_id;
  std::string client_id;
  std::string client_host;
  Bytes metadata;
  Bytes assignment;
};

struct GroupSummary {
  protocol::ErrorCode error = protocol::ErrorCode::none;
  std::string state;
  std::string protocol_type;
  std::string protocol_data;
  std::vector<MemberSummary> members;
};

struct ListedGroup {
  std::string group_id;
  std::string protocol_type;
  std::string state;
};

struct TopicPartitionError {
  std::string topic;
  int32_t partition = 0;
  protocol::ErrorCode error = protocol::ErrorCode::none;
};

class GroupCoordinator {
 public:
  // `store` may be null (unit tests without durability).
  GroupCoordinator(CoordinatorConfig config, Timers& timers, std::unique_ptr<GroupStore> store);
  ~GroupCoordinator();

  // Loads persisted groups; restored members get fresh session timers. Starts the retention task.
  Status start();
  // Answers every waiting JoinGroup/SyncGroup with NOT_COORDINATOR and cancels all timers (the
  // destructor does it too).
  void shutdown();

  void join(JoinParams p, JoinCallback done);
  void sync(SyncParams p, SyncCallback done);
  protocol::ErrorCode heartbeat(const std::string& group_id, const std::string& member_id,
                                const std::optional<std::string>& instance_id, int32_t generation);
  LeaveResult leave(const std::string& group_id, const std::vector<LeaveRequestMember>& members);

  // Fills each partition's error. generation < 0 with an empty/unknown group = a simple commit.
  void commit(const std::string& group_id, int32_t generation, const std::string& member_id,
              const std::optional<std::string>& instance_id, int64_t retention_ms,
              std::vector<CommitPartition>& parts);
  // `requested` null = every committed offset of the group. Returns the group-level error.
  protocol::ErrorCode fetch_offsets(
      const std::string& group_id,
      const std::optional<std::vector<std::pair<std::string, std::vector<int32_t>>>>& requested,
      std::vector<FetchedPartition>& out);
  GroupSummary describe(const std::string& group_id);
  std::vector<ListedGroup> list();
  protocol::ErrorCode delete_group(const std::string& group_id);
  // Per-partition errors are pre-set by the handler (unknown topics); returns the group error.
  // `subscribed` tells whether the group still consumes a topic (Kafka: GROUP_SUBSCRIBED_TO_TOPIC).
  protocol::ErrorCode delete_offsets(const std::string& group_id,
                                     std::vector<TopicPartitionError>& parts);
  // Drops every committed offset of a deleted topic.
  void on_topic_deleted(const std::string& topic);
  // Expires offsets of empty groups older than the retention; removes groups left with nothing.
  void expire_offsets();

  // For tests.
  std::optional<GroupState> state_of(const std::string& group_id);
  int32_t generation_of(const std::string& group_id);

 private:
  using Deferred = std::vector<std::function<void()>>;
  struct Locked;

  Group* find(const std::string& id);
  Group& get_or_create(const std::string& id);
  void add_member_and_rebalance(Group& g, JoinParams& p, const std::string& member_id,
                                JoinCallback done);
  void update_member_and_rebalance(Group& g, Member& m, JoinParams& p, JoinCallback done);
  void join_existing(Group& g, JoinParams& p, JoinCallback done);
  void join_new(Group& g, JoinParams& p, JoinCallback done);
  void join_static_known(Group& g, JoinParams& p, const std::string& old_id, JoinCallback done);
  void maybe_prepare_rebalance(Group& g, const std::string& reason);
  void prepare_rebalance(Group& g, const std::string& reason);
  void try_complete_join(Group& g);
  void complete_join(Group& g);
  void on_join_timer(const std::string& group_id, uint64_t token);
  void arm_join_timer(Group& g, int64_t delay_ms);
  void reset_and_propagate(Group& g, protocol::ErrorCode error);
  void propagate_assignment(Group& g);
  void remove_member(Group& g, const std::string& member_id, protocol::ErrorCode pending_error);
  void remove_member_and_update(Group& g, const std::string& member_id, const std::string& reason);
  void arm_session(Group& g, Member& m, int64_t timeout_ms);
  void on_session_expired(const std::string& group_id, const std::string& member_id,
                          uint64_t token);
  void on_pending_expired(const std::string& group_id, const std::string& member_id,
                          uint64_t token);
  JoinResult current_join_result(const Group& g, const Member& m, bool include_members) const;
  std::vector<JoinMember> member_list(const Group& g) const;
  void persist(const Group& g);
  void transition(Group& g, GroupState to);
  void schedule_retention();
  std::vector<std::string> subscribed_topics(const Group& g, bool& known) const;

  CoordinatorConfig config_;
  Timers& timers_;
  std::unique_ptr<GroupStore> store_;
  std::mutex mu_;
  std::map<std::string, Group> groups_;
  Deferred deferred_;  // callbacks to run once mu_ is released
  uint64_t next_token_ = 1;
  uint64_t member_seq_ = 0;
  bool stopped_ = false;
};

}  // namespace strata::broker::group
