// FindCoordinator (10): a group's (transactional id's) coordinator is this broker on a single
// node, the leader of its __consumer_offsets (__transaction_state) partition on a cluster, or
// COORDINATOR_NOT_AVAILABLE while that partition has no leader — as Kafka does while a coordinator
// cannot be found (clients retry until their timeout). Kafka's ACLs: DESCRIBE on the group or on
// the transactional id. Other key types get UNSUPPORTED_VERSION.
#include "protocol/messages/find_coordinator.h"

#include "broker/cluster/cluster_node.h"
#include "broker/group/group_coordinator.h"
#include "broker/group/log_group_journal.h"
#include "broker/handlers/handlers.h"
#include "broker/security/authorize.h"
#include "broker/services.h"
#include "broker/txn/txn_coordinator.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

namespace {
using protocol::ErrorCode;
constexpr int8_t kGroupKey = 0;
constexpr int8_t kTransactionKey = 1;
// The coordinator of one group or transactional id: this broker on a single node; in cluster mode
// the leader of its internal topic's partition, or COORDINATOR_NOT_AVAILABLE while it has none.
// The topic is created on first use, as Kafka does: the first answers are COORDINATOR_NOT_AVAILABLE
// while the creation runs off the I/O thread (Kafka answers so while it is being created).
struct Coordinator {
  protocol::ErrorCode error = protocol::ErrorCode::none;
  int32_t node_id = -1;
  std::string host;
  int32_t port = -1;
};

Coordinator self_coordinator(RequestContext& ctx) {
  Coordinator c;
  c.node_id = ctx.svc.node_id;
  const Listener& self = ctx.svc.advertised_for(ctx.responder.session().listener);
  c.host = self.host;
  c.port = self.port;
  return c;
}

// A cluster's coordinator of `key`: the leader of its partition of the coordinator's internal
// topic (`journal`, created on first use), as Kafka's.
Coordinator cluster_coordinator(RequestContext& ctx, group::LogGroupJournal* journal,
                                const std::string& topic, int32_t partition) {
  Coordinator c;
  c.error = protocol::ErrorCode::coordinator_not_available;
  if (!journal || journal->request_cluster_topic() != ErrorCode::none) return c;
  auto s = ctx.svc.cluster->snapshot();
  const auto* part = s->partition(topic, partition);
  if (!part || part->state.leader < 0) return c;
  auto b = s->brokers.find(part->state.leader);
  if (b == s->brokers.end()) return c;
  c.error = protocol::ErrorCode::none;
  c.node_id = b->second.id;
  std::tie(c.host, c.port) = cluster::endpoint_for(b->second, ctx.responder.session().listener);
  return c;
}

Coordinator group_coordinator(RequestContext& ctx, const std::string& group) {
  if (!ctx.svc.cluster) return self_coordinator(ctx);
  return cluster_coordinator(ctx, ctx.svc.offsets_topic, group::kOffsetsTopic,
                             ctx.svc.groups.partition_for(group));
}

Coordinator txn_coordinator(RequestContext& ctx, const std::string& txn_id) {
  if (!ctx.svc.cluster) return self_coordinator(ctx);
  if (!ctx.svc.txns) return Coordinator{};
  return cluster_coordinator(ctx, ctx.svc.txn_state_topic, kTransactionStateTopic,
                             ctx.svc.txns->partition_for(txn_id));
}

}  // namespace

void find_coordinator(RequestContext& ctx, protocol::Reader& body) {
  protocol::FindCoordinatorRequest req;
  req.decode(body, ctx.version);
  protocol::FindCoordinatorResponse resp;
  const bool group = req.key_type == kGroupKey;
  const bool txn = req.key_type == kTransactionKey;
  auto answer = [&](const std::string& key, auto& out) {
    out.node_id = -1;
    out.port = -1;
    if (group && !authorize_group(ctx, AclOperation::describe, key)) {
      out.error_code = ErrorCode::group_authorization_failed;
    } else if (txn &&
               !authorize(ctx, AclOperation::describe, ResourceType::transactional_id, key)) {
      out.error_code = ErrorCode::transactional_id_authorization_failed;
    } else if (group || txn) {
      Coordinator c = group ? group_coordinator(ctx, key) : txn_coordinator(ctx, key);
      out.error_code = c.error;
      out.node_id = c.node_id;
      out.host = c.host;
      out.port = c.port;
    } else {
      out.error_code = ErrorCode::unsupported_version;
    }
  };
  if (ctx.version < 4) {
    answer(req.key, resp);
  } else {
    for (const auto& key : req.coordinator_keys) {
      auto& c = resp.coordinators.emplace_back();
      c.key = key;
      answer(key, c);
    }
  }
  ctx.respond(resp);
}

}  // namespace strata::broker::handlers
