// ListGroups (16) v0-5: every group, filtered by state (v4+, case-insensitive) and type (v5+;
// all groups here are "classic").
#include "protocol/messages/list_groups.h"

#include <algorithm>
#include <cctype>

#include "broker/group/group_coordinator.h"
#include "broker/handlers/handlers.h"
#include "broker/security/authorize.h"
#include "broker/services.h"

namespace strata::broker::handlers {

namespace {
bool iequals(const std::string& a, const std::string& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}
bool matches(const std::vector<std::string>& filter, const std::string& v) {
  return filter.empty() || std::any_of(filter.begin(), filter.end(),
                                       [&](const std::string& f) { return iequals(f, v); });
}
}  // namespace

void list_groups(RequestContext& ctx, protocol::Reader& body) {
  protocol::ListGroupsRequest req;
  req.decode(body, ctx.version);
  protocol::ListGroupsResponse resp;
  // Kafka: DESCRIBE on the cluster lists every group; else only those the principal may
  // DESCRIBE (the rest are left out silently).
  const bool all = may(ctx, AclOperation::describe, ResourceType::cluster, security::kClusterName);
  for (auto& g : ctx.svc.groups.list()) {
    if (!all && !may(ctx, AclOperation::describe, ResourceType::group, g.group_id)) continue;
    if (ctx.version >= 4 && !matches(req.states_filter, g.state)) continue;
    if (ctx.version >= 5 && !matches(req.types_filter, "classic")) continue;
    auto& out = resp.groups.emplace_back();
    out.group_id = std::move(g.group_id);
    out.protocol_type = std::move(g.protocol_type);
    out.group_state = std::move(g.state);
    out.group_type = "classic";
  }
  ctx.respond(resp);
}

}  // namespace strata::broker::handlers
