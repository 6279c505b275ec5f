// Heartbeat (12) v0-4: keeps a member's session alive; tells it about rebalances.
#include "protocol/messages/heartbeat.h"

#include "broker/group/group_coordinator.h"
#include "broker/handlers/handlers.h"
#include "broker/security/authorize.h"
#include "broker/services.h"

namespace strata::broker::handlers {

void heartbeat(RequestContext& ctx, protocol::Reader& body) {
  protocol::HeartbeatRequest req;
  req.decode(body, ctx.version);
  protocol::HeartbeatResponse resp;
  resp.error_code =
      !authorize_group(ctx, AclOperation::read, req.group_id)
          ? protocol::ErrorCode::group_authorization_failed
          : ctx.svc.groups.heartbeat(req.group_id, req.member_id,
                                     ctx.version >= 3 ? req.group_instance_id : std::nullopt,
                                     req.generation_id);
  ctx.respond(resp);
}

}  // namespace strata::broker::handlers
