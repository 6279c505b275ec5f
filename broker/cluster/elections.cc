#include "broker/cluster/elections.h"

#include <algorithm>

namespace strata::broker::cluster {

namespace {

bool contains(const std::vector<int32_t>& v, int32_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

bool is_live(const LiveBrokers& live, int32_t id) { return live.count(id) > 0; }

// May lead: alive and not on its way out.
bool eligible(const LiveBrokers& live, int32_t id) {
  auto it = live.find(id);
  return it != live.end() && !it->second.shutting_down;
}

// Brokers ordered so that consecutive entries alternate racks: rack A's first, rack B's first,
// ..., rack A's second, ... (brokers without a rack form one group of their own).
std::vector<int32_t> rack_alternated(const LiveBrokers& brokers) {
  std::map<std::string, std::vector<int32_t>> by_rack;
  for (const auto& [id, b] : brokers) by_rack[b.rack].push_back(id);
  std::vector<int32_t> out;
  for (size_t round = 0; out.size() < brokers.size(); ++round) {
    for (const auto& [rack, ids] : by_rack) {
      if (round < ids.size()) out.push_back(ids[round]);
    }
  }
  return out;
}

}  // namespace

Result<std::vector<std::vector<int32_t>>> assign_replicas(const LiveBrokers& brokers,
                                                          int32_t partitions,
                                                          int32_t replication_factor,
                                                          int32_t first_partition) {
  std::map<int32_t, BrokerRecord> usable;
  for (const auto& [id, b] : brokers) {
    if (!b.shutting_down) usable.emplace(id, b);
  }
  const auto n = static_cast<int32_t>(usable.size());
  if (replication_factor <= 0 || replication_factor > n) {
    return Status(Errc::invalid_argument,
                  "Replication factor: " + std::to_string(replication_factor) +
                      " larger than available brokers: " + std::to_string(n) + ".");
  }
  const std::vector<int32_t> order = rack_alternated(usable);
  std::vector<std::vector<int32_t>> out;
  for (int32_t p = first_partition; p < first_partition + partitions; ++p) {
    std::vector<int32_t> replicas;
    for (int32_t k = 0; k < replication_factor; ++k) {
      replicas.push_back(order[static_cast<size_t>((p + k) % n)]);
    }
    out.push_back(std::move(replicas));
  }
  return out;
}

PartitionState initial_state(const std::vector<int32_t>& replicas, const LiveBrokers& live) {
  PartitionState s;
  for (int32_t r : replicas) {
    if (eligible(live, r)) s.isr.push_back(r);
  }
  s.leader = s.isr.empty() ? -1 : s.isr.front();
  if (s.isr.empty()) s.isr = replicas;  // nobody alive yet: the first to come back may lead
  return s;
}

std::optional<PartitionState> reelect(const std::vector<int32_t>& replicas,
                                      const PartitionState& current, const LiveBrokers& live,
                                      bool unclean_leader_election) {
  // In-sync replicas that stay in sync: alive and not shutting down.
  std::vector<int32_t> isr;
  for (int32_t r : current.isr) {
    if (eligible(live, r)) isr.push_back(r);
  }
  int32_t leader = -1;
  if (eligible(live, current.leader) && contains(isr, current.leader)) {
    leader = current.leader;
  } else {
    for (int32_t r : replicas) {  // preferred order
      if (contains(isr, r)) {
        leader = r;
        break;
      }
    }
  }
  if (leader == -1) {
    // No eligible in-sync replica. A live in-sync broker that is shutting down keeps (or takes)
    // the lead rather than taking the partition offline.
    for (int32_t r : current.isr) {
      if (is_live(live, r) && (r == current.leader || leader == -1)) leader = r;
    }
    if (leader != -1) {
      isr = {leader};
    } else if (unclean_leader_election) {
      for (int32_t r : replicas) {
        if (eligible(live, r)) {
          leader = r;
          isr = {r};
          break;
        }
      }
    }
    if (leader == -1) isr = current.isr;  // offline: remember who was last in sync
  }
  if (leader == current.leader && isr == current.isr) return std::nullopt;
  PartitionState next = current;
  next.isr = std::move(isr);
  if (leader != current.leader) {
    next.leader = leader;
    ++next.leader_epoch;
  }
  ++next.partition_epoch;
  return next;
}

std::optional<PartitionState> change_isr(const std::vector<int32_t>& replicas,
                                         const PartitionState& current, std::vector<int32_t> isr) {
  if (isr.empty() || !contains(isr, current.leader)) return std::nullopt;
  for (int32_t r : isr) {
    if (!contains(replicas, r)) return std::nullopt;
  }
  std::vector<int32_t> sorted = isr;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) return std::nullopt;
  if (isr == current.isr) return std::nullopt;
  PartitionState next = current;
  next.isr = std::move(isr);
  ++next.partition_epoch;
  return next;
}

}  // namespace strata::broker::cluster
