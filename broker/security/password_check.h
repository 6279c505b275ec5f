// Checks a user's password against the broker's SCRAM credentials (the users Kafka clients log
// in with: sasl.scram.bootstrap.users, AlterUserScramCredentials), for logins that send the
// password itself — SASL/PLAIN of a user the JAAS config does not name, and HTTP basic auth on
// the Schema Registry. The password derives the salted key (PBKDF2 with the credential's salt and
// iterations, SHA-512's credential first) whose stored key must equal the credential's, compared
// in constant time.
//
// PBKDF2 with 4096 iterations costs milliseconds, and HTTP clients send the password with every
// request, so a match is remembered: the digest of (user, password, salt, iterations) → the stored
// key it derived. A remembered match counts only while the credential still has that stored key,
// so a changed or deleted credential takes effect at once. Failures are never remembered (a
// guess always pays the full derivation), and an unknown user pays it too (the time taken does
// not tell which users exist). At most kMaxRemembered entries; past it the table
// starts over. Thread-safe.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "broker/security/security_services.h"

namespace strata::broker::security {

class PasswordCheck {
 public:
  static constexpr size_t kMaxRemembered = 4096;
  // `credentials` may be null (no user matches); it outlives the check.
  explicit PasswordCheck(const CredentialStore* credentials) : credentials_(credentials) {}

  bool matches(const std::string& user, std::string_view password) const;
  size_t derivations() const;  // PBKDF2 runs so far (tests: a remembered match runs none)

 private:
  const CredentialStore* credentials_;
  mutable std::mutex mu_;
  mutable std::unordered_map<std::string, std::string> remembered_;  // digest → stored key
  mutable size_t derivations_ = 0;
};

}  // namespace strata::broker::security
