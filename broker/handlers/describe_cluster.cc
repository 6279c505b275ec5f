// DescribeCluster (60), v0-1: this broker (advertised address), the cluster id from
// meta.properties and the controller (this broker: one node). endpoint_type 2 (controllers) →
// UNSUPPORTED_ENDPOINT_TYPE, as a broker does. With include_cluster_authorized_operations the
// cluster operations are all allowed (no authorizer yet).
#include "protocol/messages/describe_cluster.h"

#include "broker/cluster/cluster_node.h"
#include "broker/handlers/handlers.h"
#include "broker/services.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

void describe_cluster(RequestContext& ctx, protocol::Reader& body) {
  using protocol::ErrorCode;
  constexpr int8_t kBrokers = 1;
  protocol::DescribeClusterRequest req;
  req.decode(body, ctx.version);
  protocol::DescribeClusterResponse resp;
  resp.endpoint_type = req.endpoint_type;
  if (ctx.version >= 1 && req.endpoint_type != kBrokers) {
    resp.error_code = ErrorCode::unsupported_endpoint_type;
    resp.error_message = "Unsupported endpoint type " + std::to_string(req.endpoint_type);
    ctx.respond(resp);
    return;
  }
  if (ctx.svc.cluster) {  // cluster mode: every live broker, from the view
    auto s = ctx.svc.cluster->snapshot();
    resp.cluster_id = ctx.svc.cluster->cluster_id();
    resp.controller_id = s->controller ? s->controller->id : -1;
    for (const auto& [id, rec] : s->brokers) {
      auto& b = resp.brokers.emplace_back();
      b.broker_id = id;
      std::tie(b.host, b.port) = cluster::endpoint_for(rec, ctx.responder.session().listener);
      b.rack = rec.rack.empty() ? std::nullopt : std::optional<std::string>(rec.rack);
    }
  } else {
    resp.cluster_id = ctx.svc.cluster_id;
    resp.controller_id = ctx.svc.node_id;
    auto& b = resp.brokers.emplace_back();
    b.broker_id = ctx.svc.node_id;
    const Listener& self = ctx.svc.advertised_for(ctx.responder.session().listener);
    b.host = self.host;
    b.port = self.port;
    b.rack = std::nullopt;
  }
  if (req.include_cluster_authorized_operations) {
    // AclOperation bits a cluster supports: CREATE 5, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9,
    // DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12.
    int32_t ops = 0;
    for (int op : {5, 7, 8, 9, 10, 11, 12}) ops |= 1 << op;
    resp.cluster_authorized_operations = ops;
  }
  ctx.respond(resp);
}

}  // namespace strata::broker::handlers
