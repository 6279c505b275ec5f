// LeaveGroup (13) v0-5: one member (v0-2) or a batch of members by id or instance id (v3+).
#include "protocol/messages/leave_group.h"

#include "broker/group/group_coordinator.h"
#include "broker/handlers/handlers.h"
#include "broker/security/authorize.h"
#include "broker/services.h"

namespace strata::broker::handlers {

void leave_group(RequestContext& ctx, protocol::Reader& body) {
  protocol::LeaveGroupRequest req;
  req.decode(body, ctx.version);
  if (!authorize_group(ctx, AclOperation::read, req.group_id)) {
    protocol::LeaveGroupResponse resp;
    resp.error_code = protocol::ErrorCode::group_authorization_failed;
    ctx.respond(resp);
    return;
  }
  std::vector<group::LeaveRequestMember> members;
  if (ctx.version < 3) {
    members.push_back({req.member_id, std::nullopt});
  } else {
    for (const auto& m : req.members) members.push_back({m.member_id, m.group_instance_id});
  }
  group::LeaveResult r = ctx.svc.groups.leave(req.group_id, members);
  protocol::LeaveGroupResponse resp;
  resp.error_code = r.error;
  if (ctx.version < 3) {
    if (resp.error_code == protocol::ErrorCode::none && !r.member_errors.empty())
      resp.error_code = r.member_errors.front();
  } else if (r.error == protocol::ErrorCode::none) {
    for (size_t i = 0; i < members.size(); ++i) {
      auto& out = resp.members.emplace_back();
      out.member_id = members[i].member_id;
      out.group_instance_id = members[i].instance_id;
      out.error_code = r.member_errors[i];
    }
  }
  ctx.respond(resp);
}

}  // namespace strata::broker::handlers
