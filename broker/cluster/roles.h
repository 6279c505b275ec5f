// What this broker should be doing for each partition, read off a cluster snapshot, and what
// changed since the last one: the partition roles a replica manager applies (become leader with
// an epoch and an ISR, follow a given leader, stop replicating, delete a deleted topic's data).
// Pure functions; any thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "broker/cluster/metadata_view.h"

namespace strata::broker::cluster {

using TopicPartitionKey = std::pair<std::string, int32_t>;

struct PartitionRole {
  enum class Kind { leader, follower, offline };  // offline: no leader alive
  Kind kind = Kind::offline;
  std::string topic_id;
  int32_t leader = -1;
  int32_t leader_epoch = 0;
  int32_t partition_epoch = 0;
  std::vector<int32_t> replicas;
  std::vector<int32_t> isr;
  // A reassignment in progress: replicas being added (catching up, throttled) and removed.
  std::vector<int32_t> adding = {};
  std::vector<int32_t> removing = {};

  bool operator==(const PartitionRole&) const = default;
};

using Roles = std::map<TopicPartitionKey, PartitionRole>;

// The partitions `self` is a replica of, with its role in each.
Roles roles_of(const ClusterSnapshot& snapshot, int32_t self);

struct RoleChanges {
  std::vector<std::pair<TopicPartitionKey, PartitionRole>> lead;    // newly leader, or new epoch
  std::vector<std::pair<TopicPartitionKey, PartitionRole>> follow;  // new leader or epoch to follow
  std::vector<std::pair<TopicPartitionKey, PartitionRole>> update;  // same role, ISR/epoch change
  std::vector<TopicPartitionKey> stop;      // no longer a replica (reassigned away)
  std::vector<std::string> deleted_topics;  // had replicas here, topic gone: delete the logs
};

// From `before` to `after` (both from roles_of; `snapshot` is the one `after` came from, and tells
// a deleted topic from a partition reassigned away). Apply deleted_topics first: a topic deleted
// and created again under the same name shows up both there and in lead/follow.
RoleChanges diff_roles(const Roles& before, const Roles& after, const ClusterSnapshot& snapshot);

}  // namespace strata::broker::cluster
