// DeleteGroups (42) v0-2: deletes empty groups with their committed offsets
// (GROUP_ID_NOT_FOUND / NON_EMPTY_GROUP otherwise).
#include "protocol/messages/delete_groups.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

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
  // A name given twice is one group, answered once (as Kafka's broker does).
  std::vector<std::string> names;
  std::unordered_set<std::string> seen;
  for (auto& id : req.groups_names) {
    if (seen.insert(id).second) names.push_back(std::move(id));
  }
  auto pending = std::make_shared<Pending>();
  pending->left = names.size() + 1;  // + this loop, so no answer comes from inside it
  RequestContext c = ctx;
  auto finish_one = [pending, c](size_t i, protocol::ErrorCode e) {
    std::lock_guard l(pending->mu);
    if (i < pending->resp.results.size()) pending->resp.results[i].error_code = e;
    if (--pending->left == 0) c.respond(pending->resp);
  };
  for (const auto& id : names) pending->resp.results.emplace_back().group_id = id;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& id = names[i];
    if (!authorize_group(ctx, AclOperation::del, id)) {
      finish_one(i, protocol::ErrorCode::group_authorization_failed);
      continue;
    }
    ctx.svc.groups.delete_group(id, [finish_one, i](protocol::ErrorCode e) { finish_one(i, e); });
  }
  finish_one(SIZE_MAX, protocol::ErrorCode::none);
}

}  // namespace strata::broker::handlers
