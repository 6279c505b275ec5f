// DescribeConfigs (32), v1-4: every config of a TOPIC or BROKER resource with its value, source
// (DYNAMIC_TOPIC_CONFIG / DYNAMIC_BROKER_CONFIG / DYNAMIC_DEFAULT_BROKER_CONFIG /
// STATIC_BROKER_CONFIG / DEFAULT_CONFIG), read-only and sensitive flags, synonyms (when asked),
// type and documentation (v3+, when asked). Values come from DynamicConfig (broker layers) and the
// topic's overrides; see broker/config/dynamic_config.h.
#include "protocol/messages/describe_configs.h"

#include "broker/cluster/cluster_node.h"
#include "broker/handlers/config_admin.h"
#include "broker/handlers/handlers.h"
#include "broker/security/authorize.h"
#include "broker/services.h"
#include "broker/topics/topic_registry.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {
namespace {

// The topic's overrides. In a cluster, its record's: in this broker's view of etcd, or read from
// etcd when the view does not have it yet (a topic just created through another broker). Not a
// local copy — a broker holding no replica has none, or an old one (a replica moved away).
Result<std::map<std::string, std::string>> topic_overrides(Services& svc, const std::string& name) {
  if (!svc.cluster) {
    if (auto topic = svc.topics.find(name)) return topic->configs;
    return Status(Errc::not_found, "unknown topic " + name);
  }
  auto view = svc.cluster->snapshot();
  if (auto t = view->topics.find(name); t != view->topics.end()) return t->second.configs;
  auto record = svc.cluster->read_topic(name);
  if (!record.ok()) return record.status();
  return std::move(record->configs);
}

}  // namespace

void describe_configs(RequestContext& ctx, protocol::Reader& body) {
  using protocol::ErrorCode;
  protocol::DescribeConfigsRequest req;
  req.decode(body, ctx.version);
  protocol::DescribeConfigsResponse resp;
  auto& dyn = ctx.svc.dynamic_config;
  for (const auto& res : req.resources) {
    auto& out = resp.results.emplace_back();
    out.resource_type = res.resource_type;
    out.resource_name = res.resource_name;
    out.error_message = std::nullopt;
    const std::vector<std::string> keys =
        res.configuration_keys.value_or(std::vector<std::string>{});
    std::vector<ConfigEntryInfo> entries;
    if (auto denied = check_config_access(ctx, res.resource_type, res.resource_name,
                                          AclOperation::describe_configs)) {
      out.error_code = denied->error_code;
      out.error_message = denied->message;
      continue;
    }
    if (res.resource_type == kResourceTopic) {
      if (auto e = check_topic_name(res.resource_name, false)) {  // no etcd round trip for it
        out.error_code = e->error_code;
        out.error_message = e->message;
        continue;
      }
      auto configs = topic_overrides(ctx.svc, res.resource_name);
      if (!configs.ok()) {
        const bool unknown = configs.status().code() == Errc::not_found;
        out.error_code =
            unknown ? ErrorCode::unknown_topic_or_partition : ErrorCode::request_timed_out;
        out.error_message = unknown ? "Topic " + res.resource_name + " does not exist."
                                    : configs.status().message();
        continue;
      }
      entries = dyn.describe_topic(*configs, keys);
    } else if (res.resource_type == kResourceBroker) {
      bool cluster_default = false;
      if (auto e = check_broker_name(ctx.svc, res.resource_name, cluster_default)) {
        out.error_code = e->error_code;
        out.error_message = e->message;
        continue;
      }
      entries = dyn.describe_broker(cluster_default, keys);
    } else {
      out.error_code = ErrorCode::invalid_request;
      out.error_message = "Unsupported resource type " + std::to_string(res.resource_type);
      continue;
    }
    for (auto& e : entries) {
      auto& c = out.configs.emplace_back();
      c.name = e.name;
      c.value = e.value;
      c.read_only = e.read_only;
      c.config_source = static_cast<int8_t>(e.source);
      c.is_sensitive = e.sensitive;
      c.config_type = static_cast<int8_t>(e.type);
      c.documentation =
          req.include_documentation ? std::optional<std::string>(e.doc) : std::nullopt;
      if (req.include_synonyms) {
        for (auto& s : e.synonyms) {
          auto& syn = c.synonyms.emplace_back();
          syn.name = s.name;
          syn.value = s.value;
          syn.source = static_cast<int8_t>(s.source);
        }
      }
    }
  }
  ctx.respond(resp);
}

}  // namespace strata::broker::handlers
