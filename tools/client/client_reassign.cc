// Partition reassignment (AlterPartitionReassignments, ListPartitionReassignments) and leader
// elections (ElectLeaders), sent to the bootstrap broker: in a Strata cluster any broker writes
// them to etcd.
#include "protocol/messages/alter_partition_reassignments.h"
#include "protocol/messages/elect_leaders.h"
#include "protocol/messages/list_partition_reassignments.h"
#include "tools/client/client.h"

namespace strata::client {

Status Client::reassign_partition(const std::string& topic, int32_t partition,
                                  const std::optional<std::vector<int32_t>>& replicas) {
  auto conn = bootstrap_connection();
  if (!conn.ok()) return conn.status();
  protocol::AlterPartitionReassignmentsRequest req;
  req.timeout_ms = opts_.request_timeout_ms;
  auto& t = req.topics.emplace_back();
  t.name = topic;
  auto& p = t.partitions.emplace_back();
  p.partition_index = partition;
  p.replicas = replicas;
  auto reply = (*conn)
                   ->call<protocol::AlterPartitionReassignmentsRequest,
                          protocol::AlterPartitionReassignmentsResponse>(req);
  if (!reply.ok()) return reply.status();
  const auto& msg = reply->msg;
  if (msg.error_code != protocol::ErrorCode::none) {
    return kafka_status(msg.error_code, "reassignment", msg.error_message.value_or(""));
  }
  leaders_.erase(topic);
  for (const auto& rt : msg.responses) {
    for (const auto& rp : rt.partitions) {
      if (rp.error_code != protocol::ErrorCode::none) {
        std::string ctx("partition ");
        ctx.append(rt.name).append("-").append(std::to_string(rp.partition_index));
        return kafka_status(rp.error_code, ctx, rp.error_message.value_or(""));
      }
    }
  }
  return Status::Ok();
}

Result<std::vector<OngoingReassignment>> Client::list_reassignments() {
  auto conn = bootstrap_connection();
  if (!conn.ok()) return conn.status();
  protocol::ListPartitionReassignmentsRequest req;
  req.timeout_ms = opts_.request_timeout_ms;
  req.topics = std::nullopt;
  auto reply = (*conn)
                   ->call<protocol::ListPartitionReassignmentsRequest,
                          protocol::ListPartitionReassignmentsResponse>(req);
  if (!reply.ok()) return reply.status();
  const auto& msg = reply->msg;
  if (msg.error_code != protocol::ErrorCode::none) {
    return kafka_status(msg.error_code, "reassignments", msg.error_message.value_or(""));
  }
  std::vector<OngoingReassignment> out;
  for (const auto& t : msg.topics) {
    for (const auto& p : t.partitions) {
      out.push_back(
          {t.name, p.partition_index, p.replicas, p.adding_replicas, p.removing_replicas});
    }
  }
  return out;
}

Result<std::vector<PartitionOutcome>> Client::elect_preferred_leaders(
    const std::optional<std::map<std::string, std::vector<int32_t>>>& partitions) {
  auto conn = bootstrap_connection();
  if (!conn.ok()) return conn.status();
  protocol::ElectLeadersRequest req;
  req.election_type = 0;
  req.timeout_ms = opts_.request_timeout_ms;
  if (partitions) {
    req.topic_partitions.emplace();
    for (const auto& [topic, ps] : *partitions) {
      auto& tp = req.topic_partitions->emplace_back();
      tp.topic = topic;
      tp.partitions = ps;
    }
  } else {
    req.topic_partitions = std::nullopt;
  }
  auto reply = (*conn)->call<protocol::ElectLeadersRequest, protocol::ElectLeadersResponse>(req);
  if (!reply.ok()) return reply.status();
  const auto& msg = reply->msg;
  if (msg.error_code != protocol::ErrorCode::none) {
    return kafka_status(msg.error_code, "leader election");
  }
  std::vector<PartitionOutcome> out;
  for (const auto& t : msg.replica_election_results) {
    leaders_.erase(t.topic);
    for (const auto& p : t.partition_result) {
      PartitionOutcome o;
      o.topic = t.topic;
      o.partition = p.partition_id;
      if (p.error_code != protocol::ErrorCode::none) {
        o.error = protocol::error_name(p.error_code);
        o.message = p.error_message.value_or("");
      }
      out.push_back(std::move(o));
    }
  }
  return out;
}

}  // namespace strata::client
