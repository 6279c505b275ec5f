// AlterClientQuotas (49), v0-1: sets / removes quota values per entity (user, client-id or
// user+client-id; a null name is the default entity), validated as Kafka does (INVALID_REQUEST
// per entry with a message), persisted atomically and applied to the next request of the
// affected clients; validate_only checks without changing anything. See broker/quota/quota_store.h.
#include "protocol/messages/alter_client_quotas.h"

#include <spdlog/spdlog.h>

#include "broker/handlers/handlers.h"
#include "broker/metrics/broker_metrics.h"
#include "broker/quota/client_quotas.h"
#include "broker/security/authorize.h"
#include "broker/services.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

void alter_client_quotas(RequestContext& ctx, protocol::Reader& body) {
  using protocol::ErrorCode;
  protocol::AlterClientQuotasRequest req;
  req.decode(body, ctx.version);
  std::vector<quota::QuotaAlteration> alterations;
  for (const auto& entry : req.entries) {
    auto& a = alterations.emplace_back();
    for (const auto& part : entry.entity) a.entity.emplace_back(part.entity_type, part.entity_name);
    for (const auto& op : entry.ops) {
      a.ops.emplace_back(op.key, op.remove ? std::nullopt : std::optional<double>(op.value));
    }
  }
  // Kafka: ALTER_CONFIGS on the cluster, else every entry is refused.
  const bool allowed = authorize_cluster(ctx, AclOperation::alter_configs);
  auto results = allowed ? ctx.svc.quotas.alter(alterations, req.validate_only)
                         : std::vector<Status>(alterations.size());
  protocol::AlterClientQuotasResponse resp;
  for (size_t i = 0; i < req.entries.size(); ++i) {
    auto& out = resp.entries.emplace_back();
    for (const auto& part : req.entries[i].entity) {
      auto& e = out.entity.emplace_back();
      e.entity_type = part.entity_type;
      e.entity_name = part.entity_name;
    }
    const Status& st = results[i];
    if (!allowed) {
      out.error_code = ErrorCode::cluster_authorization_failed;
      out.error_message = "Cluster authorization failed.";
      ctx.svc.metrics.request_error(ctx.api_key, out.error_code);
      continue;
    }
    if (st.ok()) {
      out.error_message = std::nullopt;
      if (!req.validate_only) {
        spdlog::info("client quotas of {} altered by {}",
                     quota::entity_to_string(alterations[i].entity), ctx.responder.peer());
      }
      continue;
    }
    out.error_code = st.code() == Errc::invalid_argument ? ErrorCode::invalid_request
                                                         : ErrorCode::kafka_storage_error;
    out.error_message = st.message();
    ctx.svc.metrics.request_error(ctx.api_key, out.error_code);
  }
  ctx.respond(resp);
}

}  // namespace strata::broker::handlers
