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
// starts over.
//
// Derivations run one at a time in the process (every PasswordCheck shares the turn), and at
// most `max_waiting` checks wait for it; one beyond fails at once (counted in busy_refusals,
// logged at most once a second). So a flood of wrong passwords — each a full derivation, on
// whatever thread checks it (a registry HTTP thread, a Kafka I/O thread) — takes at most one
// core, where before every such thread could derive at once. The thread waits while it waits:
// the registry therefore answers remembered logins on its connection threads (remembered()) and
// derives on a thread of its own, so a flood holds no remembered client; a Kafka I/O thread
// doing SASL/PLAIN still waits with the other connections it serves. With today's callers (the
// registry's auth thread, the Kafka I/O threads) the queue bound is a backstop. A
// credential changed while a check waited decides by its new value. Thread-safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "broker/security/security_services.h"

namespace strata::broker::security {

class PasswordCheck {
 public:
  static constexpr size_t kMaxRemembered = 4096;
  static constexpr size_t kMaxWaiting = 8;
  // `credentials` may be null (no user matches); it outlives the check.
  explicit PasswordCheck(const CredentialStore* credentials, size_t max_waiting = kMaxWaiting)
      : credentials_(credentials), max_waiting_(max_waiting) {}

  bool matches(const std::string& user, std::string_view password) const;
  // matches() when it needs no derivation — a remembered login of the user's current credential
  // — else nullopt (a first login, a wrong password, an unknown user). Never waits for the turn.
  std::optional<bool> remembered(const std::string& user, std::string_view password) const;
  size_t derivations() const;    // PBKDF2 runs so far (tests: a remembered match runs none)
  size_t busy_refusals() const;  // checks failed without a derivation: too many waiting

 private:
  // A derivation's turn (the process-wide derivation lock held while it lives); none when too
  // many checks already derive or wait.
  class Turn {
   public:
    explicit Turn(const PasswordCheck& c);
    ~Turn();
    explicit operator bool() const { return lock_.owns_lock(); }

   private:
    const PasswordCheck& c_;
    std::unique_lock<std::mutex> lock_;
  };

  const CredentialStore* credentials_;
  const size_t max_waiting_;
  mutable std::atomic<size_t> busy_refusals_{0};
  mutable std::atomic<int64_t> last_busy_log_ms_{0};
  mutable std::mutex mu_;
  mutable std::unordered_map<std::string, std::string> remembered_;  // digest → stored key
  mutable size_t derivations_ = 0;
};

}  // namespace strata::broker::security
