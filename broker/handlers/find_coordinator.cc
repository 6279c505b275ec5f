// FindCoordinator (10): a group's coordinator is this broker on a single node, the leader of the
// group's __consumer_offsets partition on a cluster. A transactional id's coordinator is this
// broker on a single node (broker/txn/txn_coordinator.h); a broker of a cluster has none yet and
// answers COORDINATOR_NOT_AVAILABLE, as Kafka does while a coordinator cannot be found (clients
// retry until their timeout). Kafka's ACLs: DESCRIBE on the group or on the transactional id.
// Other key types get UNSUPPORTED_VERSION.
#include "protocol/messages/find_coordinator.h"

#include "broker/cluster/cluster_node.h"
#include "broker/group/group_coordinator.h"
#include "broker/group/log_group_journal.h"
#include "broker/handlers/handlers.h"
#include "broker/security/authorize.h"
#include "broker/services.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

namespace {
using protocol::ErrorCode;
constexpr int8_t kGroupKey = 0;
constexpr int8_t kTransactionKey = 1;
// The coordinator of one group: this broker on a single node; in cluster mode the leader of the
// group's __consumer_offsets partition, or COORDINATOR_NOT_AVAILABLE while it has none. The topic
// is created on first use, as Kafka does: the first answers are COORDINATOR_NOT_AVAILABLE while
// the creation runs off the I/O thread (Kafka answers so while it is being created).
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

Coordinator group_coordinator(RequestContext& ctx, const std::string& group) {
  if (!ctx.svc.cluster) return self_coordinator(ctx);
  Coordinator c;
  c.error = protocol::ErrorCode::coordinator_not_available;
  if (ctx.svc.offsets_topic && ctx.svc.offsets_topic->request_cluster_topic() != ErrorCode::none) {
    return c;
  }
  auto s = ctx.svc.cluster->snapshot();
  const auto* part = s->partition(group::kOffsetsTopic, ctx.svc.groups.partition_for(group));
  if (!part || part->state.leader < 0) return c;
  auto b = s->brokers.find(part->state.leader);
  if (b == s->brokers.end()) return c;
  c.error = protocol::ErrorCode::none;
  c.node_id = b->second.id;
  std::tie(c.host, c.port) = cluster::endpoint_for(b->second, ctx.responder.session().listener);
  return c;
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
    } else if (group || (txn && !ctx.svc.cluster)) {
      Coordinator c = group ? group_coordinator(ctx, key) : self_coordinator(ctx);
      out.error_code = c.error;
      out.node_id = c.node_id;
      out.host = c.host;
      out.port = c.port;
    } else if (txn) {
      out.error_code = ErrorCode::coordinator_not_available;
      out.error_message = "transactions are served by single-node brokers only";
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
