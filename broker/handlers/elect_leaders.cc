// ElectLeaders (43), v0-2. Preferred (type 0, the only one before v1): the first replica of each
// partition leads if it is alive and in the ISR — written by compare-and-swap from whichever
// broker received the request (leader_epoch + 1), so NOT_CONTROLLER is never answered; otherwise
// ELECTION_NOT_NEEDED (it leads already) or PREFERRED_LEADER_NOT_AVAILABLE. Unclean (type 1):
// only a partition without a live leader, which gets its first live replica
// (ELECTION_NOT_NEEDED, ELIGIBLE_LEADERS_NOT_AVAILABLE). Unknown partitions get
// UNKNOWN_TOPIC_OR_PARTITION; another type INVALID_REQUEST (top level, v1+). A null topic list
// means every partition, and then partitions that needed no election are left out of the answer
// (as Kafka's controller does). A single node leads everything it has: ELECTION_NOT_NEEDED.
#include "protocol/messages/elect_leaders.h"

#include <spdlog/spdlog.h>

#include "broker/cluster/cluster_node.h"
#include "broker/handlers/handlers.h"
#include "broker/security/authorize.h"
#include "broker/services.h"
#include "broker/topics/topic_registry.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

namespace {
using protocol::ErrorCode;
using Response = protocol::ElectLeadersResponse;

cluster::AdminOutcome elect_one(RequestContext& ctx, const std::string& topic, int32_t partition,
                                bool unclean) {
  if (ctx.svc.cluster) return ctx.svc.cluster->elect_leader(topic, partition, unclean);
  auto t = ctx.svc.topics.find(topic);
  if (!t || partition < 0 || partition >= static_cast<int32_t>(t->partitions.size())) {
    return {ErrorCode::unknown_topic_or_partition,
            "This server does not host this topic-partition.", 0};
  }
  return {ErrorCode::election_not_needed, "Leader election not needed for topic partition.", 0};
}

// Every partition there is: (topic, partition count).
std::vector<std::pair<std::string, int32_t>> every_partition(RequestContext& ctx) {
  std::vector<std::pair<std::string, int32_t>> out;
  if (ctx.svc.cluster) {
    auto s = ctx.svc.cluster->snapshot();
    for (const auto& [name, t] : s->topics) {
      out.emplace_back(name, static_cast<int32_t>(t.replicas.size()));
    }
  } else {
    for (const auto& t : ctx.svc.topics.list()) {
      out.emplace_back(t->name, static_cast<int32_t>(t->partitions.size()));
    }
  }
  return out;
}

}  // namespace

void elect_leaders(RequestContext& ctx, protocol::Reader& body) {
  protocol::ElectLeadersRequest req;
  req.decode(body, ctx.version);
  Response resp;
  if (req.election_type != 0 && req.election_type != 1) {
    resp.error_code = ErrorCode::invalid_request;
    ctx.respond(resp);
    return;
  }
  if (!authorize_cluster(ctx, AclOperation::alter)) {  // Kafka: every partition and the top
    resp.error_code = ErrorCode::cluster_authorization_failed;
    for (const auto& t : req.topic_partitions
                             ? *req.topic_partitions
                             : std::vector<protocol::ElectLeadersRequest::TopicPartitions>{}) {
      auto& out = resp.replica_election_results.emplace_back();
      out.topic = t.topic;
      for (int32_t p : t.partitions) {
        auto& pr = out.partition_result.emplace_back();
        pr.partition_id = p;
        pr.error_code = ErrorCode::cluster_authorization_failed;
      }
    }
    ctx.respond(resp);
    return;
  }
  const bool unclean = req.election_type == 1;
  auto record = [&](Response::ReplicaElectionResult& out, int32_t p, bool skip_not_needed) {
    cluster::AdminOutcome r = elect_one(ctx, out.topic, p, unclean);
    if (skip_not_needed && r.error == ErrorCode::election_not_needed) return;
    auto& pr = out.partition_result.emplace_back();
    pr.partition_id = p;
    pr.error_code = r.error;
    if (r.error != ErrorCode::none) {
      pr.error_message = r.message;
    } else {
      spdlog::info("{} leader election for {}-{}", unclean ? "unclean" : "preferred", out.topic, p);
    }
  };
  if (!req.topic_partitions) {
    for (const auto& [name, count] : every_partition(ctx)) {
      Response::ReplicaElectionResult out;
      out.topic = name;
      for (int32_t p = 0; p < count; ++p) record(out, p, true);
      if (!out.partition_result.empty()) resp.replica_election_results.push_back(std::move(out));
    }
  } else {
    for (const auto& t : *req.topic_partitions) {
      auto& out = resp.replica_election_results.emplace_back();
      out.topic = t.topic;
      for (int32_t p : t.partitions) record(out, p, false);
    }
  }
  ctx.respond(resp);
}

}  // namespace strata::broker::handlers
