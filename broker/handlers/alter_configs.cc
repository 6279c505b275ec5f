// AlterConfigs (33), v0-2: replaces the whole set of dynamic overrides of each TOPIC or BROKER
// resource (Kafka's legacy semantics: keys not listed go back to their defaults). Validation →
// INVALID_CONFIG naming the key; validate_only checks without changing anything. Changes are
// durable and effective at once (see config_admin.h).
#include "protocol/messages/alter_configs.h"

#include "broker/handlers/config_admin.h"
#include "broker/handlers/handlers.h"
#include "broker/security/authorize.h"
#include "broker/services.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

void alter_configs(RequestContext& ctx, protocol::Reader& body) {
  using protocol::ErrorCode;
  protocol::AlterConfigsRequest req;
  req.decode(body, ctx.version);
  protocol::AlterConfigsResponse resp;
  for (const auto& res : req.resources) {
    auto& out = resp.responses.emplace_back();
    out.resource_type = res.resource_type;
    out.resource_name = res.resource_name;
    out.error_message = std::nullopt;
    ConfigMap wanted;
    std::optional<ResourceError> bad =
        check_config_access(ctx, res.resource_type, res.resource_name, AclOperation::alter_configs);
    for (const auto& c : res.configs) {
      if (bad) break;
      if (!c.value) {
        bad = ResourceError{ErrorCode::invalid_config, "Null value not supported for: " + c.name};
        break;
      }
      if (!wanted.emplace(c.name, *c.value).second) {
        bad = ResourceError{ErrorCode::invalid_request,
                            "Error due to duplicate config keys: " + c.name};
        break;
      }
    }
    std::vector<std::string> names;
    for (const auto& [k, v] : wanted) names.push_back(k);
    ResourceError result = bad ? *bad
                               : alter_config_resource(
                                     ctx.svc, res.resource_type, res.resource_name,
                                     [&wanted](const ConfigMap&, const auto&,
                                               bool) -> Result<ConfigMap> { return wanted; },
                                     req.validate_only, names);
    out.error_code = result.error_code;
    out.error_message = result.message;
  }
  ctx.respond(resp);
}

}  // namespace strata::broker::handlers
