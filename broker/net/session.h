// Who is at the other end of one connection: the listener it came in on, its security protocol,
// and the principal it authenticated as (Kafka's KafkaPrincipal, "User:name"). Owned by the
// Connection and touched only where its request handlers run — its strand, or the blocking pool
// while the connection waits for that handler (Dispatcher) — so SaslHandshake and
// SaslAuthenticate (on the strand) change it in place and every later request sees the result.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "broker/config/config.h"

namespace strata::broker {

inline constexpr const char* kAnonymousPrincipal = "User:ANONYMOUS";

// One SASL exchange in progress (the mechanism's server state); defined by the security layer.
class SaslExchange {
 public:
  virtual ~SaslExchange() = default;
};

struct Session {
  std::string listener;  // the listener's name, e.g. "PLAINTEXT" or "CLIENT"
  SecurityProtocol protocol = SecurityProtocol::plaintext;
  std::string principal = kAnonymousPrincipal;
  std::string host;  // the peer's IP address, matched against an ACL's host
  // SASL listeners: what the connection may send next. Until `authenticated`, only ApiVersions,
  // SaslHandshake and (after a handshake) SaslAuthenticate are served.
  enum class Sasl : uint8_t {
    not_used,       // PLAINTEXT / SSL listener
    handshake,      // waiting for SaslHandshake
    authenticate,   // handshake v1+ done: SaslAuthenticate frames carry the tokens
    raw_token,      // handshake v0 done: the next frames are bare SASL tokens (no Kafka header)
    authenticated,  // done; principal is set
  };
  Sasl sasl = Sasl::not_used;
  std::string mechanism;                   // the one SaslHandshake chose
  std::unique_ptr<SaslExchange> exchange;  // the mechanism's state between tokens
  bool sasl_reauthenticating = false;      // a KIP-368 re-authentication is under way
  // Steady-clock ms after which the session must re-authenticate (KIP-368); 0 = never.
  int64_t session_expires_ms = 0;

  bool authenticated() const { return sasl == Sasl::not_used || sasl == Sasl::authenticated; }
};

}  // namespace strata::broker
