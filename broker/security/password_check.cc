// See password_check.h.
#include "broker/security/password_check.h"

#include <openssl/sha.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <optional>

#include "protocol/sasl/scram.h"

namespace strata::broker::security {

namespace sasl = protocol::sasl;

namespace {

// Fields length-prefixed, so no two inputs share a digest.
std::string digest_of(const std::string& user, std::string_view password,
                      const sasl::ScramCredential& cred, sasl::ScramMechanism m) {
  std::string in;
  for (std::string_view part :
       {std::string_view(user), password, std::string_view(cred.salt),
        std::string_view(m == sasl::ScramMechanism::sha512 ? "512" : "256")}) {
    in += std::to_string(part.size());
    in += ':';
    in += part;
  }
  in += std::to_string(cred.iterations);
  unsigned char d[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(in.data()), in.size(), d);
  return std::string(reinterpret_cast<const char*>(d), sizeof(d));
}

// One derivation at a time in the process, whichever check asks (the registry's and the SASL
// authenticator's are separate instances): a flood on both still takes one core.
std::mutex derive_mu;
std::atomic<size_t> queued{0};  // checks deriving or waiting to

}  // namespace

PasswordCheck::Turn::Turn(const PasswordCheck& c) : c_(c) {
  size_t q = queued.load();
  while (q <= c_.max_waiting_ && !queued.compare_exchange_weak(q, q + 1)) {
  }
  if (q > c_.max_waiting_) {
    const size_t refused = c_.busy_refusals_.fetch_add(1) + 1;
    const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now().time_since_epoch())
                            .count();
    int64_t last = c_.last_busy_log_ms_.load();
    if (now - last >= 1000 && c_.last_busy_log_ms_.compare_exchange_strong(last, now)) {
      spdlog::warn(
          "password checks: {} already waiting for a key derivation, a login refused without "
          "checking its password ({} so far): a flood of failing logins?",
          c_.max_waiting_, refused);
    }
    return;
  }
  lock_ = std::unique_lock(derive_mu);
}

PasswordCheck::Turn::~Turn() {
  if (!lock_.owns_lock()) return;  // refused: never counted
  lock_.unlock();
  queued.fetch_sub(1);
}

bool PasswordCheck::matches(const std::string& user, std::string_view password) const {
  if (credentials_ == nullptr) return false;
  for (auto m : {sasl::ScramMechanism::sha512, sasl::ScramMechanism::sha256}) {
    auto cred = credentials_->scram(m, user);
    if (!cred) continue;
    std::string key = digest_of(user, password, *cred, m);
    auto remembered = [&]() -> std::optional<bool> {
      std::lock_guard lk(mu_);
      auto it = remembered_.find(key);
      if (it != remembered_.end()) return sasl::constant_time_equal(it->second, cred->stored_key);
      return std::nullopt;
    };
    if (auto r = remembered()) return *r;
    Turn turn(*this);
    if (!turn) return false;
    // The credential may have changed or gone while this check waited: the current one decides.
    cred = credentials_->scram(m, user);
    if (!cred) return false;
    key = digest_of(user, password, *cred, m);
    // A client's concurrent first requests: the one that derived first has remembered it.
    if (auto r = remembered()) return *r;
    {
      std::lock_guard lk(mu_);
      ++derivations_;
    }
    auto derived = sasl::make_scram_credential(m, password, cred->iterations, cred->salt);
    const bool ok =
        derived.ok() && sasl::constant_time_equal(derived->stored_key, cred->stored_key);
    if (ok) {
      std::lock_guard lk(mu_);
      if (remembered_.size() >= kMaxRemembered) remembered_.clear();
      remembered_[key] = cred->stored_key;
    }
    return ok;  // the strongest mechanism the user has decides
  }
  // An unknown user costs what a wrong password costs, so the time taken does not tell which
  // users exist.
  Turn turn(*this);
  if (!turn) return false;
  {
    std::lock_guard lk(mu_);
    ++derivations_;
  }
  (void)sasl::make_scram_credential(sasl::ScramMechanism::sha512, password,
                                    sasl::kScramMinIterations, "strata-no-such-user");
  return false;
}

std::optional<bool> PasswordCheck::remembered(const std::string& user,
                                              std::string_view password) const {
  if (credentials_ == nullptr) return false;
  for (auto m : {sasl::ScramMechanism::sha512, sasl::ScramMechanism::sha256}) {
    auto cred = credentials_->scram(m, user);
    if (!cred) continue;
    const std::string key = digest_of(user, password, *cred, m);
    std::lock_guard lk(mu_);
    auto it = remembered_.find(key);
    if (it == remembered_.end()) return std::nullopt;
    return sasl::constant_time_equal(it->second, cred->stored_key);  // as matches() decides
  }
  return std::nullopt;  // an unknown user pays a derivation, as a wrong password does
}

size_t PasswordCheck::busy_refusals() const { return busy_refusals_.load(); }

size_t PasswordCheck::derivations() const {
  std::lock_guard lk(mu_);
  return derivations_;
}

}  // namespace strata::broker::security
