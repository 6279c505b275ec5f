// The broker's SASL server: which mechanisms a listener enables, and one exchange per
// connection for each of them.
//  - PLAIN (RFC 4616): the user's password is the JAAS config's `user_<name>` option of the
//    listener (listener.name.<l>.plain.sasl.jaas.config, else sasl.jaas.config); a user the JAAS
//    config does not name is checked against its SCRAM credential (SHA-512, then SHA-256) by
//    deriving the salted key from the given password (password_check.h), so SCRAM users can log
//    in with PLAIN too (over TLS, one hopes).
//  - SCRAM-SHA-256 / SCRAM-SHA-512 (protocol/sasl/scram.h) against the CredentialStore.
// Every comparison of secrets is constant-time. Built once at start-up from the config (a bad
// JAAS text stops the start); immutable afterwards, so any thread may use it. An exchange
// belongs to one connection (its strand).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "broker/config/config.h"
#include "broker/net/session.h"
#include "broker/security/password_check.h"
#include "broker/security/security_services.h"
#include "protocol/base/result.h"
#include "protocol/sasl/jaas.h"

namespace strata::broker::security {

struct SaslStep {
  bool failed = false;
  std::string response;  // the token to send back (challenge, or the final server message)
  bool complete = false;
  std::string user;  // valid once complete
};

class SaslAuthenticator {
 public:
  // `credentials` may be null (no SCRAM users) and must outlive the authenticator.
  static Result<std::unique_ptr<SaslAuthenticator>> create(const BrokerConfig& config,
                                                           const CredentialStore* credentials);

  // The mechanisms `listener` enables (upper case, as configured).
  const std::vector<std::string>& mechanisms(const std::string& listener) const;
  bool enabled(const std::string& listener, const std::string& mechanism) const;
  // A fresh exchange of `mechanism` (enabled on `listener`).
  std::unique_ptr<SaslExchange> start(const std::string& listener,
                                      const std::string& mechanism) const;
  // Feeds one client token to the exchange.
  SaslStep step(SaslExchange& exchange, std::string_view token) const;
  // connections.max.reauth.ms of `listener` (0 = sessions never expire).
  int64_t max_reauth_ms(const std::string& listener) const;

 private:
  struct PerListener {
    std::vector<std::string> mechanisms;
    std::optional<protocol::sasl::JaasConfig> plain_jaas;
    int64_t max_reauth_ms = 0;
  };
  const PerListener& listener(const std::string& name) const;

  const CredentialStore* credentials_ = nullptr;
  std::unique_ptr<PasswordCheck> passwords_;  // PLAIN logins of SCRAM users
  std::map<std::string, PerListener> listeners_;
  PerListener none_;
};

}  // namespace strata::broker::security
