// DescribeClientQuotas (48), v0-1: the quota entities matching the filter components (match
// types exact / default / any, the strict flag) with their values, from the durable quota store
// (broker/quota/quota_store.h). A bad filter is a top-level INVALID_REQUEST; an unknown entity
// type UNSUPPORTED_VERSION, as Kafka answers.
#include "protocol/messages/describe_client_quotas.h"

#include "broker/handlers/handlers.h"
#include "broker/quota/client_quotas.h"
#include "broker/security/authorize.h"
#include "broker/services.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

void describe_client_quotas(RequestContext& ctx, protocol::Reader& body) {
  using protocol::ErrorCode;
  protocol::DescribeClientQuotasRequest req;
  req.decode(body, ctx.version);
  protocol::DescribeClientQuotasResponse resp;
  if (!authorize_cluster(ctx, AclOperation::describe_configs)) {
    resp.error_code = ErrorCode::cluster_authorization_failed;
    resp.error_message = "Cluster authorization failed.";
    resp.entries = std::nullopt;
    ctx.respond(resp);
    return;
  }
  std::vector<quota::FilterComponent> filter;
  for (const auto& c : req.components) {
    quota::FilterComponent f;
    f.entity_type = c.entity_type;
    f.match_type = static_cast<quota::MatchType>(c.match_type);
    if (f.match_type == quota::MatchType::exact) f.match = c.match;
    filter.push_back(std::move(f));
  }
  auto found = ctx.svc.quotas.store().describe(filter, req.strict);
  if (!found.ok()) {
    resp.error_code = found.status().code() == Errc::unsupported ? ErrorCode::unsupported_version
                                                                 : ErrorCode::invalid_request;
    resp.error_message = found.status().message();
    resp.entries = std::nullopt;
    ctx.respond(resp);
    return;
  }
  resp.error_message = std::nullopt;
  resp.entries.emplace();
  for (const auto& [entity, values] : *found) {
    auto& e = resp.entries->emplace_back();
    for (const auto& [type, name] : entity) {
      auto& part = e.entity.emplace_back();
      part.entity_type = type;
      part.entity_name = name;
    }
    for (const auto& [key, value] : values) {
      auto& v = e.values.emplace_back();
      v.key = key;
      v.value = value;
    }
  }
  ctx.respond(resp);
}

}  // namespace strata::broker::handlers
