// In-memory state of one classic consumer group: members, generation, selected protocol, the
// state machine (Empty, PreparingRebalance, CompletingRebalance, Stable, Dead) and committed
// offsets. Plain data plus small helpers; owned by GroupCoordinator and only touched under its
// lock.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "protocol/wire/errors.h"

namespace strata::broker::group {

enum class GroupState { empty, preparing_rebalance, completing_rebalance, stable, dead };

// Kafka's spelling ("Empty", "PreparingRebalance", ...), used by DescribeGroups and ListGroups.
const char* state_name(GroupState s);

using Bytes = std::vector<uint8_t>;

struct JoinMember {
  std::string member_id;
  std::optional<std::string> instance_id;
  Bytes metadata;
};

struct JoinResult {
  protocol::ErrorCode error = protocol::ErrorCode::none;
  int32_t generation = -1;
  std::optional<std::string> protocol_type;
  std::optional<std::string> protocol_name;
  std::string leader;
  std::string member_id;
  bool skip_assignment = false;
  std::vector<JoinMember> members;  // only for the leader
};

struct SyncResult {
  protocol::ErrorCode error = protocol::ErrorCode::none;
  std::optional<std::string> protocol_type;
  std::optional<std::string> protocol_name;
  Bytes assignment;
};

using JoinCallback = std::function<void(JoinResult)>;
using SyncCallback = std::function<void(SyncResult)>;

struct Member {
  std::string member_id;
  std::optional<std::string> instance_id;
  std::string client_id;
  std::string client_host;
  int32_t session_timeout_ms = 0;
  int32_t rebalance_timeout_ms = 0;
  std::string protocol_type;
  std::vector<std::pair<std::string, Bytes>> protocols;  // in the member's preference order
  Bytes assignment;
  JoinCallback awaiting_join;
  SyncCallback awaiting_sync;
  bool is_new = false;
  uint64_t session_timer = 0;  // Timers id
  uint64_t session_token = 0;  // matches the armed timer's callback

  const Bytes* metadata_for(const std::string& protocol) const;
};

struct OffsetEntry {
  int64_t offset = -1;
  int32_t leader_epoch = -1;
  std::string metadata;
  int64_t commit_ms = 0;    // wall clock
  int64_t expire_ms = -1;   // explicit expiry (OffsetCommit v2-4 retention), -1 = broker default
  int64_t log_offset = -1;  // of its journal record (in memory only): the newest record wins
};

struct Group {
  std::string id;
  GroupState state = GroupState::empty;
  int32_t generation = 0;
  std::optional<std::string> protocol_type;
  std::optional<std::string> protocol_name;
  std::optional<std::string> leader;
  std::map<std::string, Member> members;
  std::map<std::string, std::string> static_members;  // instance id -> member id
  std::map<std::string, uint64_t> pending_members;    // MEMBER_ID_REQUIRED handshake -> token
  std::map<std::pair<std::string, int32_t>, OffsetEntry> offsets;
  // Offset writes handed to the journal and not answered yet: how many per key, and per key the
  // sequence of the last deletion since (a write queued before a deletion never lands in memory;
  // the deletion's tombstones follow it in the log). `incarnation` tells a group deleted and
  // created again from the one a write was queued for.
  uint64_t incarnation = 0;
  std::map<std::pair<std::string, int32_t>, int> pending_offsets;
  std::map<std::pair<std::string, int32_t>, uint64_t> deleted_at;
  int64_t empty_since_ms = 0;  // wall clock when the group last became Empty
  // The pending join completion (rebalance or initial delay) timer.
  uint64_t join_timer = 0;
  uint64_t join_token = 0;
  bool initial_delay = false;  // the join timer is the initial-rebalance delay
  bool new_member_added = false;
  int64_t initial_delay_remaining_ms = 0;
  int64_t join_deadline_ms = 0;  // monotonic: hard end of an initial delay (rebalance timeout)

  bool has(const std::string& member_id) const { return members.count(member_id) > 0; }
  bool is_leader(const std::string& member_id) const { return leader && *leader == member_id; }
  // A static member joining with `instance_id` but a different member id is fenced.
  bool static_fenced(const std::optional<std::string>& instance_id,
                     const std::string& member_id) const;
  bool all_joined() const;
  int32_t max_rebalance_timeout() const;
  // Protocols every member supports, for a joining member's compatibility check.
  bool supports(const std::string& protocol_type,
                const std::vector<std::pair<std::string, Bytes>>& protocols) const;
  // The protocol chosen by member votes among those all members support.
  std::string select_protocol() const;
};

}  // namespace strata::broker::group
