// The controller's decisions, as pure functions of what etcd holds: where a new topic's replicas
// go, a new partition's first state, and the state a partition should move to when brokers come,
// go or shut down. The controller (controller.h) writes the results with compare-and-swap; the
// rules are Kafka's:
//  - a leader is chosen from the ISR (preferred = assignment order), never from outside it unless
//    unclean.leader.election.enable; with no in-sync replica alive the partition goes offline
//    (leader -1) and keeps its last ISR, so the first of those to come back leads again;
//  - a broker whose lease is gone leaves every ISR it was in (unless that would empty it), so
//    acks=all writes stop waiting for it at once instead of after replica.lag.time.max.ms;
//  - a broker shutting down cleanly gives up leadership to another in-sync replica and leaves the
//    ISRs, except where it is the only in-sync replica (then it keeps leading until it is gone);
//  - every leader change bumps leader_epoch; every change at all bumps partition_epoch.
// Any thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "broker/cluster/records.h"

namespace strata::broker::cluster {

using LiveBrokers = std::map<int32_t, BrokerRecord>;  // brokers whose lease is alive

// Replica lists for `partitions` new partitions starting at index `first_partition`, with
// `replication_factor` distinct brokers each. Brokers are interleaved across racks (as Kafka's
// rack-alternated list), so consecutive replicas of a partition sit on different racks whenever
// there are enough racks; leaders rotate over the brokers. invalid_argument when the factor
// exceeds the live broker count (Kafka: INVALID_REPLICATION_FACTOR).
Result<std::vector<std::vector<int32_t>>> assign_replicas(const LiveBrokers& brokers,
                                                          int32_t partitions,
                                                          int32_t replication_factor,
                                                          int32_t first_partition = 0);

// A new partition: led by its first live replica, with every live replica in sync (empty logs).
PartitionState initial_state(const std::vector<int32_t>& replicas, const LiveBrokers& live);

// The state `current` should move to, or nullopt when it is right as it is.
std::optional<PartitionState> reelect(const std::vector<int32_t>& replicas,
                                      const PartitionState& current, const LiveBrokers& live,
                                      bool unclean_leader_election);

// The leader's own ISR change (shrink a lagging follower, add a caught-up one): same leader and
// leader epoch, next partition epoch. nullopt when `isr` is not a valid ISR for this partition
// (empty, missing the leader, or naming a broker outside the replicas).
std::optional<PartitionState> change_isr(const std::vector<int32_t>& replicas,
                                         const PartitionState& current, std::vector<int32_t> isr);

}  // namespace strata::broker::cluster
