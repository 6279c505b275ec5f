// DeleteGroups (42) v0-2: deletes empty groups with their committed offsets
// (GROUP_ID_NOT_FOUND / NON_EMPTY_GROUP otherwise).
#include "protocol/messages/delete_groups.h"

#include "broker/group/group_coordinator.h"
#include "broker/handlers/handlers.h"
#include "broker/security/authorize.h"
#include "broker/services.h"

namespace strata::broker::handlers {

void delete_groups(RequestContext& ctx, protocol::Reader& body) {
  protocol::DeleteGroupsRequest req;
  req.decode(body, ctx.version);
  protocol::DeleteGroupsResponse resp;
  for (const auto& id : req.groups_names) {
    auto& r = resp.results.emplace_back();
    r.group_id = id;
    r.error_code = authorize_group(ctx, AclOperation::del, id)
                       ? ctx.svc.groups.delete_group(id)
                       : protocol::ErrorCode::group_authorization_failed;
  }
  ctx.respond(resp);
}

}  // namespace strata::broker::handlers
