// DescribeAcls (29), CreateAcls (30), DeleteAcls (31) v0-3, as Kafka's AclApis: with no
// authorizer configured every answer is SECURITY_DISABLED; DescribeAcls needs DESCRIBE on the
// cluster, the other two ALTER (else CLUSTER_AUTHORIZATION_FAILED, for the whole request /
// every result). An invalid binding or filter gets INVALID_REQUEST with Kafka's message, for
// itself only; the valid creations of the same request still apply.
#include <map>
#include <optional>
#include <tuple>

#include "broker/handlers/handlers.h"
#include "broker/metrics/broker_metrics.h"
#include "broker/security/acl_text.h"
#include "broker/security/authorize.h"
#include "broker/security/security_services.h"
#include "broker/services.h"
#include "protocol/messages/create_acls.h"
#include "protocol/messages/delete_acls.h"
#include "protocol/messages/describe_acls.h"

namespace strata::broker::handlers {
namespace {

using protocol::ErrorCode;
using security::AclBinding;
using security::AclFilter;
using security::AclPermission;
using security::PatternType;

constexpr const char* kNoAuthorizer = "No Authorizer is configured on the broker";

// Wire codes Kafka knows, for filters (which may name types Strata has no ACLs of: they match
// nothing) and bindings (only what the model holds).
bool filter_codes_ok(int8_t type, int8_t pattern, int8_t op, int8_t perm) {
  return type >= 1 && type <= 7 && pattern >= 1 && pattern <= 4 && op >= 1 && op <= 14 &&
         perm >= 1 && perm <= 3;
}

template <typename F>
std::optional<AclFilter> filter_of(const F& f, int8_t pattern, std::string* why) {
  if (!filter_codes_ok(f.resource_type_filter, pattern, f.operation, f.permission_type)) {
    *why = "Filter contains UNKNOWN elements";
    return std::nullopt;
  }
  AclFilter out;
  out.resource_type = static_cast<ResourceType>(f.resource_type_filter);
  out.resource_name = f.resource_name_filter;
  out.pattern = static_cast<PatternType>(pattern);
  out.principal = f.principal_filter;
  out.host = f.host_filter;
  out.operation = static_cast<AclOperation>(f.operation);
  out.permission = static_cast<AclPermission>(f.permission_type);
  return out;
}

// Kafka's checks of a new binding (AclControlManager.validateNewAcl, AclApis); "" = valid.
std::string invalid_reason(const protocol::CreateAclsRequest::Creation& c) {
  if (c.resource_type < 2 || c.resource_type > 5) {
    return "Invalid resourceType " + std::to_string(c.resource_type);
  }
  if (c.resource_pattern_type != 3 && c.resource_pattern_type != 4) {
    return "Invalid patternType " + std::to_string(c.resource_pattern_type);
  }
  if (c.operation < 2 || c.operation > 12) {
    return "Invalid operation " + std::to_string(c.operation);
  }
  if (c.permission_type != 2 && c.permission_type != 3) {
    return "Invalid permissionType " + std::to_string(c.permission_type);
  }
  if (c.resource_type == static_cast<int8_t>(ResourceType::cluster) &&
      c.resource_name != security::kClusterName) {
    return std::string("The only valid name for the CLUSTER resource is ") + security::kClusterName;
  }
  if (c.resource_name.empty()) return "Invalid empty resource name";
  const size_t colon = c.principal.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == c.principal.size()) {
    return "Could not parse principal from `" + c.principal +
           "` (no colon is present separating the principal type from the principal name)";
  }
  if (c.host.empty()) return "Invalid empty host";
  if (c.resource_pattern_type == 4 && c.resource_name == security::kWildcard) {
    return "A PREFIXED pattern cannot be the wildcard '*' (use LITERAL '*')";
  }
  return "";
}

}  // namespace

void describe_acls(RequestContext& ctx, protocol::Reader& body) {
  protocol::DescribeAclsRequest req;
  req.decode(body, ctx.version);
  protocol::DescribeAclsResponse resp;
  std::string why;
  if (!authorize_cluster(ctx, AclOperation::describe)) {
    resp.error_code = ErrorCode::cluster_authorization_failed;
    resp.error_message = "Cluster authorization failed.";
  } else if (ctx.svc.authorizer == nullptr) {
    resp.error_code = ErrorCode::security_disabled;
    resp.error_message = kNoAuthorizer;
  } else if (auto filter = filter_of(req, req.pattern_type_filter, &why); !filter) {
    resp.error_code = ErrorCode::invalid_request;
    resp.error_message = why;
  } else {
    // Grouped by resource pattern, as Kafka's DescribeAclsResponse.aclsResources.
    std::map<std::tuple<int8_t, std::string, int8_t>, std::vector<AclBinding>> by_resource;
    for (auto& b : ctx.svc.authorizer->acls(*filter)) {
      by_resource[{static_cast<int8_t>(b.resource_type), b.resource_name,
                   static_cast<int8_t>(b.pattern)}]
          .push_back(std::move(b));
    }
    for (auto& [key, bindings] : by_resource) {
      auto& r = resp.resources.emplace_back();
      r.resource_type = std::get<0>(key);
      r.resource_name = std::get<1>(key);
      r.pattern_type = std::get<2>(key);
      for (const auto& b : bindings) {
        auto& a = r.acls.emplace_back();
        a.principal = b.principal;
        a.host = b.host;
        a.operation = static_cast<int8_t>(b.operation);
        a.permission_type = static_cast<int8_t>(b.permission);
      }
    }
  }
  ctx.respond(resp);
}

void create_acls(RequestContext& ctx, protocol::Reader& body) {
  protocol::CreateAclsRequest req;
  req.decode(body, ctx.version);
  protocol::CreateAclsResponse resp;
  resp.results.resize(req.creations.size());
  auto fail_all = [&](ErrorCode code, const std::string& message) {
    for (auto& r : resp.results) {
      r.error_code = code;
      r.error_message = message;
    }
  };
  if (!authorize_cluster(ctx, AclOperation::alter)) {
    fail_all(ErrorCode::cluster_authorization_failed, "Cluster authorization failed.");
  } else if (ctx.svc.authorizer == nullptr) {
    fail_all(ErrorCode::security_disabled, kNoAuthorizer);
  } else {
    std::vector<AclBinding> valid;
    std::vector<size_t> valid_index;
    for (size_t i = 0; i < req.creations.size(); ++i) {
      const auto& c = req.creations[i];
      if (std::string why = invalid_reason(c); !why.empty()) {
        resp.results[i].error_code = ErrorCode::invalid_request;
        resp.results[i].error_message = why;
        continue;
      }
      valid.push_back(AclBinding{static_cast<ResourceType>(c.resource_type), c.resource_name,
                                 static_cast<PatternType>(c.resource_pattern_type), c.principal,
                                 c.host, static_cast<AclOperation>(c.operation),
                                 static_cast<AclPermission>(c.permission_type)});
      valid_index.push_back(i);
    }
    if (!valid.empty()) {
      Status st = ctx.svc.authorizer->create(valid);
      if (!st.ok()) {
        for (size_t i : valid_index) {
          resp.results[i].error_code = ErrorCode::unknown_server_error;
          resp.results[i].error_message = "Failed to store the ACLs: " + st.message();
        }
      }
    }
  }
  for (const auto& r : resp.results) {
    if (r.error_code != ErrorCode::none) ctx.svc.metrics.request_error(ctx.api_key, r.error_code);
  }
  ctx.respond(resp);
}

void delete_acls(RequestContext& ctx, protocol::Reader& body) {
  protocol::DeleteAclsRequest req;
  req.decode(body, ctx.version);
  protocol::DeleteAclsResponse resp;
  resp.filter_results.resize(req.filters.size());
  const bool allowed = authorize_cluster(ctx, AclOperation::alter);
  for (size_t i = 0; i < req.filters.size(); ++i) {
    auto& out = resp.filter_results[i];
    std::string why;
    std::optional<AclFilter> filter;
    if (!allowed) {
      out.error_code = ErrorCode::cluster_authorization_failed;
      out.error_message = "Cluster authorization failed.";
    } else if (ctx.svc.authorizer == nullptr) {
      out.error_code = ErrorCode::security_disabled;
      out.error_message = kNoAuthorizer;
    } else if (filter = filter_of(req.filters[i], req.filters[i].pattern_type_filter, &why);
               !filter) {
      out.error_code = ErrorCode::invalid_request;
      out.error_message = why;
    } else if (auto removed = ctx.svc.authorizer->remove(*filter); !removed.ok()) {
      out.error_code = ErrorCode::unknown_server_error;
      out.error_message = "Failed to delete the ACLs: " + removed.status().message();
    } else {
      for (const auto& b : *removed) {
        auto& m = out.matching_acls.emplace_back();
        m.resource_type = static_cast<int8_t>(b.resource_type);
        m.resource_name = b.resource_name;
        m.pattern_type = static_cast<int8_t>(b.pattern);
        m.principal = b.principal;
        m.host = b.host;
        m.operation = static_cast<int8_t>(b.operation);
        m.permission_type = static_cast<int8_t>(b.permission);
      }
    }
    if (out.error_code != ErrorCode::none) {
      ctx.svc.metrics.request_error(ctx.api_key, out.error_code);
    }
  }
  ctx.respond(resp);
}

}  // namespace strata::broker::handlers
