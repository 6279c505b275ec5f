// Shared by the DescribeConfigs, AlterConfigs and IncrementalAlterConfigs handlers: resource
// resolution (TOPIC / BROKER "<node.id>" / BROKER "" = cluster default) and one "edit the override
// map of a resource, validate, apply durably" routine with its Kafka error mapping. Admin half of
//. Any handler thread; alterations are serialised inside.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "broker/config/dynamic_config.h"
#include "broker/security/acl.h"
#include "protocol/base/result.h"
#include "protocol/wire/errors.h"

namespace strata::broker {
struct RequestContext;
struct Services;
}  // namespace strata::broker

namespace strata::broker::handlers {

inline constexpr int8_t kResourceTopic = 2;
inline constexpr int8_t kResourceBroker = 4;

struct ResourceError {
  protocol::ErrorCode error_code = protocol::ErrorCode::none;
  std::optional<std::string> message;  // null on success, as Kafka sends
};

// A TOPIC resource's name, checked as Kafka checks it before looking the topic up: an illegal name
// (Topic.validate: empty, "." or "..", over 249 characters, other than [a-zA-Z0-9._-]) →
// INVALID_TOPIC_EXCEPTION. When altering, an empty name → INVALID_REQUEST (Kafka's controller:
// "Default topic resources are not allowed.").
std::optional<ResourceError> check_topic_name(const std::string& name, bool altering);

// BROKER resource name → cluster_default (true for ""), or an INVALID_REQUEST error.
// Kafka's check of one config resource: `op` (DESCRIBE_CONFIGS / ALTER_CONFIGS) on the topic
// (TOPIC_AUTHORIZATION_FAILED) or, for a broker, on the cluster (CLUSTER_AUTHORIZATION_FAILED);
// nullopt = allowed (other resource types fail later as unsupported).
std::optional<ResourceError> check_config_access(const RequestContext& ctx, int8_t resource_type,
                                                 const std::string& name,
                                                 security::AclOperation op);

std::optional<ResourceError> check_broker_name(const Services& svc, const std::string& name,
                                               bool& cluster_default);

// Computes the new override map from the current one; `effective(key)` gives a key's current
// effective value (for APPEND/SUBTRACT). Errc::invalid_argument → INVALID_CONFIG.
using OverrideEdit = std::function<Result<ConfigMap>(
    const ConfigMap& current, const std::function<std::string(const std::string&)>& effective,
    bool is_topic)>;

// `named_keys`: the keys the request names (a broker listener's key or trust store named again
// with its current value is reloaded: the files behind it may have changed, as in Kafka).
ResourceError alter_config_resource(Services& svc, int8_t resource_type, const std::string& name,
                                    const OverrideEdit& edit, bool validate_only,
                                    const std::vector<std::string>& named_keys);

}  // namespace strata::broker::handlers
