// JoinGroup (11) v0-9: hands the join to the group coordinator and answers when the rebalance
// completes (asynchronously; the connection keeps response order).
#include "protocol/messages/join_group.h"

#include "broker/group/group_coordinator.h"
#include "broker/group/handler_util.h"
#include "broker/handlers/handlers.h"
#include "broker/security/authorize.h"
#include "broker/services.h"

namespace strata::broker::handlers {

void join_group(RequestContext& ctx, protocol::Reader& body) {
  protocol::JoinGroupRequest req;
  req.decode(body, ctx.version);
  if (!authorize_group(ctx, AclOperation::read, req.group_id)) {
    protocol::JoinGroupResponse resp;
    resp.error_code = protocol::ErrorCode::group_authorization_failed;
    resp.generation_id = -1;
    if (ctx.version < 7) resp.protocol_name = "";
    ctx.respond(resp);
    return;
  }
  group::JoinParams p;
  p.group_id = req.group_id;
  p.member_id = req.member_id;
  p.instance_id = ctx.version >= 5 ? req.group_instance_id : std::nullopt;
  p.client_id = group::client_id(ctx);
  p.client_host = group::client_host(ctx);
  p.session_timeout_ms = req.session_timeout_ms;
  p.rebalance_timeout_ms = ctx.version >= 1 ? req.rebalance_timeout_ms : req.session_timeout_ms;
  p.protocol_type = req.protocol_type;
  for (const auto& pr : req.protocols)
    p.protocols.emplace_back(pr.name, group::to_bytes(pr.metadata));
  p.require_known_member_id = ctx.version >= 4;
  p.supports_skip_assignment = ctx.version >= 9;
  RequestContext c = ctx;
  ctx.svc.groups.join(std::move(p), [c](group::JoinResult r) {
    protocol::JoinGroupResponse resp;
    resp.error_code = r.error;
    resp.generation_id = r.generation;
    resp.protocol_type = r.protocol_type;
    if (c.version >= 7) {
      resp.protocol_name = r.protocol_name;
    } else {
      resp.protocol_name = r.protocol_name.value_or("");
    }
    resp.leader = r.leader;
    resp.skip_assignment = r.skip_assignment;
    resp.member_id = r.member_id;
    for (const auto& m : r.members) {
      auto& out = resp.members.emplace_back();
      out.member_id = m.member_id;
      out.group_instance_id = m.instance_id;
      out.metadata = group::as_span(m.metadata);
    }
    c.respond(resp);
  });
}

}  // namespace strata::broker::handlers
