// DescribeGroups (15) v0-5: state, protocol and members; metadata/assignments only when Stable
// (as Kafka). Unknown groups are described as Dead with no error.
#include "protocol/messages/describe_groups.h"

#include "broker/group/group_coordinator.h"
#include "broker/group/handler_util.h"
#include "broker/handlers/handlers.h"
#include "broker/security/authorize.h"
#include "broker/services.h"

namespace strata::broker::handlers {

namespace {
// Without ACLs every group operation is allowed: READ(3), DELETE(6), DESCRIBE(8).
constexpr int32_t kGroupOperations = (1 << 3) | (1 << 6) | (1 << 8);
}  // namespace

void describe_groups(RequestContext& ctx, protocol::Reader& body) {
  protocol::DescribeGroupsRequest req;
  req.decode(body, ctx.version);
  protocol::DescribeGroupsResponse resp;
  std::vector<group::GroupSummary> summaries;  // owns the bytes the response points into
  summaries.reserve(req.groups.size());
  for (const auto& id : req.groups) {
    if (authorize_group(ctx, AclOperation::describe, id)) {
      summaries.push_back(ctx.svc.groups.describe(id));
    } else {  // nothing of the group is disclosed
      auto& s = summaries.emplace_back();
      s.error = protocol::ErrorCode::group_authorization_failed;
    }
  }
  for (size_t i = 0; i < req.groups.size(); ++i) {
    const auto& s = summaries[i];
    auto& g = resp.groups.emplace_back();
    g.error_code = s.error;
    g.group_id = req.groups[i];
    g.group_state = s.state;
    g.protocol_type = s.protocol_type;
    g.protocol_data = s.protocol_data;
    if (req.include_authorized_operations) g.authorized_operations = kGroupOperations;
    for (const auto& m : s.members) {
      auto& om = g.members.emplace_back();
      om.member_id = m.member_id;
      om.group_instance_id = m.instance_id;
      om.client_id = m.client_id;
      om.client_host = m.client_host;
      om.member_metadata = group::as_span(m.metadata);
      om.member_assignment = group::as_span(m.assignment);
    }
  }
  ctx.respond(resp);
}

}  // namespace strata::broker::handlers
