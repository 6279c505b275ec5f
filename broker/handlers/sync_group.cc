// SyncGroup (14) v0-5: the leader's assignments go to every member; followers wait for them.
#include "protocol/messages/sync_group.h"

#include "broker/group/group_coordinator.h"
#include "broker/group/handler_util.h"
#include "broker/handlers/handlers.h"
#include "broker/security/authorize.h"
#include "broker/services.h"

namespace strata::broker::handlers {

void sync_group(RequestContext& ctx, protocol::Reader& body) {
  protocol::SyncGroupRequest req;
  req.decode(body, ctx.version);
  if (!authorize_group(ctx, AclOperation::read, req.group_id)) {
    protocol::SyncGroupResponse resp;
    resp.error_code = protocol::ErrorCode::group_authorization_failed;
    ctx.respond(resp);
    return;
  }
  group::SyncParams p;
  p.group_id = req.group_id;
  p.generation = req.generation_id;
  p.member_id = req.member_id;
  p.instance_id = ctx.version >= 3 ? req.group_instance_id : std::nullopt;
  if (ctx.version >= 5) {
    p.protocol_type = req.protocol_type;
    p.protocol_name = req.protocol_name;
  }
  for (const auto& a : req.assignments)
    p.assignments.emplace_back(a.member_id, group::to_bytes(a.assignment));
  RequestContext c = ctx;
  ctx.svc.groups.sync(std::move(p), [c](group::SyncResult r) {
    protocol::SyncGroupResponse resp;
    resp.error_code = r.error;
    resp.protocol_type = r.protocol_type;
    resp.protocol_name = r.protocol_name;
    resp.assignment = group::as_span(r.assignment);  // empty but present when there is none
    c.respond(resp);
  });
}

}  // namespace strata::broker::handlers
