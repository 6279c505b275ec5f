// GroupCoordinator: Kafka's classic group protocol for every group this broker coordinates —
// membership (JoinGroup/SyncGroup/Heartbeat/LeaveGroup, static members, the MEMBER_ID_REQUIRED
// handshake), rebalance and session timeouts, committed offsets, and the group admin calls. The
// error codes follow Kafka's GroupCoordinator. Owned by Broker; every public method is thread-safe
// (one mutex). JoinGroup/SyncGroup/OffsetCommit complete through callbacks, possibly later and
// from a timer or I/O thread; callbacks always run with the lock released.
//
// Durable state is a journal (group_journal.h): the partitions of `__consumer_offsets`. A group
// belongs to one partition (Kafka's hash rule) and is served only while this broker owns it:
// own_partition() (this broker became its leader) loads the partition's records — meanwhile the
// group's requests answer COORDINATOR_LOAD_IN_PROGRESS — and release_partition() (leadership
// moved) drops its groups, answering waiting joins NOT_COORDINATOR as every later request is.
// Offset commits and the leader's SyncGroup are answered once their records are durable in the
// journal (acks=all on a cluster); other metadata changes and tombstones are written without
// waiting, in order.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "broker/group/group.h"
#include "broker/group/group_journal.h"
#include "broker/group/group_records.h"
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

using CommitCallback = std::function<void(std::vector<CommitPartition>)>;

class GroupCoordinator {
 public:
  // `journal` may be null (unit tests without durability: one partition, always owned); it
  // outlives the coordinator.
  GroupCoordinator(CoordinatorConfig config, Timers& timers, GroupJournal* journal);
  ~GroupCoordinator();

  // Starts the retention task.
  Status start();
  // The journal partition of a group.
  int32_t partition_for(const std::string& group_id) const;
  // This broker now leads journal partition `p`: loads it (on the journal's worker), then serves
  // its groups; loaded members get fresh session timers. A failed load is retried. No-op while
  // already owned.
  void own_partition(int32_t p);
  // Owns and loads every partition now, on the calling thread (a single node's start).
  Status own_all_now();
  // Leadership of `p` moved away: its groups are dropped from memory (waiting joins and syncs
  // answer NOT_COORDINATOR).
  void release_partition(int32_t p);
  // For metrics and tests: partitions owned and loaded, and being loaded.
  std::pair<size_t, size_t> owned_partitions();
  // Answers every waiting JoinGroup/SyncGroup with NOT_COORDINATOR and cancels all timers (the
  // destructor does it too).
  void shutdown();

  void join(JoinParams p, JoinCallback done);
  void sync(SyncParams p, SyncCallback done);
  protocol::ErrorCode heartbeat(const std::string& group_id, const std::string& member_id,
                                const std::optional<std::string>& instance_id, int32_t generation);
  LeaveResult leave(const std::string& group_id, const std::vector<LeaveRequestMember>& members);

  // Fills each partition's error and calls `done` with them once the offsets are durable (or
  // failed). generation < 0 with an empty/unknown group = a simple commit.
  void commit(const std::string& group_id, int32_t generation, const std::string& member_id,
              const std::optional<std::string>& instance_id, int64_t retention_ms,
              std::vector<CommitPartition> parts, CommitCallback done);
  // The offsets of a committed transaction (TxnOffsetCommit): written as a commit outside any
  // generation — the transaction, not the group's membership, decided them.
  void commit_transactional(const std::string& group_id, std::vector<CommitPartition> parts,
                            CommitCallback done);
  // `requested` null = every committed offset of the group. Returns the group-level error.
  protocol::ErrorCode fetch_offsets(
      const std::string& group_id,
      const std::optional<std::vector<std::pair<std::string, std::vector<int32_t>>>>& requested,
      std::vector<FetchedPartition>& out);
  GroupSummary describe(const std::string& group_id);
  std::vector<ListedGroup> list();
  // Deletions are answered once their tombstones are durable (as a commit is), so a crash after
  // the answer cannot bring the offsets back. The group (or its offsets) leaves memory at once,
  // as in Kafka; should the tombstones fail, the answer is the write's error
  // (NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE) and the next load may bring them back.
  using ErrorCallback = std::function<void(protocol::ErrorCode)>;
  void delete_group(const std::string& group_id, ErrorCallback done);
  // Per-partition errors are pre-set by the handler (unknown topics); `done` gets the group error
  // and the partitions with theirs (Kafka: GROUP_SUBSCRIBED_TO_TOPIC for a topic the group still
  // consumes).
  using DeleteOffsetsCallback =
      std::function<void(protocol::ErrorCode, std::vector<TopicPartitionError>)>;
  void delete_offsets(const std::string& group_id, std::vector<TopicPartitionError> parts,
                      DeleteOffsetsCallback done);
  // Drops every committed offset of a deleted topic.
  void on_topic_deleted(const std::string& topic);
  // Expires offsets of empty groups older than the retention; removes groups left with nothing.
  void expire_offsets();

  // For tests.
  std::optional<GroupState> state_of(const std::string& group_id);
  int32_t generation_of(const std::string& group_id);

 private:
  using Deferred = std::vector<std::function<void()>>;
  // Holds mu_; on destruction releases it and runs the callbacks queued meanwhile.
  struct Locked {
    GroupCoordinator& c;
    std::unique_lock<std::mutex> l;
    explicit Locked(GroupCoordinator& co) : c(co), l(co.mu_) {}
    ~Locked() {
      Deferred d;
      d.swap(c.deferred_);
      l.unlock();
      for (auto& f : d) f();
    }
  };

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
  // Writes the offsets of `parts` without error (mu_ held); `done` once durable or failed.
  void write_offsets(const std::string& group_id, int64_t retention_ms,
                     std::vector<CommitPartition> parts, CommitCallback done);
  // Writes the group's metadata record; `done` (optional) runs with the lock released once it is
  // durable or failed.
  void persist(const Group& g, std::function<void(protocol::ErrorCode)> done = nullptr);
  // Appends records to the group's partition; `done` runs with the lock released.
  void write(const std::string& group_id, std::vector<JournalRecord> records,
             std::function<void(protocol::ErrorCode, int64_t)> done = nullptr);
  // Tombstones for offsets (and the group record when `group_too`).
  // `done` (optional) gets the write's error once it is durable or failed.
  void write_tombstones(const std::string& group_id, const std::vector<OffsetKey>& keys,
                        bool group_too, ErrorCallback done = nullptr);
  // none when this broker serves the group now, else NOT_COORDINATOR /
  // COORDINATOR_LOAD_IN_PROGRESS.
  protocol::ErrorCode owner_error(const std::string& group_id) const;
  // The journal's partition count now (1 without a journal), cached once the journal says it is
  // fixed (every request maps its group with it).
  int32_t partitions() const;
  // Loads partition `p` for ownership `token` (the journal's worker, or the caller).
  Status load_partition(int32_t p, uint64_t token);
  void drop_group(Group& g, protocol::ErrorCode pending_error);
  void transition(Group& g, GroupState to);
  void schedule_retention();
  std::vector<std::string> subscribed_topics(const Group& g, bool& known) const;

  CoordinatorConfig config_;
  Timers& timers_;
  GroupJournal* const journal_;
  struct Ownership {
    enum class State { none, loading, loaded } state = State::none;
    bool wanted = false;  // this broker leads the partition (a failed load is retried)
    uint64_t token = 0;   // bumped on every change: stale loads and completions are ignored
  };
  mutable std::atomic<int32_t> partitions_cache_{0};  // 0 = not fixed yet
  mutable std::mutex mu_;
  std::map<int32_t, Ownership> owned_;  // by journal partition; absent = not owned
  int64_t next_local_offset_ = 0;       // orders completions without a journal
  uint64_t next_seq_ = 0;               // group incarnations, offset writes and deletions
  std::map<std::string, Group> groups_;
  Deferred deferred_;  // callbacks to run once mu_ is released
  uint64_t next_token_ = 1;
  uint64_t member_seq_ = 0;
  bool stopped_ = false;
};

}  // namespace strata::broker::group
