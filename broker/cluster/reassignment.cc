#include "broker/cluster/reassignment.h"

#include <algorithm>

namespace strata::broker::cluster {

namespace {

bool contains(const std::vector<int32_t>& v, int32_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

std::vector<int32_t> minus(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  std::vector<int32_t> out;
  for (int32_t x : a) {
    if (!contains(b, x)) out.push_back(x);
  }
  return out;
}

bool eligible(const LiveBrokers& live, int32_t id) {
  auto it = live.find(id);
  return it != live.end() && !it->second.shutting_down;
}

// Keeps `next.state` consistent with `next.replicas`: replicas no longer listed leave the ISR,
// and a leader no longer listed hands over to the first listed in-sync replica that may lead
// (one merely alive when none may). False when no listed replica would be left in sync.
bool settle(PartitionAssignment& next, const LiveBrokers& live) {
  PartitionState& s = next.state;
  std::vector<int32_t> isr;
  for (int32_t r : s.isr) {
    if (contains(next.replicas, r)) isr.push_back(r);
  }
  if (isr.empty()) return false;
  s.isr = std::move(isr);
  if (contains(next.replicas, s.leader)) return true;
  int32_t leader = -1;
  for (int32_t r : next.replicas) {
    if (contains(s.isr, r) && eligible(live, r)) {
      leader = r;
      break;
    }
  }
  for (int32_t r : next.replicas) {
    if (leader == -1 && contains(s.isr, r) && live.count(r)) leader = r;
  }
  s.leader = leader;
  ++s.leader_epoch;
  return true;
}

// Bumps the partition epoch when anything changed.
PartitionAssignment finish(const PartitionAssignment& current, PartitionAssignment next) {
  if (next.state != current.state) ++next.state.partition_epoch;
  return next;
}

}  // namespace

bool reassigning(const PartitionState& s) {
  return !s.adding_replicas.empty() || !s.removing_replicas.empty();
}

std::vector<int32_t> original_replicas(const PartitionAssignment& current) {
  return minus(current.replicas, current.state.adding_replicas);
}

std::vector<int32_t> target_replicas(const PartitionAssignment& current) {
  return minus(current.replicas, current.state.removing_replicas);
}

Result<PartitionAssignment> start_reassignment(const PartitionAssignment& current,
                                               const std::vector<int32_t>& target,
                                               const LiveBrokers& live) {
  if (target.empty()) {
    return Status(Errc::invalid_argument, "The replica list of a reassignment is empty.");
  }
  for (size_t i = 0; i < target.size(); ++i) {
    if (std::count(target.begin(), target.end(), target[i]) > 1) {
      return Status(Errc::invalid_argument,
                    "Duplicate replica " + std::to_string(target[i]) + " in the reassignment.");
    }
    if (!live.count(target[i])) {
      return Status(Errc::invalid_argument,
                    "Unknown broker id " + std::to_string(target[i]) + " in the reassignment.");
    }
  }
  const std::vector<int32_t> original = original_replicas(current);
  PartitionAssignment next = current;
  next.state.adding_replicas = minus(target, original);
  next.state.removing_replicas = minus(original, target);
  next.replicas = target;
  for (int32_t r : next.state.removing_replicas) next.replicas.push_back(r);
  // A previous target's new replicas that this one drops stop replicating at once.
  if (!settle(next, live)) {
    return Status(Errc::invalid_argument,
                  "The reassignment would leave no in-sync replica; cancel it instead.");
  }
  return finish(current, std::move(next));
}

Result<PartitionAssignment> cancel_reassignment(const PartitionAssignment& current,
                                                const LiveBrokers& live) {
  if (!reassigning(current.state)) {
    return Status(Errc::not_found, "No reassignment is in progress for this partition.");
  }
  PartitionAssignment next = current;
  next.replicas = original_replicas(current);
  next.state.adding_replicas.clear();
  next.state.removing_replicas.clear();
  if (!settle(next, live)) {
    return Status(Errc::invalid_argument,
                  "No original replica is in sync: the reassignment cannot be cancelled now.");
  }
  return finish(current, std::move(next));
}

std::optional<PartitionAssignment> complete_reassignment(const PartitionAssignment& current,
                                                         const LiveBrokers& live) {
  if (!reassigning(current.state)) return std::nullopt;
  PartitionAssignment next = current;
  next.replicas = target_replicas(current);
  for (int32_t r : next.replicas) {
    if (!contains(current.state.isr, r)) return std::nullopt;  // still catching up
  }
  next.state.adding_replicas.clear();
  next.state.removing_replicas.clear();
  if (!settle(next, live) || !eligible(live, next.state.leader)) return std::nullopt;
  return finish(current, std::move(next));
}

PreferredElection elect_preferred(const std::vector<int32_t>& replicas,
                                  const PartitionState& current, const LiveBrokers& live,
                                  PartitionState* next) {
  if (replicas.empty()) return PreferredElection::not_available;
  const int32_t preferred = replicas.front();
  if (current.leader == preferred) return PreferredElection::not_needed;
  if (!eligible(live, preferred) || !contains(current.isr, preferred)) {
    return PreferredElection::not_available;
  }
  *next = current;
  next->leader = preferred;
  ++next->leader_epoch;
  ++next->partition_epoch;
  return PreferredElection::elected;
}

namespace {

using protocol::ErrorCode;

struct Located {
  const TopicRecord* topic = nullptr;
  int64_t topic_revision = 0;
  const VersionedPartition* partition = nullptr;
};

std::optional<Located> locate(const ClusterSnapshot& view, const std::string& topic,
                              int32_t partition) {
  auto t = view.topics.find(topic);
  auto rev = view.topic_mod_revisions.find(topic);
  if (t == view.topics.end() || rev == view.topic_mod_revisions.end() || partition < 0 ||
      partition >= static_cast<int32_t>(t->second.replicas.size())) {
    return std::nullopt;
  }
  const VersionedPartition* vp = view.partition(topic, partition);
  if (!vp) return std::nullopt;
  return Located{&t->second, rev->second, vp};
}

AdminOutcome fail(ErrorCode e, std::string message) { return {e, std::move(message), 0}; }

AdminOutcome unknown() {
  return fail(ErrorCode::unknown_topic_or_partition,
              "This server does not host this topic-partition.");
}

AdminOutcome written(const Result<TxnResult>& r) {
  if (!r.ok()) return fail(ErrorCode::request_timed_out, r.status().message());
  if (!r->succeeded) return fail(ErrorCode::request_timed_out, "The partition changed; retry.");
  return {ErrorCode::none, "", r->revision};
}

}  // namespace

AdminOutcome reassign_partition(Coordination& c, const Layout& layout, const ClusterSnapshot& view,
                                const std::string& topic, int32_t partition,
                                const std::optional<std::vector<int32_t>>& target) {
  auto where = locate(view, topic, partition);
  if (!where) return unknown();
  const auto p = static_cast<size_t>(partition);
  const PartitionAssignment current{where->topic->replicas[p], where->partition->state};
  auto next = target ? start_reassignment(current, *target, view.brokers)
                     : cancel_reassignment(current, view.brokers);
  if (!next.ok()) {
    return fail(next.status().code() == Errc::not_found ? ErrorCode::no_reassignment_in_progress
                                                        : ErrorCode::invalid_replica_assignment,
                next.status().message());
  }
  if (*next == current) return {};
  const std::string topic_key = layout.topic(topic);
  const std::string partition_key = layout.partition(topic, partition);
  std::vector<Compare> compares = {
      Compare::mod_revision_is(topic_key, where->topic_revision),
      Compare::mod_revision_is(partition_key, where->partition->mod_revision)};
  std::vector<TxnOp> puts = {TxnOp::put(partition_key, encode(next->state))};
  if (next->replicas != current.replicas) {
    TopicRecord record = *where->topic;
    record.replicas[p] = next->replicas;
    puts.push_back(TxnOp::put(topic_key, encode(record)));
  }
  return written(c.txn(compares, puts, {}));
}

AdminOutcome elect_preferred_leader(Coordination& c, const Layout& layout,
                                    const ClusterSnapshot& view, const std::string& topic,
                                    int32_t partition) {
  auto where = locate(view, topic, partition);
  if (!where) return unknown();
  PartitionState next;
  switch (elect_preferred(where->topic->replicas[static_cast<size_t>(partition)],
                          where->partition->state, view.brokers, &next)) {
    case PreferredElection::not_needed:
      return fail(ErrorCode::election_not_needed,
                  "Leader election not needed for topic partition.");
    case PreferredElection::not_available:
      return fail(ErrorCode::preferred_leader_not_available,
                  "The preferred leader is not alive or not in the ISR.");
    case PreferredElection::elected:
      break;
  }
  const std::string key = layout.partition(topic, partition);
  return written(c.txn({Compare::mod_revision_is(key, where->partition->mod_revision)},
                       {TxnOp::put(key, encode(next))}, {}));
}

AdminOutcome elect_unclean_leader(Coordination& c, const Layout& layout,
                                  const ClusterSnapshot& view, const std::string& topic,
                                  int32_t partition) {
  auto where = locate(view, topic, partition);
  if (!where) return unknown();
  const PartitionState& current = where->partition->state;
  if (current.leader != -1 && eligible(view.brokers, current.leader)) {
    return fail(ErrorCode::election_not_needed, "The partition has a live leader.");
  }
  auto next =
      reelect(where->topic->replicas[static_cast<size_t>(partition)], current, view.brokers, true);
  if (!next || next->leader == -1) {
    return fail(ErrorCode::eligible_leaders_not_available, "No replica of the partition is alive.");
  }
  const std::string key = layout.partition(topic, partition);
  return written(c.txn({Compare::mod_revision_is(key, where->partition->mod_revision)},
                       {TxnOp::put(key, encode(*next))}, {}));
}

}  // namespace strata::broker::cluster
