// Server-side TLS, from a listener's ssl.* keys (listener_value, so listener.name.<l>.ssl.*
// overrides apply) or from an HTTP endpoint's prefixed keys (metrics.ssl.*): PEM key store (a
// file holding key + chain, or the two as PEM text), PEM trust store for client certificates,
// ssl.client.auth, the enabled TLS versions and cipher suites (IANA names, translated to
// OpenSSL's), and the mTLS principal mapping. Errors name the key at fault; nothing here keeps
// state after the call.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "broker/config/config.h"
#include "broker/net/asio_ssl.h"
#include "broker/net/listener_security.h"
#include "protocol/base/result.h"

namespace strata::broker::security {

// Where a server context's keys come from. value("ssl.keystore.location") etc. gives a key's
// value ("" = unset); name(key) is how error messages call it (null: the key as asked); every
// message starts with `who`.
struct TlsKeySource {
  std::string who;
  std::function<std::string(const std::string& key)> value;
  std::function<std::string(const std::string& key)> name;
};
Result<std::shared_ptr<boost::asio::ssl::context>> make_server_tls_context(
    const TlsKeySource& keys);

// The client side of an HTTP endpoint's `<prefix>ssl.*` keys, for a broker reaching another
// broker's endpoint configured alike (the Schema Registry forwarding to its writer): trusts
// `<prefix>ssl.truststore.*` (else the system's CAs) and presents `<prefix>ssl.keystore.*` when
// set (for endpoints that require client certificates).
Result<std::shared_ptr<boost::asio::ssl::context>> make_prefixed_client_tls_context(
    const BrokerConfig& config, const std::string& prefix, const std::string& who);

// A listener's context (listener.name.<l>.ssl.* over ssl.*); messages start "listener <l>".
Result<std::shared_ptr<boost::asio::ssl::context>> make_server_tls_context(
    const BrokerConfig& config, const std::string& listener);

// The context of an HTTP endpoint configured with its own `<prefix>ssl.*` keys (metrics.ssl.*;
// schema.registry.ssl.*): every ssl.* key the table defines under the prefix,
// except ssl.enabled.protocols and ssl.cipher.suites, which are the broker-wide ones when the
// prefix has none. Keys the prefix lacks are unset. Messages start with `who` and name the
// prefixed key.
Result<std::shared_ptr<boost::asio::ssl::context>> make_prefixed_tls_context(
    const BrokerConfig& config, const std::string& prefix, const std::string& who);

// The ListenerSecurity of one configured listener (its TLS context built when it is TLS).
Result<ListenerSecurity> listener_security(const BrokerConfig& config, const Listener& listener);

}  // namespace strata::broker::security
