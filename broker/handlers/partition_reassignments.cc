// AlterPartitionReassignments (45) and ListPartitionReassignments (46), v0 (KIP-455).
// Cluster mode: whichever broker receives the request writes etcd itself (compare-and-swap on the
// topic record and the partition key, reassignment.h), so NOT_CONTROLLER is never answered; the
// controller finishes each reassignment once its target replicas are in sync. Per partition:
// UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT (empty list, duplicates, a broker that is
// not registered), NO_REASSIGNMENT_IN_PROGRESS (cancel of
// nothing), REQUEST_TIMED_OUT (the partition changed meanwhile or etcd did not answer: retry).
// A single node is its only broker: a target of exactly [this broker] is accepted (nothing to
// move), any other INVALID_REPLICA_ASSIGNMENT, a cancel NO_REASSIGNMENT_IN_PROGRESS; nothing is
// ever listed. A new replica of a primary-key table copies the leader's state checkpoint when
// the log no longer starts at 0 (broker/cluster/checkpoint_copier.h).
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "broker/cluster/cluster_node.h"
#include "broker/handlers/handlers.h"
#include "broker/security/authorize.h"
#include "broker/services.h"
#include "broker/topics/topic_registry.h"
#include "protocol/messages/alter_partition_reassignments.h"
#include "protocol/messages/list_partition_reassignments.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

namespace {
using protocol::ErrorCode;
using Target = std::optional<std::vector<int32_t>>;

cluster::AdminOutcome single_node(RequestContext& ctx, const std::string& topic, int32_t partition,
                                  const Target& target) {
  auto t = ctx.svc.topics.find(topic);
  if (!t || partition < 0 || partition >= static_cast<int32_t>(t->partitions.size())) {
    return {ErrorCode::unknown_topic_or_partition,
            "This server does not host this topic-partition.", 0};
  }
  if (!target) {
    return {ErrorCode::no_reassignment_in_progress,
            "No reassignment is in progress for this partition.", 0};
  }
  if (*target != std::vector<int32_t>{ctx.svc.node_id}) {
    return {ErrorCode::invalid_replica_assignment,
            "A single broker (node " + std::to_string(ctx.svc.node_id) +
                ") can only hold the partition itself.",
            0};
  }
  return {};
}

}  // namespace

void alter_partition_reassignments(RequestContext& ctx, protocol::Reader& body) {
  protocol::AlterPartitionReassignmentsRequest req;
  req.decode(body, ctx.version);
  protocol::AlterPartitionReassignmentsResponse resp;
  if (!authorize_cluster(ctx, AclOperation::alter)) {
    resp.error_code = ErrorCode::cluster_authorization_failed;
    resp.error_message = "Cluster authorization failed.";
    ctx.respond(resp);
    return;
  }
  for (const auto& t : req.topics) {
    auto& topic_out = resp.responses.emplace_back();
    topic_out.name = t.name;
    for (const auto& p : t.partitions) {
      auto& out = topic_out.partitions.emplace_back();
      out.partition_index = p.partition_index;
      cluster::AdminOutcome r;
      if (!ctx.svc.cluster) {
        r = single_node(ctx, t.name, p.partition_index, p.replicas);
      } else {
        r = ctx.svc.cluster->reassign(t.name, p.partition_index, p.replicas);
      }
      out.error_code = r.error;
      if (r.error != ErrorCode::none) {
        out.error_message = r.message;
      } else if (ctx.svc.cluster) {
        spdlog::info("reassignment of {}-{}: {}", t.name, p.partition_index,
                     p.replicas ? fmt::format("to [{}]", fmt::join(*p.replicas, ","))
                                : std::string("cancelled"));
      }
    }
  }
  ctx.respond(resp);
}

void list_partition_reassignments(RequestContext& ctx, protocol::Reader& body) {
  protocol::ListPartitionReassignmentsRequest req;
  req.decode(body, ctx.version);
  protocol::ListPartitionReassignmentsResponse resp;
  if (!authorize_cluster(ctx, AclOperation::describe)) {
    resp.error_code = ErrorCode::cluster_authorization_failed;
    resp.error_message = "Cluster authorization failed.";
    ctx.respond(resp);
    return;
  }
  if (!ctx.svc.cluster) {
    ctx.respond(resp);
    return;
  }
  auto s = ctx.svc.cluster->snapshot();
  auto list = [&](const std::string& name, const cluster::TopicRecord& topic,
                  const std::vector<int32_t>* only) {
    protocol::ListPartitionReassignmentsResponse::OngoingTopicReassignment out;
    out.name = name;
    for (size_t p = 0; p < topic.replicas.size(); ++p) {
      const auto index = static_cast<int32_t>(p);
      if (only && std::find(only->begin(), only->end(), index) == only->end()) continue;
      const auto* vp = s->partition(name, index);
      if (!vp || !cluster::reassigning(vp->state)) continue;
      auto& o = out.partitions.emplace_back();
      o.partition_index = index;
      o.replicas = topic.replicas[p];
      o.adding_replicas = vp->state.adding_replicas;
      o.removing_replicas = vp->state.removing_replicas;
    }
    if (!out.partitions.empty()) resp.topics.push_back(std::move(out));
  };
  if (!req.topics) {
    for (const auto& [name, topic] : s->topics) list(name, topic, nullptr);
  } else {
    for (const auto& t : *req.topics) {
      auto topic = s->topics.find(t.name);
      if (topic != s->topics.end()) list(t.name, topic->second, &t.partition_indexes);
    }
  }
  ctx.respond(resp);
}

}  // namespace strata::broker::handlers
