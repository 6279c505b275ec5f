// Config-resource helpers for the config handlers (see config_admin.h).
#include "broker/handlers/config_admin.h"

#include <spdlog/spdlog.h>

#include <charconv>
#include <mutex>

#include "broker/cluster/cluster_node.h"
#include "broker/config/dynamic_config.h"
#include "broker/security/authorize.h"
#include "broker/security/tls_reload.h"
#include "broker/services.h"
#include "broker/topics/topic_registry.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {
namespace {

using protocol::ErrorCode;

ResourceError error(ErrorCode e, std::string message) {
  return ResourceError{e, std::move(message)};
}

ResourceError map_status(const Status& st) {
  switch (st.code()) {
    case Errc::not_found:
      return error(ErrorCode::unknown_topic_or_partition, st.message());
    case Errc::invalid_argument:
      return error(ErrorCode::invalid_config, st.message());
    default:
      spdlog::error("altering configs failed: {}", st.to_string());
      return error(ErrorCode::kafka_storage_error, st.message());
  }
}

std::mutex& alter_mu() {  // read-modify-write of override maps, and broker-default propagation
  static std::mutex mu;
  return mu;
}

}  // namespace

std::optional<ResourceError> check_config_access(const RequestContext& ctx, int8_t resource_type,
                                                 const std::string& name,
                                                 security::AclOperation op) {
  if (resource_type == kResourceTopic && !authorize_topic(ctx, op, name)) {
    return error(ErrorCode::topic_authorization_failed, "Topic authorization failed.");
  }
  constexpr int8_t kResourceBrokerLogger = 8;
  if ((resource_type == kResourceBroker || resource_type == kResourceBrokerLogger) &&
      !authorize_cluster(ctx, op)) {
    return error(ErrorCode::cluster_authorization_failed, "Cluster authorization failed.");
  }
  return std::nullopt;
}

std::optional<ResourceError> check_topic_name(const std::string& name, bool altering) {
  if (altering && name.empty()) {
    return error(ErrorCode::invalid_request, "Default topic resources are not allowed.");
  }
  if (valid_topic_name(name)) return std::nullopt;
  return error(ErrorCode::invalid_topic_exception, "Topic name \"" + name + "\" is illegal.");
}

std::optional<ResourceError> check_broker_name(const Services& svc, const std::string& name,
                                               bool& cluster_default) {
  cluster_default = name.empty();
  if (cluster_default) return std::nullopt;
  int32_t id = -1;
  auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), id);
  if (ec != std::errc() || p != name.data() + name.size()) {
    return error(ErrorCode::invalid_request, "Broker id must be an integer, but it is: " + name);
  }
  if (id != svc.node_id) {
    return error(ErrorCode::invalid_request, "Unexpected broker id, expected " +
                                                 std::to_string(svc.node_id) +
                                                 " or empty string, but received " + name);
  }
  return std::nullopt;
}

ResourceError alter_config_resource(Services& svc, int8_t resource_type, const std::string& name,
                                    const OverrideEdit& edit, bool validate_only,
                                    const std::vector<std::string>& named_keys) {
  // Not held across a cluster's etcd calls (the compare-and-swap orders those): a slow etcd
  // must not queue every other AlterConfigs, broker resources included, behind it.
  std::unique_lock lk(alter_mu(), std::defer_lock);
  if (!(svc.cluster && resource_type == kResourceTopic)) lk.lock();
  if (resource_type == kResourceTopic) {
    if (auto e = check_topic_name(name, true)) return *e;  // no etcd round trip for it either
    auto edit_topic = [&](const ConfigMap& current) -> Result<ConfigMap> {
      auto values = effective_topic_values(current, *svc.topics.broker_defaults());
      auto next = edit(
          current, [&values](const std::string& k) { return values.count(k) ? values.at(k) : ""; },
          true);
      if (!next.ok()) return next;
      STRATA_RETURN_IF_ERROR(svc.topics.check_config_change(current, *next));
      return next;
    };
    if (svc.cluster) {
      // Cluster mode: edited from etcd's record (any broker may be asked, replica or not, also
      // right after the topic was created elsewhere), stored there, and applied by every
      // replica — this broker's too — from the view, in the view's order: applying the stored
      // map here as well could undo a newer change another broker made meanwhile.
      // DescribeConfigs answers from the view, which has the change when this returns.
      std::optional<Status> refused;
      auto stored = svc.cluster->edit_topic_configs(
          name,
          [&](const ConfigMap& current) {
            auto next = edit_topic(current);
            if (!next.ok()) refused = next.status();
            return next;
          },
          !validate_only);
      if (refused) return map_status(*refused);
      if (!stored.ok()) {
        return error(stored.status().code() == Errc::not_found
                         ? ErrorCode::unknown_topic_or_partition
                         : ErrorCode::request_timed_out,
                     stored.status().message());
      }
      if (!validate_only) spdlog::info("altered configs of topic {}", name);
      return {};
    }
    auto topic = svc.topics.find(name);
    if (!topic) {
      return error(ErrorCode::unknown_topic_or_partition, "Topic " + name + " does not exist.");
    }
    auto next = edit_topic(topic->configs);
    if (!next.ok()) return map_status(next.status());
    auto altered = svc.topics.alter_configs(name, *next, validate_only);
    if (!altered.ok()) return map_status(altered.status());
    if (!validate_only) spdlog::info("altered configs of topic {}", name);
    return {};
  }
  if (resource_type == kResourceBroker) {
    bool cluster_default = false;
    if (auto e = check_broker_name(svc, name, cluster_default)) return *e;
    auto& dyn = svc.dynamic_config;
    auto next = edit(
        dyn.overrides(cluster_default),
        [&dyn](const std::string& k) { return dyn.value(k).value_or(""); }, false);
    if (!next.ok()) return map_status(next.status());
    auto preview = dyn.preview(cluster_default, *next);
    if (!preview.ok()) return map_status(preview.status());
    // TLS material is loaded and checked before the change is stored, so a bad key store never
    // reaches the file a restart reads.
    security::TlsReloader::Plan tls;
    if (svc.tls_reloader) {
      auto plan = svc.tls_reloader->prepare(*dyn.effective(), **preview, named_keys);
      if (!plan.ok()) return map_status(plan.status());
      tls = std::move(*plan);
    }
    if (validate_only) return {};
    auto eff = dyn.replace(cluster_default, *next);
    if (!eff.ok()) return map_status(eff.status());
    security::TlsReloader::commit(tls);
    svc.topics.set_broker_defaults(*eff);
    spdlog::info("altered dynamic broker configs ({})", cluster_default ? "cluster default" : name);
    return {};
  }
  return error(ErrorCode::invalid_request,
               "Unsupported resource type " + std::to_string(resource_type));
}

}  // namespace strata::broker::handlers
