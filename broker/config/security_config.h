// The broker's security keys, with Kafka's names: listener.security.protocol.map, the ssl.* keys
// of TLS listeners, the SASL keys, and Kafka's per-listener overrides
// `listener.name.<listener>.<key>` (the listener's name in lower case, e.g.
// `listener.name.sasl_ssl.ssl.keystore.location`, or with a mechanism in lower case for JAAS:
// `listener.name.sasl_ssl.plain.sasl.jaas.config`). The keys live in the broker's one key table
// (config.cc calls add_security_keys); the TLS keys are validated there and read per listener
// with listener_value(), so one broker can serve two TLS listeners with different certificates.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "broker/config/config.h"
#include "protocol/client/connection.h"

namespace strata::broker {

void add_security_keys(KeyTable<BrokerConfig>& t);
// metrics.ssl.* (HTTPS on metrics.listener) and metrics.basic.auth.*; docs/security.md.
void add_metrics_security_keys(KeyTable<BrokerConfig>& t);
// schema.registry.ssl.* (an https:// schema.registry.listener) and
// schema.registry.authentication.method; docs/schema-registry.md.
void add_registry_security_keys(KeyTable<BrokerConfig>& t);
// Across the metrics keys: basic auth needs both user and password (or neither).
Status check_metrics_security(const BrokerConfig& c);

std::optional<SecurityProtocol> parse_security_protocol(std::string_view name);
const char* security_protocol_name(SecurityProtocol p);

// `key` is "listener.name.<listener>.<suffix>": checks that the suffix may be set per listener
// (an ssl.* key, sasl.enabled.mechanisms, connections.max.reauth.ms, or
// <mechanism>.sasl.jaas.config) and that the value passes that key's check.
Status check_listener_override(const std::string& key, const std::string& value);
inline bool is_listener_override(std::string_view key) { return key.starts_with("listener.name."); }

// Whether `key` is "listener.name.<listener>.<suffix>" with a suffix AlterConfigs may change
// while the listener runs (its ssl.keystore.* / ssl.key.password / ssl.truststore.* keys, as
// Kafka's dynamic listener SSL update); sets *listener to the name as written (lower case).
bool is_reloadable_listener_key(std::string_view key, std::string* listener = nullptr);
// The key-table entry of a per-listener override's suffix (type, doc, flags); null when `key` is
// not a valid listener override name.
const BrokerKeyDef* listener_override_def(std::string_view key);

// The value of `key` for `listener`: its listener.name override when set, else the broker-wide
// value ("" when neither exists).
std::string listener_value(const BrokerConfig& c, const std::string& listener,
                           const std::string& key);

// Sets each listener's (and advertised listener's) protocol from listener.security.protocol.map;
// a name the map lacks is an error, as in Kafka.
Status resolve_listener_protocols(BrokerConfig& c);

// inter.broker.listener.name, else the first listener of security.inter.broker.protocol, else
// the first listener.
std::string inter_broker_listener(const BrokerConfig& c);

// How this broker connects to the others, as a client of their inter-broker listener: its
// protocol; TLS trusting ssl.truststore.location and presenting ssl.keystore.location (mTLS
// when the listener requires it); SASL with sasl.mechanism.inter.broker.protocol and the
// `username`/`password` options of that listener's JAAS config for the mechanism.
Result<client::ClientSecurity> inter_broker_client_security(const BrokerConfig& c);

// The SASL mechanisms a listener enables (sasl.enabled.mechanisms, upper case as written).
std::vector<std::string> listener_mechanisms(const BrokerConfig& c, const std::string& listener);

}  // namespace strata::broker
