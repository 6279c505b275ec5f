// See password_check.h.
#include "broker/security/password_check.h"

#include <openssl/sha.h>

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

}  // namespace

bool PasswordCheck::matches(const std::string& user, std::string_view password) const {
  if (credentials_ == nullptr) return false;
  for (auto m : {sasl::ScramMechanism::sha512, sasl::ScramMechanism::sha256}) {
    auto cred = credentials_->scram(m, user);
    if (!cred) continue;
    const std::string key = digest_of(user, password, *cred, m);
    {
      std::lock_guard lk(mu_);
      auto it = remembered_.find(key);
      if (it != remembered_.end()) return sasl::constant_time_equal(it->second, cred->stored_key);
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
  {
    std::lock_guard lk(mu_);
    ++derivations_;
  }
  (void)sasl::make_scram_credential(sasl::ScramMechanism::sha512, password,
                                    sasl::kScramMinIterations, "strata-no-such-user");
  return false;
}

size_t PasswordCheck::derivations() const {
  std::lock_guard lk(mu_);
  return derivations_;
}

}  // namespace strata::broker::security
