// DeleteGroups (42) v0-2: deletes empty groups with their committed offsets
// (GROUP_ID_NOT_FOUND / NON_EMPTY_GROUP otherwise).
#include "protocol/messages/delete_groups.h"

#include <cstdint>
#include <memory>
#include <mutex>

#include "broker/group/group_coordinator.h"
#include "broker/handlers/handlers.h"
#include "broker/security/authorize.h"
#include "broker/services.h"

namespace strata::broker::handlers {

// Answered once every group's tombstones are durable (or failed); the results in request order.
void delete_groups(RequestContext& ctx, protocol::Reader& body) {
  protocol::DeleteGroupsRequest req;
  req.decode(body, ctx.version);
  struct Pending {
    std::mutex mu;
    protocol::DeleteGroupsResponse resp;
    size_t left;
  };
  auto pending = std::make_shared<Pending>();
  pending->left = req.groups_names.size() + 1;  // + this loop, so no answer comes from inside it
  RequestContext c = ctx;
  auto finish_one = [pending, c](size_t i, protocol::ErrorCode e) {
    std::lock_guard l(pending->mu);
    if (i < pending->resp.results.size()) pending->resp.results[i].error_code = e;
    if (--pending->left == 0) c.respond(pending->resp);
  };
  for (const auto& id : req.groups_names) pending->resp.results.emplace_back().group_id = id;
  for (size_t i = 0; i < req.groups_names.size(); ++i) {
    const std::string& id = req.groups_names[i];
    if (!authorize_group(ctx, AclOperation::del, id)) {
      finish_one(i, protocol::ErrorCode::group_authorization_failed);
      continue;
    }
    ctx.svc.groups.delete_group(id, [finish_one, i](protocol::ErrorCode e) { finish_one(i, e); });
  }
  finish_one(SIZE_MAX, protocol::ErrorCode::none);
}

}  // namespace strata::broker::handlers
