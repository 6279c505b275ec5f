// SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka speaks them inside
// SaslAuthenticate: credentials (salt, iterations, stored key, server key — never the password),
// the server's two steps and the client's two steps. Both sides live here because both the broker
// and the client library need them. Crypto is OpenSSL's (PBKDF2, HMAC, SHA-2); proofs are compared
// in constant time. No channel binding (gs2 "n" or "y" only, as Kafka). Extensions in the client's
// first message are accepted and ignored except `tokenauth`, which is refused (no delegation
// tokens). Value types; a ScramServer or ScramClient is one exchange, one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/base/result.h"

namespace strata::protocol::sasl {

enum class ScramMechanism { sha256, sha512 };

// "SCRAM-SHA-256" / "SCRAM-SHA-512"; nullopt for anything else.
std::optional<ScramMechanism> scram_mechanism(std::string_view name);
const char* scram_mechanism_name(ScramMechanism m);
constexpr int kScramMinIterations = 4096;  // Kafka's minimum
// Kafka's maximum; a server asking for more would make the client burn CPU for it.
constexpr int kScramMaxIterations = 16384;

struct ScramCredential {
  std::string salt;  // raw bytes
  std::string stored_key;
  std::string server_key;
  int32_t iterations = kScramMinIterations;
  bool operator==(const ScramCredential&) const = default;
};

// Derives a credential from a password (a random salt unless one is given).
Result<ScramCredential> make_scram_credential(ScramMechanism m, std::string_view password,
                                              int32_t iterations, std::string salt = {});
// SaltedPassword := Hi(password, salt, i), PBKDF2 with the mechanism's HMAC (RFC 5802): what a
// client sends in AlterUserScramCredentials, so the password never leaves it.
Result<std::string> scram_salted_password(ScramMechanism m, std::string_view password,
                                          std::string_view salt, int32_t iterations);
// The credential a broker keeps for a salted password: StoredKey := H(HMAC(salted, "Client Key")),
// ServerKey := HMAC(salted, "Server Key") (Kafka's ScramFormatter, as its controller derives them
// from an AlterUserScramCredentials upsertion).
ScramCredential scram_credential_from_salted(ScramMechanism m, std::string_view salted_password,
                                             std::string salt, int32_t iterations);
// 32 random bytes (a fresh salt).
Result<std::string> scram_random_salt();

// The broker's side of one exchange.
class ScramServer {
 public:
  using Lookup = std::function<std::optional<ScramCredential>(const std::string& user)>;
  // `nonce` fixes the server nonce (tests); empty = 32 random bytes, base64.
  ScramServer(ScramMechanism m, Lookup lookup, std::string nonce = {});

  // client-first-message → server-first-message.
  Result<std::string> first(std::string_view client_first);
  // client-final-message → server-final-message. A wrong proof fails (the caller answers
  // SASL_AUTHENTICATION_FAILED); the failure message never says which part was wrong.
  Result<std::string> final(std::string_view client_final);

  bool complete() const { return complete_; }
  const std::string& user() const { return user_; }  // valid once complete

 private:
  ScramMechanism m_;
  Lookup lookup_;
  std::string server_nonce_;
  int state_ = 0;
  bool complete_ = false;
  std::string user_;
  std::string gs2_header_;
  std::string client_first_bare_;
  std::string server_first_;
  std::string nonce_;
  ScramCredential cred_;
};

// The client's side (the C++ client library, the CLI, tests).
class ScramClient {
 public:
  ScramClient(ScramMechanism m, std::string user, std::string password, std::string nonce = {});
  std::string first();
  Result<std::string> final(std::string_view server_first);
  // Checks the server's signature (the server knew the credential).
  Status verify(std::string_view server_final) const;

 private:
  ScramMechanism m_;
  std::string user_;
  std::string password_;
  std::string nonce_;
  std::string client_first_bare_;
  std::string expected_server_signature_;
};

// SASL/PLAIN (RFC 4616): "[authzid] NUL authcid NUL passwd". An authzid, when present, must equal
// the authcid (Kafka's rule). invalid_argument on anything else.
struct PlainCredentials {
  std::string user;
  std::string password;
};
Result<PlainCredentials> parse_plain(std::string_view message);

// Constant-time equality of two byte strings (lengths are not secret).
bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace strata::protocol::sasl
