#include "broker/security/sasl_authenticator.h"

#include <algorithm>

#include "broker/config/security_config.h"
#include "protocol/sasl/scram.h"

namespace strata::broker::security {

namespace sasl = protocol::sasl;

namespace {

class Exchange : public SaslExchange {
 public:
  virtual SaslStep step(std::string_view token) = 0;
};

SaslStep failed() {
  SaslStep s;
  s.failed = true;
  return s;
}

class PlainExchange : public Exchange {
 public:
  PlainExchange(const std::optional<protocol::sasl::JaasConfig>* jaas,
                const PasswordCheck* passwords)
      : jaas_(jaas), passwords_(passwords) {}

  SaslStep step(std::string_view token) override {
    if (done_) return failed();
    done_ = true;
    auto creds = sasl::parse_plain(token);
    if (!creds.ok() || creds->user.empty()) return failed();
    bool ok = false;
    if (jaas_->has_value()) {
      if (auto pw = (*jaas_)->plain_password(creds->user)) {
        ok = sasl::constant_time_equal(*pw, creds->password);
      } else {
        ok = scram_user(creds->user, creds->password);
      }
    } else {
      ok = scram_user(creds->user, creds->password);
    }
    if (!ok) return failed();
    SaslStep s;
    s.complete = true;
    s.user = creds->user;
    return s;
  }

 private:
  bool scram_user(const std::string& user, std::string_view password) const {
    return passwords_->matches(user, password);
  }

  const std::optional<protocol::sasl::JaasConfig>* jaas_;
  const PasswordCheck* passwords_;
  bool done_ = false;
};

class ScramExchange : public Exchange {
 public:
  ScramExchange(sasl::ScramMechanism m, const CredentialStore* credentials)
      : server_(m,
                [m, credentials](const std::string& user) -> std::optional<sasl::ScramCredential> {
                  if (!credentials) return std::nullopt;
                  return credentials->scram(m, user);
                }) {}

  SaslStep step(std::string_view token) override {
    auto r = step_ == 0 ? server_.first(token) : server_.final(token);
    ++step_;
    if (!r.ok()) return failed();
    SaslStep s;
    s.response = std::move(*r);
    if (server_.complete()) {
      s.complete = true;
      s.user = server_.user();
    }
    return s;
  }

 private:
  sasl::ScramServer server_;
  int step_ = 0;
};

}  // namespace

Result<std::unique_ptr<SaslAuthenticator>> SaslAuthenticator::create(
    const BrokerConfig& config, const CredentialStore* credentials) {
  auto a = std::unique_ptr<SaslAuthenticator>(new SaslAuthenticator());
  a->credentials_ = credentials;
  a->passwords_ = std::make_unique<PasswordCheck>(credentials);
  for (const auto& l : config.listeners) {
    if (!uses_sasl(l.protocol)) continue;
    PerListener p;
    p.mechanisms = listener_mechanisms(config, l.name);
    p.max_reauth_ms = 0;
    const std::string reauth = listener_value(config, l.name, "connections.max.reauth.ms");
    if (!reauth.empty()) p.max_reauth_ms = std::stoll(reauth);  // checked by the key table
    std::string jaas = listener_value(config, l.name, "plain.sasl.jaas.config");
    if (jaas.empty()) jaas = listener_value(config, l.name, "sasl.jaas.config");
    if (!jaas.empty()) {
      auto parsed = sasl::parse_jaas(jaas);
      if (!parsed.ok()) {
        return Status(Errc::invalid_argument,
                      "listener " + l.name + ": " + parsed.status().message());
      }
      p.plain_jaas = std::move(*parsed);
    }
    a->listeners_[l.name] = std::move(p);
  }
  return a;
}

const SaslAuthenticator::PerListener& SaslAuthenticator::listener(const std::string& name) const {
  auto it = listeners_.find(name);
  return it == listeners_.end() ? none_ : it->second;
}

const std::vector<std::string>& SaslAuthenticator::mechanisms(const std::string& l) const {
  return listener(l).mechanisms;
}

bool SaslAuthenticator::enabled(const std::string& l, const std::string& mechanism) const {
  const auto& m = listener(l).mechanisms;
  return std::find(m.begin(), m.end(), mechanism) != m.end();
}

std::unique_ptr<SaslExchange> SaslAuthenticator::start(const std::string& l,
                                                       const std::string& mechanism) const {
  if (!enabled(l, mechanism)) return nullptr;
  if (mechanism == "PLAIN") {
    return std::make_unique<PlainExchange>(&listener(l).plain_jaas, passwords_.get());
  }
  if (auto m = sasl::scram_mechanism(mechanism)) {
    return std::make_unique<ScramExchange>(*m, credentials_);
  }
  return nullptr;
}

SaslStep SaslAuthenticator::step(SaslExchange& exchange, std::string_view token) const {
  auto* e = dynamic_cast<Exchange*>(&exchange);
  if (!e) return failed();
  return e->step(token);
}

int64_t SaslAuthenticator::max_reauth_ms(const std::string& l) const {
  return listener(l).max_reauth_ms;
}

}  // namespace strata::broker::security
