// Partition health of a cluster for `strata cluster describe`: counts of under-replicated and
// offline partitions over a Metadata answer, and the text / JSON renderings of the whole report.
// Kept apart from the command so the computation and the formatting are testable without a
// broker. Pure functions over value types; any thread.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "tools/cli/cli_common.h"
#include "tools/client/client_types.h"

namespace strata::cli {

// One partition that is under-replicated and/or offline.
struct UnhealthyPartition {
  std::string topic;
  client::PartitionInfo info;
  bool under_replicated = false;  // ISR smaller than the replica list
  bool offline = false;           // no leader (-1)
};

struct TopicError {
  std::string topic;
  std::string error;  // Kafka error name
};

struct ClusterHealth {
  int64_t topics = 0;
  int64_t partitions = 0;
  // Counted independently, as Kafka's tools do: an offline partition whose ISR is also short
  // counts in both.
  int64_t under_replicated = 0;
  int64_t offline = 0;
  std::vector<UnhealthyPartition> unhealthy;  // by topic, then partition
  std::vector<TopicError> topic_errors;       // topics Metadata answered with an error
};

// Health of every partition of every topic in `md` (internal topics included).
ClusterHealth compute_health(const client::ClusterMetadata& md);

// "host:port", with IPv6 hosts in brackets.
std::string broker_address(const client::BrokerInfo& b);

// The report: cluster id, controller, brokers (from `cluster`, i.e. DescribeCluster), the health
// summary and, when `show_partitions` or any partition is unhealthy, the table of unhealthy
// partitions.
void print_cluster_text(std::ostream& os, const client::ClusterMetadata& cluster,
                        const ClusterHealth& h, bool show_partitions);
json cluster_json(const client::ClusterMetadata& cluster, const ClusterHealth& h);

}  // namespace strata::cli
