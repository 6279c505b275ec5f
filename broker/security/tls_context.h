// Server-side TLS for a listener, from its ssl.* keys (listener_value, so
// listener.name.<l>.ssl.* overrides apply): PEM key store (a file holding key + chain, or the
// two as PEM text), PEM trust store for client certificates, ssl.client.auth, the enabled TLS
// versions and cipher suites (IANA names, translated to OpenSSL's), and the mTLS principal
// mapping. Errors name the key at fault; nothing here keeps state after the call.
#pragma once

#include <memory>
#include <string>

#include "broker/config/config.h"
#include "broker/net/asio_ssl.h"
#include "broker/net/listener_security.h"
#include "protocol/base/result.h"

namespace strata::broker::security {

Result<std::shared_ptr<boost::asio::ssl::context>> make_server_tls_context(
    const BrokerConfig& config, const std::string& listener);

// The ListenerSecurity of one configured listener (its TLS context built when it is TLS).
Result<ListenerSecurity> listener_security(const BrokerConfig& config, const Listener& listener);

}  // namespace strata::broker::security
