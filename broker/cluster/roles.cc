#include "broker/cluster/roles.h"

#include <algorithm>
#include <set>

namespace strata::broker::cluster {

Roles roles_of(const ClusterSnapshot& snapshot, int32_t self) {
  Roles out;
  for (const auto& [name, topic] : snapshot.topics) {
    for (size_t p = 0; p < topic.replicas.size(); ++p) {
      const auto& replicas = topic.replicas[p];
      if (std::find(replicas.begin(), replicas.end(), self) == replicas.end()) continue;
      const VersionedPartition* vp = snapshot.partition(name, static_cast<int32_t>(p));
      if (!vp) continue;  // being created: the topic record came first in this snapshot
      PartitionRole r;
      r.topic_id = topic.topic_id;
      r.leader = vp->state.leader;
      r.leader_epoch = vp->state.leader_epoch;
      r.partition_epoch = vp->state.partition_epoch;
      r.replicas = replicas;
      r.isr = vp->state.isr;
      r.adding = vp->state.adding_replicas;
      r.removing = vp->state.removing_replicas;
      r.kind = r.leader == self ? PartitionRole::Kind::leader
               : r.leader == -1 ? PartitionRole::Kind::offline
                                : PartitionRole::Kind::follower;
      out.emplace(TopicPartitionKey{name, static_cast<int32_t>(p)}, std::move(r));
    }
  }
  return out;
}

RoleChanges diff_roles(const Roles& before, const Roles& after, const ClusterSnapshot& snapshot) {
  RoleChanges out;
  for (const auto& [tp, role] : after) {
    auto it = before.find(tp);
    const bool same_topic = it != before.end() && it->second.topic_id == role.topic_id;
    if (same_topic && it->second == role) continue;
    const bool new_term = !same_topic || it->second.kind != role.kind ||
                          it->second.leader != role.leader ||
                          it->second.leader_epoch != role.leader_epoch;
    if (!new_term) {
      out.update.emplace_back(tp, role);
    } else if (role.kind == PartitionRole::Kind::leader) {
      out.lead.emplace_back(tp, role);
    } else {
      out.follow.emplace_back(tp, role);  // a follower of nobody (offline) waits for a leader
    }
  }
  std::set<std::string> deleted;
  for (const auto& [tp, role] : before) {
    auto it = after.find(tp);
    if (it != after.end() && it->second.topic_id == role.topic_id) continue;
    auto topic = snapshot.topics.find(tp.first);
    if (topic == snapshot.topics.end() || topic->second.topic_id != role.topic_id) {
      deleted.insert(tp.first);  // deleted (or deleted and created again under a new id)
    } else {
      out.stop.push_back(tp);
    }
  }
  out.deleted_topics.assign(deleted.begin(), deleted.end());
  return out;
}

}  // namespace strata::broker::cluster
