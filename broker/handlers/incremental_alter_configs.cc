// IncrementalAlterConfigs (44), v0-1: SET (0), DELETE (1), APPEND (2) and SUBTRACT (3) single
// entries of a TOPIC or BROKER resource. APPEND/SUBTRACT only on LIST keys (cleanup.policy);
// unknown names and bad values → INVALID_CONFIG naming the key; an unknown operation or a key given
// twice → INVALID_REQUEST. validate_only honoured; changes durable and effective at once.
#include "protocol/messages/incremental_alter_configs.h"

#include <set>

#include "broker/handlers/config_admin.h"
#include "broker/handlers/handlers.h"
#include "broker/security/authorize.h"
#include "broker/services.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

void incremental_alter_configs(RequestContext& ctx, protocol::Reader& body) {
  using protocol::ErrorCode;
  protocol::IncrementalAlterConfigsRequest req;
  req.decode(body, ctx.version);
  protocol::IncrementalAlterConfigsResponse resp;
  for (const auto& res : req.resources) {
    auto& out = resp.responses.emplace_back();
    out.resource_type = res.resource_type;
    out.resource_name = res.resource_name;
    out.error_message = std::nullopt;
    std::vector<AlterItem> items;
    std::set<std::string> seen;
    std::optional<ResourceError> bad =
        check_config_access(ctx, res.resource_type, res.resource_name, AclOperation::alter_configs);
    for (const auto& c : res.configs) {
      if (bad) break;
      if (c.config_operation < 0 || c.config_operation > 3) {
        bad = ResourceError{
            ErrorCode::invalid_request,
            "Unknown config operation " + std::to_string(c.config_operation) + " for " + c.name};
        break;
      }
      if (!seen.insert(c.name).second) {
        bad = ResourceError{ErrorCode::invalid_request,
                            "Error due to duplicate config keys: " + c.name};
        break;
      }
      items.push_back({c.name, static_cast<AlterOp>(c.config_operation), c.value});
    }
    ResourceError result =
        bad ? *bad
            : alter_config_resource(
                  ctx.svc, res.resource_type, res.resource_name,
                  [&items](const ConfigMap& current,
                           const std::function<std::string(const std::string&)>& effective,
                           bool is_topic) {
                    return apply_alter_items(
                        current, items, is_topic ? topic_key_type : broker_key_type, effective);
                  },
                  req.validate_only, std::vector<std::string>(seen.begin(), seen.end()));
    out.error_code = result.error_code;
    out.error_message = result.message;
  }
  ctx.respond(resp);
}

}  // namespace strata::broker::handlers
