#include "broker/cluster/topic_admin.h"

#include <algorithm>

#include "broker/cluster/elections.h"

namespace strata::broker::cluster {

namespace {

constexpr size_t kPutsPerTxn = 100;  // below etcd's default --max-txn-ops of 128

// Writes partition states [first, first + states.size()) of `name`, each chunk guarded by
// `guard` (the topic's record as the caller last saw it).
Status put_partitions(Coordination& c, const Layout& layout, const std::string& name, int32_t first,
                      const std::vector<PartitionState>& states, const Compare& guard) {
  for (size_t from = 0; from < states.size(); from += kPutsPerTxn) {
    std::vector<TxnOp> puts;
    for (size_t i = from; i < std::min(states.size(), from + kPutsPerTxn); ++i) {
      puts.push_back(
          TxnOp::put(layout.partition(name, first + static_cast<int32_t>(i)), encode(states[i])));
    }
    auto r = c.txn({guard}, puts, {});
    if (!r.ok()) return r.status();
    if (!r->succeeded)
      return Status(Errc::already_exists, "Topic '" + name + "' changed meanwhile.");
  }
  return Status::Ok();
}

Status check_assignment(const std::vector<std::vector<int32_t>>& assignment,
                        const ClusterSnapshot& view) {
  for (const auto& replicas : assignment) {
    if (replicas.empty()) return Status(Errc::invalid_argument, "A partition has no replicas.");
    for (int32_t b : replicas) {
      if (!view.brokers.count(b)) {
        return Status(Errc::invalid_argument,
                      "Replica assignment names broker " + std::to_string(b) + ", not alive.");
      }
      if (std::count(replicas.begin(), replicas.end(), b) > 1) {
        return Status(Errc::invalid_argument, "Duplicate replica " + std::to_string(b) + ".");
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Result<TopicRecord> create_topic(Coordination& c, const Layout& layout, const ClusterSnapshot& view,
                                 const NewTopic& topic) {
  if (view.topics.count(topic.name)) {
    return Status(Errc::already_exists, "Topic '" + topic.name + "' already exists.");
  }
  TopicRecord record;
  record.name = topic.name;
  record.topic_id = topic.topic_id;
  record.configs = topic.configs;
  if (!topic.assignment.empty()) {
    STRATA_RETURN_IF_ERROR(check_assignment(topic.assignment, view));
    record.replicas = topic.assignment;
  } else {
    auto assigned = assign_replicas(view.brokers, topic.partitions, topic.replication_factor);
    if (!assigned.ok()) return assigned.status();
    record.replicas = std::move(*assigned);
  }
  std::vector<PartitionState> states;
  for (const auto& replicas : record.replicas)
    states.push_back(initial_state(replicas, view.brokers));
  const std::string key = layout.topic(topic.name);
  STRATA_RETURN_IF_ERROR(put_partitions(c, layout, topic.name, 0, states, Compare::absent(key)));
  auto r = c.txn({Compare::absent(key)}, {TxnOp::put(key, encode(record))}, {});
  if (!r.ok()) return r.status();
  if (!r->succeeded) {
    return Status(Errc::already_exists, "Topic '" + topic.name + "' already exists.");
  }
  return record;
}

Status delete_topic(Coordination& c, const Layout& layout, const ClusterSnapshot& view,
                    const std::string& name) {
  auto rev = view.topic_mod_revisions.find(name);
  if (rev == view.topic_mod_revisions.end()) {
    return Status(Errc::not_found, "Topic '" + name + "' does not exist.");
  }
  const std::string key = layout.topic(name);
  auto r = c.txn({Compare::mod_revision_is(key, rev->second)}, {TxnOp::del(key)}, {});
  if (!r.ok()) return r.status();
  if (!r->succeeded) return Status(Errc::not_found, "Topic '" + name + "' changed meanwhile.");
  const std::string parts = layout.partitions_of(name);
  auto d = c.delete_range(parts, prefix_end(parts));
  return d.ok() ? Status::Ok() : d.status();
}

Result<TopicRecord> add_partitions(Coordination& c, const Layout& layout,
                                   const ClusterSnapshot& view, const std::string& name,
                                   int32_t new_total) {
  auto t = view.topics.find(name);
  auto rev = view.topic_mod_revisions.find(name);
  if (t == view.topics.end() || rev == view.topic_mod_revisions.end()) {
    return Status(Errc::not_found, "Topic '" + name + "' does not exist.");
  }
  const auto have = static_cast<int32_t>(t->second.replicas.size());
  if (new_total <= have) {
    return Status(Errc::invalid_argument, "Topic currently has " + std::to_string(have) +
                                              " partitions, which is higher than the requested " +
                                              std::to_string(new_total) + ".");
  }
  const auto rf = static_cast<int32_t>(t->second.replicas.front().size());
  auto assigned = assign_replicas(view.brokers, new_total - have, rf, have);
  if (!assigned.ok()) return assigned.status();
  TopicRecord next = t->second;
  std::vector<PartitionState> states;
  for (auto& replicas : *assigned) {
    states.push_back(initial_state(replicas, view.brokers));
    next.replicas.push_back(std::move(replicas));
  }
  const std::string key = layout.topic(name);
  const Compare guard = Compare::mod_revision_is(key, rev->second);
  STRATA_RETURN_IF_ERROR(put_partitions(c, layout, name, have, states, guard));
  auto r = c.txn({guard}, {TxnOp::put(key, encode(next))}, {});
  if (!r.ok()) return r.status();
  if (!r->succeeded) return Status(Errc::already_exists, "Topic '" + name + "' changed meanwhile.");
  return next;
}

}  // namespace strata::broker::cluster
