// Partition reassignment (Kafka's KIP-455) and preferred-leader election, as pure functions of a
// partition's replica list (from the topic record) and its state (the partition record):
//  - start: the replica list becomes target + (original - target), adding = target - original,
//    removing = original - target; the new replicas replicate like any follower (the leader's ISR
//    expansion lets them in once caught up). A new target while one is in progress replaces it
//    (the original set is what the replicas were before the first one); a target that only
//    reorders the replicas (or equals them) takes effect at once;
//  - complete (the controller, once every target replica is in the ISR): replicas = target, the
//    removed ones leave the ISR, and a leader being removed hands over to the first target replica
//    in the ISR that may lead (leader_epoch + 1);
//  - cancel: back to the original replicas, the added ones leave the ISR (and the lead if one had
//    it);
//  - preferred election: the first replica leads when it is alive, not shutting down and in sync.
// Writes (etcd, compare-and-swap on the topic record and the partition key together) are in
// reassign_partition / elect_preferred_leader. Any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "broker/cluster/coordination.h"
#include "broker/cluster/elections.h"
#include "broker/cluster/metadata_view.h"
#include "protocol/wire/errors.h"

namespace strata::broker::cluster {

struct PartitionAssignment {
  std::vector<int32_t> replicas;
  PartitionState state;

  bool operator==(const PartitionAssignment&) const = default;
};

// The replicas before the reassignment in progress (the list itself when there is none).
std::vector<int32_t> original_replicas(const PartitionAssignment& current);
// The replicas a reassignment in progress moves to (the list itself when there is none).
std::vector<int32_t> target_replicas(const PartitionAssignment& current);
bool reassigning(const PartitionState& s);

// invalid_argument (Kafka: INVALID_REPLICA_ASSIGNMENT) for an empty target, a duplicate, or a
// broker that is not registered (`live`).
Result<PartitionAssignment> start_reassignment(const PartitionAssignment& current,
                                               const std::vector<int32_t>& target,
                                               const LiveBrokers& live);
// not_found (Kafka: NO_REASSIGNMENT_IN_PROGRESS) when nothing is in progress; invalid_argument
// when no original replica is in sync.
Result<PartitionAssignment> cancel_reassignment(const PartitionAssignment& current,
                                                const LiveBrokers& live);
// The finished assignment once every target replica is in sync, else nullopt (also when the
// leader must move and no target replica may take over yet).
std::optional<PartitionAssignment> complete_reassignment(const PartitionAssignment& current,
                                                         const LiveBrokers& live);

enum class PreferredElection { elected, not_needed, not_available };
// The state with the first replica leading, or why not.
PreferredElection elect_preferred(const std::vector<int32_t>& replicas,
                                  const PartitionState& current, const LiveBrokers& live,
                                  PartitionState* next);

// etcd writes from any broker, with the partition's Kafka error code: none (written, or nothing
// to write: revision 0), unknown_topic_or_partition, invalid_replica_assignment,
// no_reassignment_in_progress, election_not_needed, preferred_leader_not_available,
// request_timed_out (changed meanwhile, or etcd did not answer: retry).
struct AdminOutcome {
  protocol::ErrorCode error = protocol::ErrorCode::none;
  std::string message;
  int64_t revision = 0;
};
// `target` nullopt = cancel.
AdminOutcome reassign_partition(Coordination& c, const Layout& layout, const ClusterSnapshot& view,
                                const std::string& topic, int32_t partition,
                                const std::optional<std::vector<int32_t>>& target);
AdminOutcome elect_preferred_leader(Coordination& c, const Layout& layout,
                                    const ClusterSnapshot& view, const std::string& topic,
                                    int32_t partition);
// Unclean election (KIP-460): only for a partition without a live in-sync leader, which then gets
// its first live replica alone in the ISR (what unclean.leader.election.enable would do).
// election_not_needed when it has a leader, eligible_leaders_not_available when no replica lives.
AdminOutcome elect_unclean_leader(Coordination& c, const Layout& layout,
                                  const ClusterSnapshot& view, const std::string& topic,
                                  int32_t partition);

}  // namespace strata::broker::cluster
