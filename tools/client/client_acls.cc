// Client: ACL administration (see client.h) — DescribeAcls / CreateAcls / DeleteAcls, sent to the
// bootstrap broker (every broker of a cluster serves the same ACLs).
#include "protocol/messages/create_acls.h"
#include "protocol/messages/delete_acls.h"
#include "protocol/messages/describe_acls.h"
#include "tools/client/client.h"

namespace strata::client {

Status Client::create_acls(const std::vector<AclBinding>& bindings) {
  auto conn = bootstrap_connection();
  if (!conn.ok()) return conn.status();
  protocol::CreateAclsRequest req;
  for (const auto& b : bindings) {
    auto& c = req.creations.emplace_back();
    c.resource_type = b.resource_type;
    c.resource_name = b.resource_name;
    c.resource_pattern_type = b.pattern_type;
    c.principal = b.principal;
    c.host = b.host;
    c.operation = b.operation;
    c.permission_type = b.permission;
  }
  auto reply = (*conn)->call<protocol::CreateAclsRequest, protocol::CreateAclsResponse>(req);
  if (!reply.ok()) return reply.status();
  if (reply->msg.results.size() != bindings.size()) {
    return connection_status("CreateAcls answered a different number of results");
  }
  for (const auto& r : reply->msg.results) {
    if (r.error_code != protocol::ErrorCode::none) {
      return kafka_status(r.error_code, "ACLs", r.error_message.value_or(""));
    }
  }
  return Status::Ok();
}

Result<std::vector<AclBinding>> Client::describe_acls(const AclBindingFilter& f) {
  auto conn = bootstrap_connection();
  if (!conn.ok()) return conn.status();
  protocol::DescribeAclsRequest req;
  req.resource_type_filter = f.resource_type;
  req.resource_name_filter = f.resource_name;
  req.pattern_type_filter = f.pattern_type;
  req.principal_filter = f.principal;
  req.host_filter = f.host;
  req.operation = f.operation;
  req.permission_type = f.permission;
  auto reply = (*conn)->call<protocol::DescribeAclsRequest, protocol::DescribeAclsResponse>(req);
  if (!reply.ok()) return reply.status();
  const auto& msg = reply->msg;
  if (msg.error_code != protocol::ErrorCode::none) {
    return kafka_status(msg.error_code, "ACLs", msg.error_message.value_or(""));
  }
  std::vector<AclBinding> out;
  for (const auto& r : msg.resources) {
    for (const auto& a : r.acls) {
      out.push_back(AclBinding{r.resource_type, r.resource_name, r.pattern_type, a.principal,
                               a.host, a.operation, a.permission_type});
    }
  }
  return out;
}

Result<std::vector<AclBinding>> Client::delete_acls(const std::vector<AclBindingFilter>& filters) {
  auto conn = bootstrap_connection();
  if (!conn.ok()) return conn.status();
  protocol::DeleteAclsRequest req;
  for (const auto& f : filters) {
    auto& out = req.filters.emplace_back();
    out.resource_type_filter = f.resource_type;
    out.resource_name_filter = f.resource_name;
    out.pattern_type_filter = f.pattern_type;
    out.principal_filter = f.principal;
    out.host_filter = f.host;
    out.operation = f.operation;
    out.permission_type = f.permission;
  }
  auto reply = (*conn)->call<protocol::DeleteAclsRequest, protocol::DeleteAclsResponse>(req);
  if (!reply.ok()) return reply.status();
  std::vector<AclBinding> removed;
  for (const auto& r : reply->msg.filter_results) {
    if (r.error_code != protocol::ErrorCode::none) {
      return kafka_status(r.error_code, "ACLs", r.error_message.value_or(""));
    }
    for (const auto& m : r.matching_acls) {
      if (m.error_code != protocol::ErrorCode::none) {
        return kafka_status(m.error_code, "ACL " + m.resource_name, m.error_message.value_or(""));
      }
      removed.push_back(AclBinding{m.resource_type, m.resource_name, m.pattern_type, m.principal,
                                   m.host, m.operation, m.permission_type});
    }
  }
  return removed;
}

}  // namespace strata::client
